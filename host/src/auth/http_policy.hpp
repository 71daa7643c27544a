// A server-wide rule of the shared HTTP server that the config decides: whether agents on the
// local backend may be served at all. (Which browser Origins may call it is the HTTP server's
// OriginPolicy, fed with server.allowed_origins.)
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace execmcp::host::auth {

// Empty when every agent in `served` (ids; empty means all of the config's agents) may be served
// over HTTP; otherwise the error to print before refusing to start, naming the local-backend
// agents and saying why and how to allow them (server.allow_local_agents: true).
std::string local_agents_refusal(const Config& config, const std::vector<std::string>& served);

}  // namespace execmcp::host::auth
