// Strict parsing of the local backend's settings: unknown keys and wrong types are refused.
#include "local_settings.hpp"

#include <unistd.h>

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "execmcp/plugins/plugin_settings/settings_object.hpp"

namespace execmcp::plugins::local {

namespace {

constexpr const char* kKnownKeys = "shell, command_prefix, venv_path, auto_venv, env";

std::string require_string(const nlohmann::json& value, const std::string& key) {
  if (!value.is_string())
    throw std::invalid_argument("setting '" + key + "' must be a string, got " +
                                std::string(value.type_name()));
  return value.get<std::string>();
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
    } else {
      throw std::invalid_argument("unknown setting '" + key + "' (known: " + kKnownKeys + ")");
    }
  }
  return settings;
}

}  // namespace execmcp::plugins::local
