// Reads MassGen config files: the code-execution keys of each agent's backend, nothing else.
#include <algorithm>
#include <array>
#include <filesystem>
#include <set>
#include <string_view>
#include <utility>

#include "config/config_parsers.hpp"

namespace execmcp::host::config_detail {

namespace {

constexpr const char* kWhyOrchestration = "MassGen orchestration";
constexpr const char* kWhyUi = "MassGen UI";
constexpr const char* kWhyModel = "model/LLM backend";
constexpr const char* kWhyFileTools = "MassGen's own filesystem tools";
constexpr const char* kWhyUnknown = "unknown to execmcp";

// Lists `key` (a key node of a map at `parent`) as read but not acted on: by its known-skip list,
// else `fallback`.
void ignore_key(YamlReader& reader, const YAML::Node& key, const std::string& parent,
                const char* fallback, Config& config) {
  const std::string name = key.Scalar();
  std::string why = fallback;
  for (const auto& [reason, names] : massgen_key_lists().skipped) {
    if (names.count(name) != 0) why = reason;
  }
  config.ignored.push_back({reader.location(key), join_key(parent, name), why});
}

// MassGen's command_line_docker_* keys are the Docker backends' settings under other names: a
// rename table, with no checks of its own. Each value goes to the plugin as written, with its
// place in the file recorded, so the plugin's settings check (at check-config and when the agent
// is built) reports a bad value at its MassGen line. The last two are ours (MassGen has neither):
// the allow list behind the agent's proxy, and the runtime (e.g. runsc for gVisor).
struct SettingRename {
  const char* key;
  const char* setting;
};
constexpr std::array<SettingRename, 7> kDockerRenames = {{
    {"command_line_docker_image", "image"},
    {"command_line_docker_memory_limit", "memory"},
    {"command_line_docker_cpu_limit", "cpus"},
    {"command_line_docker_network_mode", "network"},
    {"command_line_docker_enable_sudo", "sudo"},
    {"command_line_docker_egress", "egress"},
    {"command_line_docker_runtime", "runtime"},
}};
// Ours too: MassGen's local mode runs commands on the host with no boundary; these ask for the
// local backend's OS sandbox (isolation: sandbox) and its network, under names in MassGen's style.
constexpr std::array<SettingRename, 3> kLocalRenames = {{
    {"command_line_local_isolation", "isolation"},
    {"command_line_local_network_mode", "network"},
    {"command_line_local_egress", "egress"},
}};
// Two more change shape on the way (not a check either): credentials' host paths are resolved
// like every other path of the config, and packages.preinstall is the `preinstall` setting.
constexpr const char* kDockerCredentials = "command_line_docker_credentials";
constexpr const char* kDockerPackages = "command_line_docker_packages";

// command_line_execution_mode -> the backend plugin.
constexpr std::array<std::pair<std::string_view, const char*>, 3> kModes = {{
    {"local", "local"},
    {"docker", "docker-api"},
    // Ours (MassGen knows local and docker): the docker CLI instead of the Engine API, for SSH
    // remotes, contexts and Podman.
    {"docker-cli", "docker-cli"},
}};

// Every key only the Docker modes read; with command_line_execution_mode: local each is a warning.
std::vector<const char*> docker_keys() {
  std::vector<const char*> keys;
  for (const auto& rename : kDockerRenames) keys.push_back(rename.key);
  keys.push_back(kDockerCredentials);
  keys.push_back(kDockerPackages);
  return keys;
}

const std::set<std::string>& backend_keys_we_read() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> all;
    for (const char* key : docker_keys()) all.insert(key);
    for (const auto& rename : kLocalRenames) all.insert(rename.key);
    all.insert({"cwd", "enable_mcp_command_line", "command_line_execution_mode",
                "command_line_allowed_commands", "command_line_blocked_commands",
                "command_execution_prefix", "command_execution_venv_path", "context_paths"});
    return all;
  }();
  return keys;
}

