// Strict parsing of the docker-swarm backend's settings (swarm_settings.hpp).
#include "docker_swarm/swarm_settings.hpp"

#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "docker_common/settings/docker_settings.hpp"
#include "execmcp/plugins/plugin_settings/memory_limit.hpp"

namespace execmcp::plugins::docker_swarm {
namespace {

using Json = nlohmann::json;
using docker_common::SettingError;

[[noreturn]] void bad(const std::string& key, const std::string& expected) {
  throw SettingError(key, "expected " + expected);
}

std::string get_string(const Json& value, const std::string& key) {
  if (!value.is_string()) bad(key, "a string");
  return value.get<std::string>();
}

std::int64_t get_size(const Json& value, const std::string& key, bool none_allowed) {
  if (none_allowed && value.is_string() && value.get<std::string>() == "none") return 0;
  const std::string forms =
      std::string(plugin_settings::kMemoryLimitForms) + (none_allowed ? ", or \"none\"" : "");
  if (value.is_number_integer()) {
    if (value.get<std::int64_t>() <= 0) bad(key, forms);
    return value.get<std::int64_t>();
  }
  if (!value.is_string()) bad(key, forms);
  try {
    return plugin_settings::parse_memory_limit(value.get<std::string>());
  } catch (const std::invalid_argument& e) {
    throw SettingError(key, e.what());
  }
}

double get_cpus(const Json& value, const std::string& key) {
  if (!value.is_number()) bad(key, "a positive number of CPUs, e.g. 1.5");
  const double cpus = value.get<double>();
  if (!(cpus > 0.0) || !std::isfinite(cpus) || cpus > 1024.0)
    bad(key, "a positive number of CPUs, e.g. 1.5");
  return cpus;
}

// The Docker backends' settings this one refuses, and why.
const char* refused_reason(const std::string& key) {
  static const std::map<std::string, const char*> reasons = {
      {"exec_mode",
       "docker-swarm has no exec path: Swarm does not pass docker exec across nodes, so every "
       "command goes through the listening runner"},
      {"container",
       "attach mode needs docker exec into a container, which Swarm does not pass across nodes"},
      {"attach_accept_writable_context", "attach mode is not on docker-swarm"},
      {"preinstall",
       "preinstall builds an image on one engine; build the image with the packages "
       "and load it on every node"},
      {"preinstall_on_failure", "preinstall is not on docker-swarm"},
      {"egress", "network egress is not on docker-swarm yet (a sandbox's network is internal)"},
      {"extra_mounts", "host mounts are not on docker-swarm: a node has no server's files"},
      {"credentials", "credentials are host files and variables; not on docker-swarm yet"},
      {"sudo", "sudo is not on docker-swarm"},
      {"runtime",
       "a service cannot choose its runtime on Engine API 1.41: set the nodes' "
       "default-runtime instead"},
      {"user", "the runner runs as the image's user 1000:1000 on docker-swarm"},
      {"disk", "a writable layer's size is not a service setting"},
      {"writable_rootfs", "a sandbox's image filesystem is read-only on docker-swarm"},
      {"command_prefix", "not on docker-swarm yet"},
      {"venv_path", "not on docker-swarm yet"},
      {"docker_binary", "docker-swarm speaks the Engine API, not a CLI"},
      {"docker_context", "docker-swarm speaks the Engine API, not a CLI"},
      {"docker_flags", "docker-swarm speaks the Engine API, not a CLI"},
      {"cli_env", "docker-swarm speaks the Engine API, not a CLI"},
  };
  const auto it = reasons.find(key);
  return it == reasons.end() ? nullptr : it->second;
}

constexpr const char* kKnown =
    "image, docker_host, server_container, owner_id, memory, cpus, pids_limit, reserve_memory, "
    "reserve_cpus, constraints, encrypted, start_timeout, shell, env, network, tmpfs_size";

void read_setting(const std::string& key, const Json& value, SwarmSettings& s) {
  if (key == "image") {
    s.image = get_string(value, key);
    if (s.image.empty()) bad(key, "a non-empty image reference");
  } else if (key == "docker_host") {
    s.docker_host = get_string(value, key);
    if (s.docker_host.starts_with("ssh://"))
      throw SettingError(key,
                         "an ssh:// engine is not reached by docker-swarm: give a manager's "
                         "unix:// or tcp:// address");
  } else if (key == "server_container") {
    s.server_container = get_string(value, key);
  } else if (key == "owner_id") {
    s.owner_id = get_string(value, key);
    if (s.owner_id.empty()) bad(key, "a non-empty id (default: the hostname)");
  } else if (key == "memory") {
    s.memory_bytes = get_size(value, key, true);
  } else if (key == "cpus") {
    s.cpus = get_cpus(value, key);
  } else if (key == "pids_limit") {
    if (!value.is_number_integer()) bad(key, "an integer (<= 0 for no limit)");
    s.pids_limit = value.get<std::int64_t>();
  } else if (key == "reserve_memory") {
    s.reserve_memory_bytes = get_size(value, key, false);
  } else if (key == "reserve_cpus") {
    s.reserve_cpus = get_cpus(value, key);
  } else if (key == "constraints") {
    if (!value.is_array()) bad(key, "a list of Swarm constraints, e.g. \"node.role==worker\"");
    for (std::size_t i = 0; i < value.size(); ++i) {
      const std::string item = "constraints[" + std::to_string(i) + "]";
      const std::string c = get_string(value[i], item);
      if (c.find("==") == std::string::npos && c.find("!=") == std::string::npos)
        bad(item, "a Swarm constraint with == or != (got '" + c + "')");
      if (c.rfind("node.id==", 0) == 0)
        throw SettingError(item,
                           "node.id== is the backend's own pin of a placed sandbox; use "
                           "node.hostname or node.labels");
      s.constraints.push_back(c);
    }
  } else if (key == "encrypted") {
    if (!value.is_boolean()) bad(key, "true or false");
    s.encrypted = value.get<bool>();
  } else if (key == "start_timeout") {
    if (!value.is_number_integer() || value.get<std::int64_t>() <= 0 ||
        value.get<std::int64_t>() > 3600)
      bad(key, "a number of seconds from 1 to 3600");
    s.start_timeout = std::chrono::seconds(value.get<std::int64_t>());
  } else if (key == "shell") {
    s.shell = get_string(value, key);
    if (s.shell.empty() || s.shell.front() != '/') bad(key, "an absolute path, e.g. /bin/sh");
  } else if (key == "env") {
    if (!value.is_object()) bad(key, "an object of string values");
    for (const auto& [name, v] : value.items()) {
      if (name.empty() || name.find('=') != std::string::npos)
        bad(key, "variable names without '=' (got '" + name + "')");
      s.env[name] = get_string(v, "env." + name);
    }
  } else if (key == "network") {
    s.network = get_string(value, key);
    if (s.network != "none")
      throw SettingError(key, "only 'none' on docker-swarm (got '" + s.network +
                                  "'): each sandbox has an internal overlay network of its own "
                                  "that reaches only the server; egress is not there yet");
  } else if (key == "tmpfs_size") {
    s.tmpfs_bytes = get_size(value, key, false);
  } else if (const char* why = refused_reason(key)) {
    throw SettingError(key, std::string("not on docker-swarm: ") + why);
  } else {
    throw SettingError(key, std::string("unknown setting (known: ") + kKnown + ")",
                       "unknown setting '" + key + "' (known: " + kKnown + ")");
  }
}

}  // namespace

SwarmSettings parse_swarm_settings(const std::string& settings_json) {
  SwarmSettings s;
  if (settings_json.empty()) return s;
  const Json root = Json::parse(settings_json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object())
    throw SettingError("", "expected a JSON object", "the settings are not a JSON object");
  for (const auto& [key, value] : root.items()) read_setting(key, value, s);
  return s;
}

void check_swarm_settings(const std::string& settings_json,
                          std::vector<sdk::SettingsProblem>& problems) {
  try {
    parse_swarm_settings(settings_json);
  } catch (const SettingError& e) {
    problems.push_back({e.pointer(), e.message()});
  }
}

void describe_swarm_settings(const std::string& settings_json, std::vector<std::string>& lines) {
  SwarmSettings s;
  try {
    s = parse_swarm_settings(settings_json);
  } catch (const std::exception&) {
    return;  // the check reports it
  }
  auto gib = [](std::int64_t bytes) {
    return bytes == 0 ? std::string("no limit") : std::to_string(bytes >> 20) + " MiB";
  };
  lines.push_back("image " + s.image + ", on a swarm manager at " +
                  (s.docker_host.empty() ? "$DOCKER_HOST or the default socket" : s.docker_host));
  lines.push_back("each sandbox a Swarm service of one task on its own internal overlay network" +
                  std::string(s.encrypted ? " (encrypted)" : "") +
                  ", reached only through its runner (no exec)");
  std::string constraints;
  for (const auto& c : s.constraints) constraints += (constraints.empty() ? "" : ", ") + c;
  lines.push_back("memory " + gib(s.memory_bytes) + ", pids " +
                  (s.pids_limit > 0 ? std::to_string(s.pids_limit) : "no limit") +
                  ", constraints [" + constraints + "]");
}

}  // namespace execmcp::plugins::docker_swarm
