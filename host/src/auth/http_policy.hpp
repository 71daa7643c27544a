// The server-wide rules of the shared HTTP server that the config decides: which browser Origins
// may call it, and whether agents on the local backend may be served at all.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace execmcp::host::auth {

// Whether a request with this Origin header may reach the server (answer 403 when not). No Origin
// (a client that is not a browser) is allowed; so are loopback origins (http or https, host
// localhost, 127.0.0.0/8 or [::1], any port) and server.allowed_origins (`server` may be null).
// Everything else, "null" included, is refused: this is what stops DNS rebinding.
bool origin_allowed(std::string_view origin, const ServerConfig* server);

// Empty when every agent in `served` (ids; empty means all of the config's agents) may be served
// over HTTP; otherwise the error to print before refusing to start, naming the local-backend
// agents and saying why and how to allow them (server.allow_local_agents: true).
std::string local_agents_refusal(const Config& config, const std::vector<std::string>& served);

}  // namespace execmcp::host::auth
