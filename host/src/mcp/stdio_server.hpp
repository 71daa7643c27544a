// Entry point: serve MCP over stdin/stdout for one agent until EOF or SIGINT/SIGTERM.
#pragma once

#include <cstddef>
#include <string>

#include "agent/agent.hpp"

namespace execmcp::host::mcp {

struct ServerOptions {
  std::string server_name = "execmcp";
  std::string server_version;
  std::size_t max_concurrent_calls = 8;
};

// Serves MCP on stdin/stdout for `agent` until EOF on stdin or SIGINT/SIGTERM; then cancels the
// running commands, answers them if stdout is still open, joins every thread and returns the
// process exit code (0). SIGPIPE does not kill the process (a write error ends serving).
int serve_stdio(Agent& agent, const ServerOptions& options);

}  // namespace execmcp::host::mcp
