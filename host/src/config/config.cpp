// Config value types: agent selection, locations and the error that lists every problem.
#include "config/config.hpp"

namespace execmcp::host {

namespace {
std::string join_lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += (text.empty() ? "" : "\n") + line;
  return text;
}
}  // namespace

std::string SourceLocation::str() const {
  if (line > 0) return file + ":" + std::to_string(line);
  return file;
}

SettingSource PluginRef::source_of(const std::string& pointer) const {
  for (std::string at = pointer;;) {
    if (const auto it = setting_sources.find(at); it != setting_sources.end()) return it->second;
    if (at.empty()) break;
    const auto slash = at.rfind('/');
    at.resize(slash == std::string::npos ? 0 : slash);
  }
  return {location, key_path};
}

std::string IgnoredKey::str() const {
  return location.str() + ": " + key_path + " (" + why + ")";
}

ConfigError::ConfigError(std::vector<std::string> problems)
    : std::runtime_error(join_lines(problems)), problems_(std::move(problems)) {}

const AgentConfig& Config::select_agent(const std::string& id) const {
  if (id.empty()) {
    if (agents.size() == 1) return agents.front();
    std::string ids;
    for (const auto& agent : agents) ids += (ids.empty() ? "" : ", ") + agent.id;
    throw ConfigError({source_file + ": has " + std::to_string(agents.size()) +
                       " agents; choose one with --agent ID (" + ids + ")"});
  }
  for (const auto& agent : agents)
    if (agent.id == id) return agent;
  std::string ids;
  for (const auto& agent : agents) ids += (ids.empty() ? "" : ", ") + agent.id;
  throw ConfigError({source_file + ": no agent '" + id + "' (agents: " + ids + ")"});
}

const char* schema_name(ConfigSchema schema) {
  return schema == ConfigSchema::Native ? "execmcp" : "MassGen";
}

}  // namespace execmcp::host
