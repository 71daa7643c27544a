// Standard base64 (RFC 4648, with padding), for bytes that must travel as text: a file written
// through an engine connection that carries no input travels in a command's arguments.
#pragma once

#include <string>
#include <string_view>

namespace execmcp::plugins::docker_common {

std::string base64_encode(std::string_view bytes);

}  // namespace execmcp::plugins::docker_common
