// `execmcp serve --massgen ...`: MassGen's code-execution server flags, turned into a one-agent
// config with the same mapping as a MassGen YAML config.
#include "config/massgen_flags.hpp"

#include <algorithm>
#include <filesystem>
#include <regex>
#include <stdexcept>

#include "config/path_expansion.hpp"

namespace execmcp::host {

namespace {

enum class Kind { List, Value, Switch };

struct Flag {
  const char* name;
  Kind kind;
};

constexpr Flag kFlags[] = {
    {"--allowed-paths", Kind::List},    {"--execution-mode", Kind::Value},
    {"--agent-id", Kind::Value},        {"--instance-id", Kind::Value},
    {"--enable-sudo", Kind::Switch},    {"--allowed-commands", Kind::List},
    {"--blocked-commands", Kind::List}, {"--timeout", Kind::Value},
    {"--max-output-size", Kind::Value}, {"--local-skills-directory", Kind::Value},
};

constexpr const char* kSource = "serve --massgen";

std::string known_flags() {
  std::string text;
  for (const auto& flag : kFlags) text += (text.empty() ? "" : ", ") + std::string(flag.name);
  return text;
}

std::optional<long long> positive_integer(const std::string& text) {
  if (text.empty() || text.size() > 15 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const long long n = std::stoll(text);
  if (n <= 0) return std::nullopt;
  return n;
}

}  // namespace

const std::vector<std::string>& massgen_flag_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& flag : kFlags) out.emplace_back(flag.name);
    return out;
  }();
  return names;
}

ParsedMassgenFlags parse_massgen_flags(const std::vector<std::string>& argv) {
  ParsedMassgenFlags parsed;
  MassgenFlags& flags = parsed.flags;
  auto fail = [&](std::string message) {
    parsed.error = std::move(message);
    return parsed;
  };
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string word = argv[i];
    if (word.rfind("--", 0) != 0 || word.size() == 2)
      return fail("unexpected argument '" + word +
                  "' after --massgen (MassGen's flags: " + known_flags() + ")");
    std::optional<std::string> inline_value;
    if (const auto eq = word.find('='); eq != std::string::npos) {
      inline_value = word.substr(eq + 1);
      word.resize(eq);
    }
    // Exact name, else an unambiguous prefix (argparse's allow_abbrev).
    const Flag* flag = nullptr;
    std::vector<const Flag*> candidates;
    for (const auto& known : kFlags) {
      const std::string name = known.name;
      if (name == word) {
        flag = &known;
        break;
      }
      if (name.rfind(word, 0) == 0) candidates.push_back(&known);
    }
    if (flag == nullptr && candidates.size() == 1) flag = candidates.front();
    if (flag == nullptr && candidates.size() > 1) {
      std::string names;
      for (const auto* c : candidates) names += (names.empty() ? "" : ", ") + std::string(c->name);
      return fail("ambiguous MassGen flag '" + word + "' (could be " + names + ")");
    }
    if (flag == nullptr)
      return fail("unknown MassGen flag '" + word + "' (known: " + known_flags() + ")");
    const std::string name = flag->name;

    if (flag->kind == Kind::Switch) {
      if (inline_value) return fail(name + " takes no value");
      flags.enable_sudo = true;
      continue;
    }
    if (flag->kind == Kind::List) {
      std::vector<std::string> values;
      if (inline_value) {
        values.push_back(*inline_value);
      } else {
        while (i + 1 < argv.size() && argv[i + 1].rfind("--", 0) != 0) values.push_back(argv[++i]);
      }
      if (name == "--allowed-paths") flags.allowed_paths = std::move(values);
      if (name == "--allowed-commands") flags.allowed_commands = std::move(values);
      if (name == "--blocked-commands") flags.blocked_commands = std::move(values);
      continue;
    }
    std::string value;
    if (inline_value) {
      value = *inline_value;
    } else {
      if (i + 1 >= argv.size() || argv[i + 1].rfind("--", 0) == 0)
        return fail(name + " needs a value");
      value = argv[++i];
    }
    if (name == "--execution-mode") {
      if (value != "local" && value != "docker")
        return fail("--execution-mode must be local or docker, got '" + value + "'");
      flags.execution_mode = value;
    } else if (name == "--agent-id") {
      flags.agent_id = value;
    } else if (name == "--instance-id") {
      flags.instance_id = value;
    } else if (name == "--timeout" || name == "--max-output-size") {
      auto n = positive_integer(value);
      if (!n) return fail(name + " needs a whole number > 0, got '" + value + "'");
      (name == "--timeout" ? flags.timeout : flags.max_output_size) = *n;
    } else if (name == "--local-skills-directory") {
      flags.local_skills_directory = value;
    }
  }
  return parsed;
}

