// serve --http: the shared server's assembly (auth, the MCP endpoint, the HTTP server, signals).
#pragma once

#include "agent/agent_registry.hpp"
#include "config/config.hpp"
#include "server/serve_options.hpp"

namespace execmcp::host::server {

// Serves every agent of the registry over MCP Streamable HTTP until SIGINT/SIGTERM, then stops
// accepting, cancels the calls in flight, lets their answers out for a short grace and returns 0.
// Stopping the agents is the caller's. Throws std::runtime_error (a plain message) when it cannot
// start: a bad address, TLS files, keys, or no authentication on an address other machines can
// reach (without --insecure-no-auth).
int serve_http(const Config& config, AgentRegistry& agents, const ServeOptions& options);

}  // namespace execmcp::host::server
