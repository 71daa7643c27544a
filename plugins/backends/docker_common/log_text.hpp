// Bytes from a container or an engine on their way to a log: bounded and escaped, so that what a
// command writes can neither fill the host's disk through the log nor forge or garble its lines.
// (A runner's stderr is bounded per runner by runner_client/log_budget.hpp.)
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "execmcp/sdk/log_text.hpp"

namespace execmcp::plugins::docker_common {

// The most one untrusted field adds to a log line, and the most one log message holds.
inline constexpr std::size_t kLogFieldMax = 1024;
inline constexpr std::size_t kLogMessageMax = 16 * 1024;

// The SDK's log_text() (execmcp/sdk/log_text.hpp): every byte below 0x20, DEL, a C1 control and
// every byte that is not valid UTF-8 as \xNN; at most `max` (kLogFieldMax) bytes, then how many
// were not logged.
using sdk::log_text;

}  // namespace execmcp::plugins::docker_common
