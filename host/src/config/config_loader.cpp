// Loads a config file: detects the schema, runs its reader, and applies the shared defaults.
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <regex>
#include <set>
#include <sstream>

#include <spdlog/spdlog.h>

#include "config/config.hpp"
#include "config/config_parsers.hpp"
#include "config/path_expansion.hpp"

namespace execmcp::host {

namespace config_detail {

std::optional<std::string> get_path(YamlReader& reader, const YAML::Node& node,
                                    std::string_view path, const std::string& base_dir) {
  auto text = reader.get_string(node, path);
  if (!text) return std::nullopt;
  try {
    return expand_path(*text, base_dir);
  } catch (const std::invalid_argument& e) {
    reader.error(node, path, e.what());
    return std::nullopt;
  }
}

namespace {

// `protected_paths` of the context `context` (entry `entry_path`): each relative to the context
// directory (its parent for a file context, as MassGen resolves them), existing, and at or under
// the context path; symlinks are resolved before that check.
void read_protected_paths(YamlReader& reader, const YAML::Node& list, const std::string& path,
                          ContextPath& context) {
  namespace fs = std::filesystem;
  if (!reader.expect_list(list, path)) return;
  std::error_code ec;
  const bool is_file = fs::is_regular_file(context.path, ec);
  const std::string base = is_file ? fs::path(context.path).parent_path().string() : context.path;
  const fs::path context_real = fs::weakly_canonical(context.path, ec);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string item_path = index_key(path, i);
    auto resolved = get_path(reader, list[i], item_path, base);
    if (!resolved) continue;
    if (!fs::exists(*resolved, ec)) {
      reader.error(list[i], item_path, "protected path '" + *resolved + "' does not exist");
      continue;
    }
    const fs::path real = fs::weakly_canonical(*resolved, ec);
    auto c = real.begin();
    bool inside = !context_real.empty();
    for (auto p = context_real.begin(); inside && p != context_real.end(); ++p, ++c) {
      if (p->empty()) continue;  // trailing separator
      inside = c != real.end() && *c == *p;
    }
    if (!inside) {
      reader.error(
          list[i], item_path,
          "protected path '" + *resolved + "' is outside the context path '" + context.path + "'");
      continue;
    }
    context.protected_paths.push_back(*resolved);
  }
}

}  // namespace

void read_context_paths(YamlReader& reader, const YAML::Node& list, std::string_view path,
                        const std::string& base_dir, bool strict, std::vector<ContextPath>& out,
                        Config& config) {
  if (!reader.expect_list(list, path)) return;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto entry = list[i];
    const std::string entry_path = index_key(path, i);
    if (!reader.expect_map(entry, entry_path)) continue;
    if (strict)
      reader.reject_unknown_keys(entry, entry_path, {"path", "permission", "protected_paths"});
    ContextPath context;
    if (!entry["path"]) {
      reader.error(entry, join_key(entry_path, "path"), "required key is missing");
      continue;
    }
    auto resolved = get_path(reader, entry["path"], join_key(entry_path, "path"), base_dir);
    if (!resolved) continue;
    context.path = *resolved;
    if (entry["permission"]) {
      auto permission = reader.get_string(entry["permission"], join_key(entry_path, "permission"));
      if (!permission) continue;
      if (*permission == "write") {
        context.writable = true;
      } else if (*permission != "read") {
        reader.error(entry["permission"], join_key(entry_path, "permission"),
                     "expected 'read' or 'write', found '" + *permission + "'");
        continue;
      }
    }
    if (const auto protected_list = entry["protected_paths"]) {
      const std::string protected_path = join_key(entry_path, "protected_paths");
      read_protected_paths(reader, protected_list, protected_path, context);
      if (!context.writable && !context.protected_paths.empty())
        config.warnings.push_back(reader.location(protected_list).str() + ": " + protected_path +
                                  ": the context path is read-only already; its protected paths "
                                  "change nothing");
    }
    out.push_back(std::move(context));
  }
}

AgentConfig read_agent_header(YamlReader& reader, const YAML::Node& node, const std::string& path) {
  AgentConfig agent;
  agent.key_path = path;
  agent.location = reader.location(node);
  const std::string id_path = join_key(path, "id");
  if (!node["id"]) {
    reader.error(node, id_path, "required key is missing");
  } else if (auto id = reader.get_string(node["id"], id_path)) {
    static const std::regex kIdPattern("[A-Za-z0-9][A-Za-z0-9_.-]{0,62}");
    if (std::regex_match(*id, kIdPattern)) {
      agent.id = *id;
    } else {
      reader.error(node["id"], id_path,
                   "agent id '" + *id +
                       "' must start with a letter or digit and contain only letters, digits, "
                       "'_', '.', '-' (at most 63 characters)");
    }
  }
  return agent;
}

