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

// One line per secret (names and hosts, never a value: the settings hold none), and the
// upstream roots.
void describe_secrets(const nlohmann::json* secrets, const nlohmann::json* upstream_ca,
                      std::vector<std::string>& lines) {
  if (secrets != nullptr && secrets->is_array()) {
    for (const auto& secret : *secrets) {
      if (!secret.is_object()) continue;
      const auto field = [&](const char* key) {
        const auto it = secret.find(key);
        return it == secret.end() ? nullptr : &*it;
      };
      std::string limits;
      const auto add = [&](const std::string& part) {
        limits += (limits.empty() ? "" : "; ") + part;
      };
      if (const auto* header = field("header")) add("header " + text(*header));
      if (const auto* methods = field("methods")) add("methods " + list(methods));
      if (const auto* paths = field("paths")) add("paths " + list(paths));
      if (const auto* plain = field("plain_http"); plain && *plain == true) add("also plain HTTP");
      const auto* name = field("name");
      const auto* from = field("from");
      lines.push_back("egress secret " + (name ? text(*name) : std::string("?")) + " (from " +
                      (from ? text(*from) : std::string("?")) +
                      "): the sandbox holds a placeholder; the proxy puts the value into "
                      "requests to " +
                      list(field("hosts")) + (limits.empty() ? "" : " (" + limits + ")") +
                      " only, over TLS it intercepts with the agent's own CA");
    }
  }
  if (upstream_ca != nullptr)
    lines.push_back("egress upstream roots: " + text(*upstream_ca) +
                    " (trusted beside the system's for the intercepted hosts)");
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
  describe_secrets(find("secrets"), find("upstream_ca"), lines);
}

}  // namespace execmcp::plugins::docker_common