// What the orchestrator: section gives every agent.
struct OrchestratorShared {
  std::vector<ContextPath> context_paths;
  std::string temp_workspace;  // agent_temporary_workspace
  std::string skills_dir;      // coordination.skills_directory when use_skills is true
};

// The sanitize rules MassGen stops enforcing when sudo is enabled.
const nlohmann::json& sudo_rules() {
  static const nlohmann::json rules = {"sudo", "su", "chown", "chmod"};
  return rules;
}

// command_line_docker_credentials -> the Docker backends' `credentials` setting, with env_file and
// the additional_mounts host paths resolved like every other path of the config.
void read_credentials(YamlReader& reader, const YAML::Node& node, const std::string& path,
                      const std::string& base_dir, nlohmann::json& settings) {
  if (!reader.expect_map(node, path)) return;
  nlohmann::json credentials = to_json(node);
  if (const auto value = node["env_file"]) {
    if (auto file = get_path(reader, value, join_key(path, "env_file"), base_dir))
      credentials["env_file"] = *file;
  }
  if (const auto mounts = node["additional_mounts"]) {
    const std::string mounts_path = join_key(path, "additional_mounts");
    if (reader.expect_map(mounts, mounts_path)) {
      nlohmann::json resolved = nlohmann::json::object();
      for (const auto& entry : mounts) {
        if (auto host = get_path(reader, entry.first, join_key(mounts_path, entry.first.Scalar()),
                                 base_dir))
          resolved[*host] = to_json(entry.second);
      }
      credentials["additional_mounts"] = std::move(resolved);
    }
  }
  settings["credentials"] = std::move(credentials);
}

// command_line_docker_packages -> `preinstall`; its other keys are listed as not acted on.
void read_packages(YamlReader& reader, const YAML::Node& node, const std::string& path,
                   nlohmann::json& settings, Config& config) {
  if (!reader.expect_map(node, path)) return;
  for (const auto& entry : node) {
    if (entry.first.Scalar() != "preinstall")
      ignore_key(reader, entry.first, path, kWhyUnknown, config);
  }
  if (const auto preinstall = node["preinstall"]) {
    if (reader.expect_map(preinstall, join_key(path, "preinstall")))
      settings["preinstall"] = to_json(preinstall);
  }
}

// MassGen always checks dangerous commands (sanitize, first), then the allowed and blocked command
// lists (patterns) when the backend lists any.
void add_massgen_filters(YamlReader& reader, const YAML::Node& backend,
                         const std::string& backend_path, AgentConfig& agent) {
  auto key_path = [&](const char* key) { return join_key(backend_path, key); };
  // Each is reported at the backend section that implies it.
  auto filter = [&](const char* plugin) {
    PluginRef ref;
    ref.plugin = plugin;
    ref.key_path = ref.plugin_key_path = backend_path;
    ref.location = ref.plugin_location = reader.location(backend);
    return ref;
  };
  agent.filters.push_back(filter("sanitize"));

  PluginRef patterns = filter("patterns");
  bool has_patterns = false;
  for (auto [key, setting] : {std::pair{"command_line_allowed_commands", "allow"},
                              std::pair{"command_line_blocked_commands", "deny"}}) {
    const auto value = backend[key];
    if (!value || value.IsNull()) continue;
    if (auto list = reader.get_string_list(value, key_path(key))) {
      reader.record_sources(value, std::string("/") + setting, key_path(key),
                            patterns.setting_sources);
      patterns.settings[setting] = *list;
      patterns.location = reader.location(value);
      has_patterns = true;
    }
  }
  if (has_patterns) agent.filters.push_back(std::move(patterns));
}

