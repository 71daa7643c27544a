// The local-backend rule of the shared HTTP server.
#include "auth/http_policy.hpp"

#include <algorithm>

namespace execmcp::host::auth {

std::string local_agents_refusal(const Config& config, const std::vector<std::string>& served) {
  if (config.server && config.server->allow_local_agents) return {};
  std::string names;
  for (const auto& agent : config.agents) {
    const bool is_served =
        served.empty() || std::find(served.begin(), served.end(), agent.id) != served.end();
    if (is_served && agent.mcp_enabled && agent.backend.plugin == "local")
      names += (names.empty() ? "'" : ", '") + agent.id + "'";
  }
  if (names.empty()) return {};
  return config.source_file + ": agent(s) " + names +
         " use the local backend, which runs commands as this server's own user: in a shared "
         "server they could read each other's workspaces, the config and its token files. Give "
         "them the docker-api backend, serve them over stdio, or set server.allow_local_agents: "
         "true if every caller is trusted with this user's files";
}

}  // namespace execmcp::host::auth
