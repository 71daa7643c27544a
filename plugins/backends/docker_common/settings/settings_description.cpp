// The Docker backends' description of their settings (settings_description.hpp).
#include "docker_common/settings/settings_description.hpp"

#include <nlohmann/json.hpp>

#include "docker_common/parts/egress_policy.hpp"
#include "docker_common/settings/docker_settings.hpp"

namespace execmcp::plugins::docker_common {
namespace {

std::string text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string list(const nlohmann::json* value) {
  std::string out;
  if (value == nullptr || !value->is_array()) return out;
  for (const auto& item : *value) out += (out.empty() ? "" : ", ") + text(item);
  return out;
}

}  // namespace

void describe_docker_settings(const std::string& settings_json, std::vector<std::string>& lines) {
  const auto settings = nlohmann::json::parse(settings_json, nullptr, false);
  if (!settings.is_object() || settings.contains("container")) return;  // attach mode
  if (settings.contains("runtime")) lines.push_back("runtime: " + text(settings.at("runtime")));
  // Unset keys: the settings' own defaults.
  const std::string network =
      settings.contains("network") ? text(settings.at("network")) : DockerSettings{}.network;
  if (network == "none") {
    lines.push_back("network: none (no network)");
    return;
  }
  const auto egress = settings.value("egress", nlohmann::json::object());
  if (network != "egress" || !egress.is_object()) {
    lines.push_back("network: " + network);
    return;
  }
  const auto find = [&](const char* key) {
    const auto it = egress.find(key);
    return it == egress.end() ? nullptr : &*it;
  };
  const EgressPolicy defaults;
  std::string default_ports;
  for (const auto port : defaults.ports)
    default_ports += (default_ports.empty() ? "" : ", ") + std::to_string(port);
  const auto* ports = find("ports");
  const auto* upstream = find("upstream_network");
  lines.push_back("network: egress, only through the agent's own proxy, to: " +
                  list(find("allow")) + "; ports " + (ports ? list(ports) : default_ports) +
                  "; upstream network " + (upstream ? text(*upstream) : defaults.upstream_network));
}

}  // namespace execmcp::plugins::docker_common