namespace {

std::optional<PluginRef> read_plugin_ref(YamlReader& reader, const YAML::Node& node,
                                         const std::string& path) {
  if (!reader.expect_map(node, path)) return std::nullopt;
  reader.reject_unknown_keys(node, path, {"plugin", "settings"});
  PluginRef ref;
  if (!node["plugin"]) {
    reader.error(node, join_key(path, "plugin"), "required key is missing");
    return std::nullopt;
  }
  auto name = reader.get_string(node["plugin"], join_key(path, "plugin"));
  if (!name) return std::nullopt;
  if (name->empty()) {
    reader.error(node["plugin"], join_key(path, "plugin"), "plugin name is empty");
    return std::nullopt;
  }
  ref.plugin = *name;
  ref.plugin_key_path = join_key(path, "plugin");
  ref.plugin_location = reader.location(node["plugin"]);
  ref.key_path = join_key(path, "settings");
  ref.location = reader.location(node);
  if (const auto settings = node["settings"]) {
    if (!settings.IsNull()) {  // `settings:` with nothing after it means "no settings"
      if (!reader.expect_map(settings, ref.key_path)) return std::nullopt;
      ref.settings = to_json(settings);
      ref.location = reader.location(settings);
      reader.record_sources(settings, "", ref.key_path, ref.setting_sources);
    }
  }
  return ref;
}

std::optional<std::chrono::milliseconds> read_seconds(YamlReader& reader, const YAML::Node& node,
                                                      const std::string& path) {
  auto value = reader.get_number(node, path);
  if (!value) return std::nullopt;
  if (*value <= 0 || *value > 7 * 24 * 3600) {
    reader.error(
        node, path,
        "expected a number of seconds > 0 (at most a week), found '" + node.Scalar() + "'");
    return std::nullopt;
  }
  return std::chrono::milliseconds(static_cast<long long>(*value * 1000.0));
}

// An integer key of a section, bounded: each found key's value lands in its target.
struct Count {
  const char* key;
  std::size_t* target;
  long long min;
  long long max;
};
void read_counts(YamlReader& reader, const YAML::Node& node, const std::string& path,
                 std::initializer_list<Count> counts) {
  for (const Count& count : counts) {
    const auto value = node[count.key];
    if (!value) continue;
    const std::string key = join_key(path, count.key);
    if (auto number = reader.get_integer(value, key)) {
      if (*number < count.min || *number > count.max) {
        reader.error(value, key,
                     "expected an integer from " + std::to_string(count.min) + " to " +
                         std::to_string(count.max) + ", found '" + value.Scalar() + "'");
      } else {
        *count.target = static_cast<std::size_t>(*number);
      }
    }
  }
}

// `background:` of a native agent; each count has a floor that keeps the tools usable and a ceiling
// that keeps one agent's memory bounded.
void read_background(YamlReader& reader, const YAML::Node& node, const std::string& path,
                     BackgroundConfig& out) {
  if (!reader.expect_map(node, path)) return;
  reader.reject_unknown_keys(node, path,
                             {"enabled", "max_running", "max_output_lines", "max_output_bytes",
                              "max_retained", "kill_grace"});
  if (const auto value = node["enabled"]) {
    if (auto enabled = reader.get_bool(value, join_key(path, "enabled"))) out.enabled = *enabled;
  }
  read_counts(reader, node, path,
              {Count{"max_running", &out.max_running, 1, 1000},
               Count{"max_output_lines", &out.max_output_lines, 1, 1000000},
               // A line is cut at 64 KiB: the byte bound holds at least one.
               Count{"max_output_bytes", &out.max_output_bytes, 65536, 1LL << 30},
               Count{"max_retained", &out.max_retained, 0, 10000}});
  if (const auto value = node["kill_grace"]) {
    const std::string key = join_key(path, "kill_grace");
    if (auto seconds = reader.get_number(value, key)) {
      if (!(*seconds >= 0 && *seconds <= 3600)) {
        reader.error(value, key,
                     "expected a number of seconds from 0 to 3600, found '" + value.Scalar() + "'");
      } else {
        out.kill_grace = std::chrono::milliseconds(static_cast<long long>(*seconds * 1000.0));
      }
    }
  }
}

// `per_user:` of a native agent. The limits keep one server's engine and disk bounded; warm
// containers never outnumber the sandboxes allowed; one user's calls leave the workers to others.
void read_per_user(YamlReader& reader, const YAML::Node& node, const std::string& path,
                   const std::string& base_dir, PerUserConfig& out) {
  out.location = reader.location(node);
  if (!reader.expect_map(node, path)) return;
  reader.reject_unknown_keys(
      node, path,
      {"workspace_root", "max_users", "idle_stop", "idle_remove", "warm", "max_calls_per_user"});
  if (!node["workspace_root"]) {
    reader.error(node, join_key(path, "workspace_root"),
                 "required key is missing (where each user's workspace is made: "
                 "<workspace_root>/<user key>)");
  } else if (auto root = get_path(reader, node["workspace_root"], join_key(path, "workspace_root"),
                                  base_dir)) {
    if (*root == "/")
      reader.error(node["workspace_root"], join_key(path, "workspace_root"),
                   "'/' cannot hold the users' workspaces: name a directory of its own");
    else
      out.workspace_root = *root;
  }
  read_counts(reader, node, path,
              {Count{"max_users", &out.max_users, 1, 100000}, Count{"warm", &out.warm, 0, 1000},
               Count{"max_calls_per_user", &out.max_calls_per_user, 1, 4096}});
  if (out.warm > out.max_users)
    reader.error(node["warm"], join_key(path, "warm"),
                 "warm (" + std::to_string(out.warm) + ") is larger than max_users (" +
                     std::to_string(out.max_users) + "): warm containers count toward it");
  if (const auto value = node["idle_stop"]) {
    if (auto seconds = read_seconds(reader, value, join_key(path, "idle_stop")))
      out.idle_stop = *seconds;
  }
  if (const auto value = node["idle_remove"]) {
    if (auto seconds = read_seconds(reader, value, join_key(path, "idle_remove")))
      out.idle_remove = *seconds;
  }
}

void read_native_agent(YamlReader& reader, const YAML::Node& node, const std::string& path,
                       const std::string& base_dir, Config& config) {
  if (!reader.expect_map(node, path)) return;
  reader.reject_unknown_keys(
      node, path,
      {"id", "cwd", "per_user", "backend", "filters", "context_paths", "tools_dir", "skills_dir",
       "temp_workspace", "timeout", "max_timeout", "output_cap", "background"});
  AgentConfig agent = read_agent_header(reader, node, path);
  if (const auto per_user = node["per_user"]) {
    read_per_user(reader, per_user, join_key(path, "per_user"), base_dir, agent.per_user.emplace());
    if (node["cwd"])
      reader.error(node["cwd"], join_key(path, "cwd"),
                   "a per-user agent has no cwd: each user's workspace is "
                   "<per_user.workspace_root>/<user key>, seen as /workspace");
  } else if (!node["cwd"]) {
    reader.error(node, join_key(path, "cwd"), "required key is missing (the agent's workspace)");
  } else if (auto cwd = get_path(reader, node["cwd"], join_key(path, "cwd"), base_dir)) {
    agent.cwd = *cwd;
  }
  if (node["backend"]) {
    if (auto ref = read_plugin_ref(reader, node["backend"], join_key(path, "backend")))
      agent.backend = std::move(*ref);
  } else {
    agent.backend.plugin = "local";
    agent.backend.key_path = join_key(path, "backend");
    agent.backend.location = agent.location;
    agent.backend.plugin_key_path = agent.backend.key_path;
    agent.backend.plugin_location = agent.location;
  }
  // Whether the backend gives each user a sandbox is its own word (its isolated trait and
  // execmcp.sandbox/1), asked when the per-user template is built: build_per_user_template().
  if (const auto filters = node["filters"]) {
    const std::string filters_path = join_key(path, "filters");
    if (reader.expect_list(filters, filters_path)) {
      for (std::size_t i = 0; i < filters.size(); ++i) {
        if (auto ref = read_plugin_ref(reader, filters[i], index_key(filters_path, i)))
          agent.filters.push_back(std::move(*ref));
      }
    }
  }
  if (const auto context = node["context_paths"])
    read_context_paths(reader, context, join_key(path, "context_paths"), base_dir, true,
                       agent.context_paths, config);
  for (auto [key, target] :
       {std::pair{"tools_dir", &agent.tools_dir}, std::pair{"skills_dir", &agent.skills_dir},
        std::pair{"temp_workspace", &agent.temp_workspace}}) {
    if (const auto value = node[key]) {
      if (auto resolved = get_path(reader, value, join_key(path, key), base_dir))
        *target = *resolved;
    }
  }
  if (const auto value = node["timeout"]) {
    if (auto timeout = read_seconds(reader, value, join_key(path, "timeout")))
      agent.timeout = *timeout;
  }
  if (const auto value = node["max_timeout"]) {
    if (auto timeout = read_seconds(reader, value, join_key(path, "max_timeout")))
      agent.max_timeout = *timeout;
  }
  if (agent.timeout > agent.max_timeout)
    reader.error(node["timeout"] ? node["timeout"] : node, join_key(path, "timeout"),
                 "default timeout is larger than max_timeout");
  if (const auto value = node["output_cap"]) {
    if (auto cap = reader.get_integer(value, join_key(path, "output_cap"))) {
      if (*cap <= 0) {
        reader.error(value, join_key(path, "output_cap"),
                     "expected a number of bytes > 0, found '" + value.Scalar() + "'");
      } else {
        agent.output_cap = static_cast<std::size_t>(*cap);
      }
    }
  }
  if (const auto value = node["background"])
    read_background(reader, value, join_key(path, "background"), agent.background);
  config.agents.push_back(std::move(agent));
}

}  // namespace

