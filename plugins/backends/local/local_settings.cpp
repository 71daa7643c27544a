// Strict parsing of the local backend's settings: unknown keys and wrong types are refused.
#include "local_settings.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "execmcp/plugins/plugin_settings/memory_limit.hpp"
#include "execmcp/plugins/plugin_settings/settings_object.hpp"

namespace execmcp::plugins::local {

namespace {

constexpr const char* kKnownKeys =
    "shell, command_prefix, venv_path, auto_venv, env, isolation, network, egress, sandbox";
constexpr const char* kKnownSandboxKeys =
    "user, landlock_max_abi, max_processes, memory, cpus, pids_limit";

// `egress`: parsed as the Docker backends parse it; what only their proxy offers is refused.
void parse_egress_object(const nlohmann::json& value, docker_common::EgressPolicy& policy) {
  std::vector<sdk::SettingsProblem> problems;
  policy = docker_common::parse_egress(value, problems);
  if (!problems.empty()) {
    std::string key = problems.front().pointer.substr(1);
    std::replace(key.begin(), key.end(), '/', '.');
    throw std::invalid_argument("setting '" + key + "': " + problems.front().message);
  }
  for (const char* key : {"secrets", "upstream_ca", "upstream_network"})
    if (value.is_object() && value.contains(key))
      throw std::invalid_argument("setting 'egress." + std::string(key) +
                                  "' is not offered by the local sandbox (the Docker backends' "
                                  "proxy only)");
}

std::string require_string(const nlohmann::json& value, const std::string& key) {
  if (!value.is_string())
    throw std::invalid_argument("setting '" + key + "' must be a string, got " +
                                std::string(value.type_name()));
  return value.get<std::string>();
}

// `sandbox.memory`, `sandbox.cpus`, `sandbox.pids_limit`: as the Docker backends take them.
void parse_sandbox_limit(const std::string& key, const nlohmann::json& v, SandboxSettings& out) {
  const std::string name = "setting 'sandbox." + key + "'";
  if (key == "memory") {
    out.memory_set = true;
    if (v.is_string() && v.get<std::string>() == "none") {
      out.memory_bytes.reset();
    } else if (v.is_number_integer() && v.get<long long>() > 0) {
      out.memory_bytes = v.get<std::int64_t>();
    } else if (v.is_string()) {
      try {
        out.memory_bytes = plugin_settings::parse_memory_limit(v.get<std::string>());
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(name + ": " + e.what() + ", or \"none\"");
      }
    } else {
      throw std::invalid_argument(name + " must be " + plugin_settings::kMemoryLimitForms +
                                  ", or \"none\", got " + v.dump());
    }
    // Below this even the sandbox's runner cannot start.
    if (out.memory_bytes && *out.memory_bytes < (std::int64_t{16} << 20))
      throw std::invalid_argument(name + " must be at least 16m (or \"none\"), got " + v.dump());
  } else if (key == "cpus") {
    if (!v.is_number() || !(v.get<double>() > 0.0) || !std::isfinite(v.get<double>()) ||
        v.get<double>() > 1024.0)
      throw std::invalid_argument(name + " must be a positive number of CPUs, e.g. 1.5, got " +
                                  v.dump());
    out.cpus = v.get<double>();
    out.cpus_set = true;
  } else {
    if (!v.is_number_integer())
      throw std::invalid_argument(name + " must be an integer (<= 0 for no limit), got " +
                                  v.dump());
    if (v.get<long long>() > 0 && v.get<long long>() < 16)
      throw std::invalid_argument(name + " must be <= 0 (no limit) or at least 16 (the sandbox's " +
                                  "own init and runner count too), got " + v.dump());
    out.pids_limit = v.get<std::int64_t>() > 0 ? v.get<std::int64_t>() : 0;
    out.pids_limit_set = true;
  }
}

// `sandbox`: {"user": 1000, "landlock_max_abi": 2, "max_processes": 2048, "memory": "2g",
// "cpus": 1.5, "pids_limit": 512}.
void parse_sandbox_object(const nlohmann::json& value, SandboxSettings& out) {
  if (!value.is_object())
    throw std::invalid_argument(
        "setting 'sandbox' must be an object (keys: " + std::string(kKnownSandboxKeys) + "), got " +
        std::string(value.type_name()));
  for (const auto& [key, v] : value.items()) {
    if (key == "user") {
      if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 0x7fffffff)
        throw std::invalid_argument(
            "setting 'sandbox.user' must be a numeric uid, e.g. 1000, got " + v.dump());
      if (v.get<long long>() == 0)
        throw std::invalid_argument(
            "setting 'sandbox.user' must not be 0: the sandbox never runs as root");
      out.user = static_cast<uid_t>(v.get<long long>());
    } else if (key == "landlock_max_abi") {
      if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 64)
        throw std::invalid_argument(
            "setting 'sandbox.landlock_max_abi' must be a Landlock ABI version (an integer, 0 for "
            "what the kernel has), got " +
            v.dump());
      out.landlock_max_abi = static_cast<int>(v.get<long long>());
    } else if (key == "max_processes") {
      if (!v.is_number_integer() || v.get<long long>() < 0 ||
          (v.get<long long>() > 0 && v.get<long long>() < 16) || v.get<long long>() > 4194304)
        throw std::invalid_argument(
            "setting 'sandbox.max_processes' must be 0 (no limit) or a number of processes "
            "from 16 to 4194304, got " +
            v.dump());
      out.max_processes = static_cast<std::size_t>(v.get<long long>());
    } else if (key == "memory" || key == "cpus" || key == "pids_limit") {
      parse_sandbox_limit(key, v, out);
    } else {
      throw std::invalid_argument("unknown setting 'sandbox." + key +
                                  "' (known: " + kKnownSandboxKeys + ")");
    }
  }
}

}  // namespace