// The command_line_docker_* keys -> the Docker backends' settings (and sudo's sanitize rules).
// Each key of `renames` that the backend has goes to the plugin's setting as written, its place
// recorded (so the plugin's check reports a bad value at its MassGen line).
template <std::size_t N>
void rename_settings(YamlReader& reader, const YAML::Node& backend, const std::string& backend_path,
                     const std::array<SettingRename, N>& renames, AgentConfig& agent) {
  for (const auto& rename : renames) {
    const auto value = backend[rename.key];
    if (!value) continue;
    agent.backend.settings[rename.setting] = to_json(value);
    reader.record_sources(value, std::string("/") + rename.setting,
                          join_key(backend_path, rename.key), agent.backend.setting_sources);
  }
}

void read_massgen_docker_settings(YamlReader& reader, const YAML::Node& backend,
                                  const std::string& backend_path, const std::string& base_dir,
                                  AgentConfig& agent, Config& config) {
  auto key_path = [&](const char* key) { return join_key(backend_path, key); };
  auto& settings = agent.backend.settings;
  rename_settings(reader, backend, backend_path, kDockerRenames, agent);
  // MassGen stops enforcing its sudo rules where sudo is enabled.
  if (settings.value("sudo", nlohmann::json()) == true)
    agent.filters.front().settings["allow"] = sudo_rules();
  if (const auto value = backend[kDockerCredentials])
    read_credentials(reader, value, key_path(kDockerCredentials), base_dir, settings);
  if (const auto value = backend[kDockerPackages])
    read_packages(reader, value, key_path(kDockerPackages), settings, config);
}

void read_massgen_agent(YamlReader& reader, const YAML::Node& node, const std::string& path,
                        const std::string& base_dir, const OrchestratorShared& shared,
                        Config& config) {
  if (!reader.expect_map(node, path)) return;
  AgentConfig agent = read_agent_header(reader, node, path);
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    if (key != "id" && key != "backend") ignore_key(reader, entry.first, path, kWhyUnknown, config);
  }
  const std::string backend_path = join_key(path, "backend");
  const auto backend = node["backend"];
  if (!backend) {
    reader.error(node, backend_path, "required key is missing");
    return;
  }
  if (!reader.expect_map(backend, backend_path)) return;
  for (const auto& entry : backend) {
    const std::string key = entry.first.Scalar();
    if (backend_keys_we_read().count(key) == 0)
      ignore_key(reader, entry.first, backend_path, kWhyUnknown, config);
  }
  auto key_path = [&](const char* key) { return join_key(backend_path, key); };

  agent.mcp_enabled = false;
  if (const auto value = backend["enable_mcp_command_line"]) {
    if (auto enabled = reader.get_bool(value, key_path("enable_mcp_command_line")))
      agent.mcp_enabled = *enabled;
  }
  if (const auto value = backend["cwd"]) {
    if (auto cwd = get_path(reader, value, key_path("cwd"), base_dir)) agent.cwd = *cwd;
  } else if (agent.mcp_enabled) {
    reader.error(backend, key_path("cwd"),
                 "required key is missing (enable_mcp_command_line needs a workspace)");
  }

  const char* plugin = "local";
  if (const auto value = backend["command_line_execution_mode"]) {
    if (auto text = reader.get_string(value, key_path("command_line_execution_mode"))) {
      const auto* mode = std::find_if(kModes.begin(), kModes.end(),
                                      [&](const auto& m) { return m.first == *text; });
      if (mode != kModes.end()) {
        plugin = mode->second;
      } else {
        reader.error(value, key_path("command_line_execution_mode"),
                     "expected 'local', 'docker' or 'docker-cli', found '" + *text + "'");
      }
    }
  }
  const bool local = std::string_view(plugin) == "local";

  add_massgen_filters(reader, backend, backend_path, agent);

  PluginRef& backend_ref = agent.backend;
  backend_ref.key_path = backend_path;
  backend_ref.location = reader.location(backend);
  backend_ref.plugin = plugin;
  backend_ref.plugin_key_path = key_path("command_line_execution_mode");
  backend_ref.plugin_location = reader.location(
      backend["command_line_execution_mode"] ? backend["command_line_execution_mode"] : backend);
  auto& settings = backend_ref.settings;
  if (const auto value = backend["command_execution_prefix"]) {
    if (auto text = reader.get_string(value, key_path("command_execution_prefix")))
      settings["command_prefix"] = *text;
  }
  if (const auto value = backend["command_execution_venv_path"]) {
    if (auto venv = get_path(reader, value, key_path("command_execution_venv_path"), base_dir))
      settings["venv_path"] = *venv;
  }
  if (!local) {  // both Docker backends read the same settings
    read_massgen_docker_settings(reader, backend, backend_path, base_dir, agent, config);
    for (const auto& rename : kLocalRenames) {
      if (backend[rename.key])
        config.warnings.push_back(reader.location(backend[rename.key]).str() + ": " +
                                  key_path(rename.key) +
                                  " is ignored because command_line_execution_mode is not local");
    }
  } else {
    rename_settings(reader, backend, backend_path, kLocalRenames, agent);
    for (const char* key : docker_keys()) {
      if (backend[key])
        config.warnings.push_back(reader.location(backend[key]).str() + ": " + key_path(key) +
                                  " is ignored because command_line_execution_mode is local");
    }
  }

  if (const auto value = backend["context_paths"])
    read_context_paths(reader, value, key_path("context_paths"), base_dir, false,
                       agent.context_paths, config);
  for (const auto& context : shared.context_paths) agent.context_paths.push_back(context);
  agent.temp_workspace = shared.temp_workspace;
  agent.skills_dir = shared.skills_dir;

  if (!agent.mcp_enabled && !agent.id.empty())
    config.warnings.push_back(reader.location(node).str() + ": agent '" + agent.id +
                              "' does not set enable_mcp_command_line: true; `execmcp serve` "
                              "will refuse it");
  config.agents.push_back(std::move(agent));
}