void parse_native(const YAML::Node& root, YamlReader& reader, Config& config,
                  const std::string& base_dir) {
  reader.reject_unknown_keys(
      root, "", {"execmcp", "plugin_paths", "log_dir", "audit_file", "agents", "server"});
  if (auto version = reader.get_integer(root["execmcp"], "execmcp")) {
    if (*version != 1)
      reader.error(root["execmcp"], "execmcp",
                   "unsupported schema version " + std::to_string(*version) +
                       " (this execmcp reads version 1)");
  }
  if (const auto paths = root["plugin_paths"]) {
    if (reader.expect_list(paths, "plugin_paths")) {
      for (std::size_t i = 0; i < paths.size(); ++i) {
        if (auto resolved = get_path(reader, paths[i], index_key("plugin_paths", i), base_dir))
          config.plugin_paths.push_back(*resolved);
      }
    }
  }
  if (const auto value = root["log_dir"]) {
    if (auto resolved = get_path(reader, value, "log_dir", base_dir)) config.log_dir = *resolved;
  }
  if (const auto value = root["audit_file"]) {
    if (auto resolved = get_path(reader, value, "audit_file", base_dir))
      config.audit_file = *resolved;
  }
  const auto agents = root["agents"];
  if (!agents) {
    reader.error(root, "agents", "required key is missing (a list of agents)");
    return;
  }
  if (!reader.expect_list(agents, "agents")) return;
  if (agents.size() == 0) reader.error(agents, "agents", "the list of agents is empty");
  for (std::size_t i = 0; i < agents.size(); ++i)
    read_native_agent(reader, agents[i], index_key("agents", i), base_dir, config);
  if (const auto server = root["server"]) parse_server(server, reader, config, base_dir);
}

}  // namespace config_detail

