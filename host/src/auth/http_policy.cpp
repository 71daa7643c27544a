// Origin checks and the local-backend rule of the shared HTTP server.
#include "auth/http_policy.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

namespace execmcp::host::auth {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_loopback_origin(const std::string& origin) {
  static const std::regex kLoopback(
      R"(https?://(localhost|127(\.(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])){3}|\[::1\])(:[0-9]{1,5})?)");
  return std::regex_match(origin, kLoopback);
}

}  // namespace

bool origin_allowed(std::string_view origin, const ServerConfig* server) {
  if (origin.empty()) return true;
  if (origin.size() > 512) return false;
  const std::string normalized = lower(origin);
  if (is_loopback_origin(normalized)) return true;
  if (server == nullptr) return false;
  return std::find(server->allowed_origins.begin(), server->allowed_origins.end(), normalized) !=
         server->allowed_origins.end();
}

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