// orchestrator.coordination: use_skills offers skills_directory (MassGen's default .agent/skills,
// relative to the config) read-only to every agent; the rest is MassGen's coordination.
void read_coordination(YamlReader& reader, const YAML::Node& node, const std::string& base_dir,
                       OrchestratorShared& shared, Config& config) {
  const std::string path = "orchestrator.coordination";
  if (!reader.expect_map(node, path)) return;
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    if (key != "use_skills" && key != "skills_directory")
      ignore_key(reader, entry.first, path, kWhyOrchestration, config);
  }
  bool use_skills = false;
  if (const auto value = node["use_skills"]) {
    if (auto enabled = reader.get_bool(value, join_key(path, "use_skills"))) use_skills = *enabled;
  }
  const auto directory = node["skills_directory"];
  if (!use_skills) {
    if (directory) {
      for (const auto& entry : node) {
        if (entry.first.Scalar() == "skills_directory")
          config.ignored.push_back({reader.location(entry.first),
                                    join_key(path, "skills_directory"),
                                    "offers nothing without use_skills: true"});
      }
    }
    return;
  }
  const std::string key_path = join_key(path, directory ? "skills_directory" : "use_skills");
  std::optional<std::string> dir;
  if (directory) {
    dir = get_path(reader, directory, key_path, base_dir);
  } else {
    dir = (std::filesystem::path(base_dir) / ".agent" / "skills").lexically_normal().string();
  }
  if (!dir) return;
  std::error_code ec;
  if (!std::filesystem::is_directory(*dir, ec)) {
    reader.error(directory ? directory : node["use_skills"], key_path,
                 "skills directory '" + *dir + "' does not exist (use_skills: true needs it)");
    return;
  }
  shared.skills_dir = *dir;
}

}  // namespace