std::shared_ptr<const Config> massgen_flags_config(const MassgenFlags& flags,
                                                   const std::string& process_cwd) {
  namespace fs = std::filesystem;
  std::vector<std::string> problems;
  auto problem = [&](const std::string& flag, const std::string& message) {
    problems.push_back(std::string(kSource) + ": " + flag + ": " + message);
  };
  auto absolute = [&](const std::string& flag, const std::string& text) -> std::string {
    try {
      return expand_path(text, process_cwd);
    } catch (const std::invalid_argument& e) {
      problem(flag, e.what());
      return {};
    }
  };

  auto config = std::make_shared<Config>();
  config->schema = ConfigSchema::MassGen;
  config->source_file = kSource;
  AgentConfig agent;
  agent.key_path = "agent";
  agent.location = {kSource, 0};
  agent.mcp_enabled = true;

  agent.id = flags.agent_id.empty() ? "massgen" : flags.agent_id;
  static const std::regex kIdPattern("[A-Za-z0-9][A-Za-z0-9_.-]{0,62}");
  if (!std::regex_match(agent.id, kIdPattern))
    problem("--agent-id", "agent id '" + agent.id +
                              "' must start with a letter or digit and contain only letters, "
                              "digits, '_', '.', '-' (at most 63 characters)");

  if (flags.allowed_paths.empty()) {
    agent.cwd = fs::path(process_cwd).lexically_normal().string();
    config->warnings.push_back(std::string(kSource) +
                               ": no --allowed-paths: the workspace is the current directory " +
                               agent.cwd);
  } else {
    agent.cwd = absolute("--allowed-paths", flags.allowed_paths.front());
    for (std::size_t i = 1; i < flags.allowed_paths.size(); ++i) {
      // MassGen passes no permission here (its own mounts decide): read-only is the safe reading.
      ContextPath context;
      context.path = absolute("--allowed-paths", flags.allowed_paths[i]);
      agent.context_paths.push_back(std::move(context));
    }
  }
  agent.tools_dir = agent.cwd + "/tools";

  // As from a MassGen YAML config: sanitize first, then patterns when commands are listed.
  auto filter = [&](const char* plugin) {
    PluginRef ref;
    ref.plugin = plugin;
    ref.key_path = ref.plugin_key_path = "agent.backend";
    ref.location = ref.plugin_location = agent.location;
    return ref;
  };
  PluginRef sanitize = filter("sanitize");
  if (flags.enable_sudo) sanitize.settings["allow"] = {"sudo", "su", "chown", "chmod"};
  agent.filters.push_back(std::move(sanitize));
  PluginRef patterns = filter("patterns");
  for (auto [list, flag, setting] :
       {std::tuple{&flags.allowed_commands, "--allowed-commands", "allow"},
        std::tuple{&flags.blocked_commands, "--blocked-commands", "deny"}}) {
    if (list->empty()) continue;
    patterns.settings[setting] = *list;
    patterns.setting_sources[std::string("/") + setting] = {agent.location, flag};
  }
  if (!patterns.settings.empty()) agent.filters.push_back(std::move(patterns));

  agent.backend = filter(flags.execution_mode == "docker" ? "docker-api" : "local");
  if (flags.execution_mode == "docker") {
    // MassGen created the container (massgen-<agent_id>[-<instance_id>]): attach to it.
    if (flags.agent_id.empty())
      problem("--execution-mode docker needs --agent-id",
              "MassGen's container is named massgen-<agent_id>[-<instance_id>]");
    static const std::regex kInstancePattern("[A-Za-z0-9_.-]{1,63}");
    if (!flags.instance_id.empty() && !std::regex_match(flags.instance_id, kInstancePattern))
      problem("--instance-id", "'" + flags.instance_id +
                                   "' may contain only letters, digits, '_', '.', '-' (a container "
                                   "name's part)");
    std::string container = "massgen-" + flags.agent_id;
    if (!flags.instance_id.empty()) container += "-" + flags.instance_id;
    agent.backend.settings["container"] = container;
  }

  if (flags.timeout) {
    agent.timeout = std::chrono::seconds(*flags.timeout);
    if (*flags.timeout > 7 * 24 * 3600) problem("--timeout", "at most a week");
    agent.max_timeout = std::max(agent.max_timeout, agent.timeout);
  }
  if (flags.max_output_size) agent.output_cap = static_cast<std::size_t>(*flags.max_output_size);
  if (!flags.local_skills_directory.empty()) {
    agent.skills_dir = absolute("--local-skills-directory", flags.local_skills_directory);
    std::error_code ec;
    if (!agent.skills_dir.empty() && !fs::is_directory(agent.skills_dir, ec))
      problem("--local-skills-directory",
              "skills directory '" + agent.skills_dir + "' does not exist");
  }
  if (!problems.empty()) throw ConfigError(std::move(problems));
  config->agents.push_back(std::move(agent));
  return config;
}

}  // namespace execmcp::host
