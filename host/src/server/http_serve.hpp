// serve --http: the shared server's assembly (auth, the MCP endpoint, the HTTP server, signals).
#pragma once

#include <vector>

#include "agent/configured_agent.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"

namespace execmcp::host::server {

// Serves every agent over MCP Streamable HTTP until SIGINT/SIGTERM, then stops accepting,
// cancels the calls in flight, lets their answers out for a short grace and returns 0. Throws
// std::runtime_error (a plain message) when it cannot start: a bad address, TLS files, keys, or
// no authentication on an address other machines can reach (without --insecure-no-auth).
int serve_http(const Config& config, const std::vector<ConfiguredAgent*>& agents,
               const cli::ServeRequest& request);

}  // namespace execmcp::host::server
