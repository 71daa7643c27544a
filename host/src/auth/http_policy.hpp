// A server-wide rule of the shared HTTP server that the config decides: whether agents whose
// backend runs commands in no sandbox may be served at all. (Which browser Origins may call it is
// the HTTP server's OriginPolicy, fed with server.allowed_origins.)
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace execmcp::host::auth {

// Empty when the served agents in `not_isolated` (ids of agents whose backend's traits say
// isolated: false, as built: the backend's own word, never its plugin's name) may be served over
// HTTP; otherwise the error to print before serving, naming them and saying why and how to allow
// them (server.allow_local_agents: true).
std::string unisolated_agents_refusal(const Config& config,
                                      const std::vector<std::string>& not_isolated);

}  // namespace execmcp::host::auth
