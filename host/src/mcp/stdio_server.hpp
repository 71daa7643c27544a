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
  // At end of input, let the calls already received run to completion and answer them, instead of
  // cancelling them (MCP's shutdown). SIGINT/SIGTERM still cancel everything.
  bool finish_calls_on_eof = false;
};

// Serves MCP on stdin/stdout for `agent` until EOF on stdin or SIGINT/SIGTERM; then cancels the
// running commands (at EOF with finish_calls_on_eof: lets them finish), answers them if stdout is
// still open, joins every thread and returns the process exit code (0). SIGPIPE does not kill the
// process (a write error ends serving).
int serve_stdio(Agent& agent, const ServerOptions& options);

}  // namespace execmcp::host::mcp
