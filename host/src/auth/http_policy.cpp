// The no-sandbox rule of the shared HTTP server.
#include "auth/http_policy.hpp"

namespace execmcp::host::auth {

std::string unisolated_agents_refusal(const Config& config,
                                      const std::vector<std::string>& not_isolated) {
  if (config.server && config.server->allow_local_agents) return {};
  std::string names;
  for (const auto& id : not_isolated)
    for (const auto& agent : config.agents)
      if (agent.id == id && agent.mcp_enabled)  // one without tools is never served
        names += (names.empty() ? "'" : ", '") + id + "' (backend '" + agent.backend.plugin + "')";
  if (names.empty()) return {};
  return config.source_file + ": agent(s) " + names +
         " run commands in no sandbox (the backend says it is not isolated; the local backend "
         "runs them as this server's own user): in a shared server they could read each other's "
         "workspaces, the config and its token files. Give them the docker-api backend, serve "
         "them over stdio, or set server.allow_local_agents: true if every caller is trusted with "
         "this user's files";
}

}  // namespace execmcp::host::auth
