// How `execmcp serve` serves, as parsed from its command line and handed to either server as is.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "transport/stdio/stdio_server.hpp"

namespace execmcp::host::server {

// serve --http's defaults for --max-concurrent and --max-queued-calls: one process for many
// agents needs more calls at once than one agent's stdio server (8 and 16).
inline constexpr std::size_t kHttpDefaultMaxConcurrent = 64;
inline constexpr std::size_t kHttpDefaultMaxQueued = 64;
inline constexpr std::size_t kHttpDefaultMaxRunningTasks = 64;

struct ServeOptions {
  // Every MCP session's, over stdio or HTTP: version, calls at once and waiting, message limits,
  // outbound bound, what end of input means (stdio).
  mcp::ServerOptions session;
  // serve --http ADDR:PORT (empty: stdio), checked for its form only; the server resolves it.
  std::string http_address;
  std::string tls_cert_file;  // both or neither
  std::string tls_key_file;
  bool insecure_no_auth = false;               // allow no credentials on a non-loopback address
  std::optional<std::size_t> max_connections;  // unset: the HTTP server's default
  std::size_t max_calls_per_agent = 0;         // 0: no limit of its own
};

}  // namespace execmcp::host::server