const MassgenKeyLists& massgen_key_lists() {
  static const MassgenKeyLists lists = [] {
    MassgenKeyLists out;
    out.acted_on = backend_keys_we_read();
    out.acted_on.insert({"agent", "agents", "id", "backend", "orchestrator", "protected_paths",
                         "path", "permission", "agent_temporary_workspace", "use_skills",
                         "skills_directory"});
    out.skipped[kWhyModel] = {"type",
                              "model",
                              "api_key",
                              "base_url",
                              "api_version",
                              "organization",
                              "project_id",
                              "region",
                              "temperature",
                              "max_tokens",
                              "max_completion_tokens",
                              "top_p",
                              "top_k",
                              "frequency_penalty",
                              "presence_penalty",
                              "seed",
                              "stop",
                              "reasoning",
                              "reasoning_effort",
                              "text",
                              "verbosity",
                              "thinking",
                              "thinking_budget",
                              "response_format",
                              "tool_choice",
                              "parallel_tool_calls",
                              "allowed_tools",
                              "exclude_tools",
                              "enable_web_search",
                              "enable_code_interpreter",
                              "enable_code_execution",
                              "max_retries"};
    out.skipped[kWhyFileTools] = {"enforce_read_before_delete",
                                  "context_write_access_enabled",
                                  "enable_image_generation",
                                  "enable_audio_generation",
                                  "enable_video_generation",
                                  "exclude_file_operation_mcps",
                                  "mcp_servers"};
    out.skipped[kWhyOrchestration] = {"system_message",
                                      "voting_sensitivity",
                                      "answer_novelty_requirement",
                                      "max_new_answers_per_agent",
                                      "timeout_settings",
                                      "snapshot_storage",
                                      "session_storage",
                                      "max_orchestration_restarts",
                                      "skip_coordination_rounds",
                                      "debug_final_answer",
                                      "enable_planning_mode",
                                      "planning_mode_instruction",
                                      "enable_agent_task_planning",
                                      "task_planning_filesystem_mode",
                                      "massgen_skills"};
    out.skipped[kWhyUi] = {"ui"};
    return out;
  }();
  return lists;
}

void parse_massgen(const YAML::Node& root, YamlReader& reader, Config& config,
                   const std::string& base_dir) {
  for (const auto& entry : root) {
    const std::string key = entry.first.Scalar();
    if (key != "agent" && key != "agents" && key != "orchestrator")
      ignore_key(reader, entry.first, "", kWhyUnknown, config);
  }
  OrchestratorShared shared;
  if (const auto orchestrator = root["orchestrator"]) {
    if (reader.expect_map(orchestrator, "orchestrator")) {
      for (const auto& entry : orchestrator) {
        // Everything under orchestrator: but the keys below is MassGen's coordination.
        const std::string key = entry.first.Scalar();
        if (key != "context_paths" && key != "agent_temporary_workspace" && key != "coordination")
          ignore_key(reader, entry.first, "orchestrator", kWhyOrchestration, config);
      }
      if (const auto paths = orchestrator["context_paths"])
        read_context_paths(reader, paths, "orchestrator.context_paths", base_dir, false,
                           shared.context_paths, config);
      if (const auto value = orchestrator["agent_temporary_workspace"]) {
        if (auto dir = get_path(reader, value, "orchestrator.agent_temporary_workspace", base_dir))
          shared.temp_workspace = *dir;
      }
      if (const auto coordination = orchestrator["coordination"])
        read_coordination(reader, coordination, base_dir, shared, config);
    }
  }
  const auto single = root["agent"];
  const auto many = root["agents"];
  if (!single && !many) {
    reader.error(root, "",
                 "neither 'execmcp: 1' (an execmcp config) nor 'agent:' / 'agents:' (a MassGen "
                 "config) found");
    return;
  }
  if (single) read_massgen_agent(reader, single, "agent", base_dir, shared, config);
  if (many && reader.expect_list(many, "agents")) {
    for (std::size_t i = 0; i < many.size(); ++i)
      read_massgen_agent(reader, many[i], index_key("agents", i), base_dir, shared, config);
  }
}

}  // namespace execmcp::host::config_detail