LocalSettings parse_local_settings(const std::string& settings_json) {
  LocalSettings settings;
  const auto parsed = plugin_settings::parse_settings_object(settings_json, "local");
  if (!parsed) return settings;
  const nlohmann::json& root = *parsed;
  for (const auto& [key, value] : root.items()) {
    if (key == "shell") {
      settings.shell = require_string(value, key);
      if (settings.shell.empty() || settings.shell.front() != '/')
        throw std::invalid_argument("setting 'shell' must be an absolute path, e.g. \"/bin/bash\"");
      if (::access(settings.shell.c_str(), X_OK) != 0)
        throw std::invalid_argument("setting 'shell': '" + settings.shell +
                                    "' is not an executable file");
    } else if (key == "command_prefix") {
      settings.command_prefix = require_string(value, key);
    } else if (key == "venv_path") {
      settings.venv_path = require_string(value, key);
    } else if (key == "auto_venv") {
      if (!value.is_boolean())
        throw std::invalid_argument("setting 'auto_venv' must be true or false, got " +
                                    std::string(value.type_name()));
      settings.auto_venv = value.get<bool>();
    } else if (key == "env") {
      if (!value.is_object())
        throw std::invalid_argument("setting 'env' must be an object of strings, got " +
                                    std::string(value.type_name()));
      for (const auto& [name, v] : value.items()) {
        if (name.empty() || name.find('=') != std::string::npos)
          throw std::invalid_argument("setting 'env': '" + name + "' is not a valid variable name");
        if (!v.is_string())
          throw std::invalid_argument("setting 'env." + name + "' must be a string, got " +
                                      std::string(v.type_name()));
        settings.env[name] = v.get<std::string>();
      }
    } else if (key == "isolation") {
      const std::string isolation = require_string(value, key);
      if (isolation == "none") {
        settings.isolation = Isolation::kNone;
      } else if (isolation == "sandbox") {
        settings.isolation = Isolation::kSandbox;
      } else {
        throw std::invalid_argument("setting 'isolation' must be \"none\" or \"sandbox\", got \"" +
                                    isolation + "\"");
      }
    } else if (key == "network") {
      const std::string network = require_string(value, key);
      if (network == "none") {
        settings.sandbox.network = SandboxNetworkSetting::kNone;
      } else if (network == "host") {
        settings.sandbox.network = SandboxNetworkSetting::kHost;
      } else if (network == "egress") {
        settings.sandbox.network = SandboxNetworkSetting::kEgress;
      } else {
        throw std::invalid_argument(
            "setting 'network' must be \"none\" (the sandbox's own loopback only), \"egress\" "
            "(only egress.allow, through a proxy) or \"host\" (the host's network: no network "
            "boundary), got \"" +
            network + "\"");
      }
    } else if (key == "egress") {
      parse_egress_object(value, settings.sandbox.egress);
    } else if (key == "sandbox") {
      parse_sandbox_object(value, settings.sandbox);
    } else {
      throw std::invalid_argument("unknown setting '" + key + "' (known: " + kKnownKeys + ")");
    }
  }
  // The sandbox's settings mean nothing on the host: said rather than ignored.
  if (settings.isolation != Isolation::kSandbox) {
    for (const char* key : {"network", "egress", "sandbox"})
      if (root.contains(key))
        throw std::invalid_argument("setting '" + std::string(key) +
                                    "' applies only with \"isolation\": \"sandbox\"");
  }
  const bool egress = settings.sandbox.network == SandboxNetworkSetting::kEgress;
  if (egress != root.contains("egress"))
    throw std::invalid_argument(
        egress ? "setting 'network': \"egress\" needs 'egress' (its allow list)"
               : "setting 'egress' applies only with \"network\": \"egress\"");
  return settings;
}

}  // namespace execmcp::plugins::local
