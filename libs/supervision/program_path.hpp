// Where a plugin finds the programs installed with it (execmcp-supervisor, execmcp-runner).
#pragma once

#include <string>
#include <string_view>

namespace execmcp::plugins::supervision {

// `<dir of the plugin .so that calls this>/../<name>`: lib/execmcp/ in the build and install
// trees. Just `name` when the plugin's path cannot be found.
std::string program_beside_plugin(std::string_view name);

}  // namespace execmcp::plugins::supervision