namespace {

void apply_defaults(config_detail::YamlReader& reader, Config& config) {
  std::set<std::string> seen;
  for (auto& agent : config.agents) {
    if (!agent.id.empty() && !seen.insert(agent.id).second)
      reader.error_at(agent.location.line, config_detail::join_key(agent.key_path, "id"),
                      "duplicate agent id '" + agent.id + "'");
    if (agent.tools_dir.empty() && !agent.cwd.empty()) agent.tools_dir = agent.cwd + "/tools";
    if (agent.filters.empty() && agent.mcp_enabled)
      config.warnings.push_back("agent '" + agent.id +
                                "' has no filters: every command goes straight to the backend");
  }
}

}  // namespace

std::shared_ptr<const Config> load_config_text(const std::string& text, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) absolute = path;
  const std::string base_dir = absolute.parent_path().lexically_normal().string();

  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(
        {path + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error: " + e.msg});
  }
  auto config = std::make_shared<Config>();
  config->source_file = absolute.string();
  config_detail::YamlReader reader(path);
  if (!root.IsMap()) {
    throw ConfigError({path +
                       ": expected a map at the top (with 'execmcp: 1' and 'agents:', "
                       "or a MassGen 'agent:' / 'agents:'), found " +
                       config_detail::describe(root)});
  }
  if (root["execmcp"]) {
    config->schema = ConfigSchema::Native;
    config_detail::parse_native(root, reader, *config, base_dir);
  } else {
    config->schema = ConfigSchema::MassGen;
    config_detail::parse_massgen(root, reader, *config, base_dir);
  }
  apply_defaults(reader, *config);
  if (!reader.errors().empty()) throw ConfigError(reader.errors());
  return config;
}

std::shared_ptr<const Config> load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError({path + ": cannot open config file"});
  std::ostringstream text;
  text << in.rdbuf();
  return load_config_text(text.str(), path);
}

}  // namespace execmcp::host
