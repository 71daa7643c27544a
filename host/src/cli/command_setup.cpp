// Loading, building and reporting shared by the subcommands (see command_setup.hpp).
#include "cli/command_setup.hpp"

#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <spdlog/spdlog.h>

#include "config/massgen_flags.hpp"

namespace execmcp::host::cli {

namespace {

void log_registry_problems(const PluginRegistry& registry) {
  for (const auto& warning : registry.warnings()) spdlog::warn("plugins: {}", warning);
  for (const auto& error : registry.errors()) spdlog::warn("plugins: {}", error);
}

// Wipes, then unsets, each environment variable that held a token. unsetenv() alone only drops
// the pointer: the value stays in the block the process started with, which
// /proc/<pid>/environ shows (and environ still points into it for variables never changed). Every
// entry of the name is wiped, in case the environment held it twice.
void wipe_secret_env(const std::vector<std::string>& names) {
  for (const auto& name : names) {
    const std::string prefix = name + "=";
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
      if (std::strncmp(*entry, prefix.c_str(), prefix.size()) != 0) continue;
      char* value = *entry + prefix.size();
      ::explicit_bzero(value, std::strlen(value));
    }
    ::unsetenv(name.c_str());
  }
}

}  // namespace

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

void print_problems(const std::vector<std::string>& problems) {
  for (const auto& problem : problems) std::cerr << "error: " << problem << "\n";
}

PluginRegistry scan_plugins(const Config* config) {
  PluginRegistry registry;
  std::vector<std::string> from_config;
  if (config != nullptr) from_config = config->plugin_paths;
  registry.scan(PluginRegistry::default_search_dirs(from_config), from_config);
  return registry;
}

std::vector<std::string> strict_problems(const Config& config, const Arguments& args) {
  std::vector<std::string> problems;
  if (!args.strict) return problems;
  for (const auto& entry : config.ignored)
    problems.push_back(entry.str() + " is not acted on by execmcp (--strict)");
  return problems;
}

std::shared_ptr<const Config> load_config_logged(const Arguments& args) {
  std::shared_ptr<const Config> config;
  if (args.massgen) {
    std::error_code ec;
    const auto cwd = std::filesystem::current_path(ec);
    if (ec)
      throw ConfigError({"serve --massgen: cannot read the current directory: " + ec.message()});
    config = massgen_flags_config(*args.massgen, cwd.string());
  } else {
    config = load_config(args.config_file);
  }
  // The tokens are hashed now. Commands (a local agent's inherit our environment) must never see
  // the variables that held server.tokens, nor anyone reading /proc/<pid>/environ, though only
  // serve --http uses the tokens.
  if (config->server) wipe_secret_env(config->server->secret_env);
  if (auto problems = strict_problems(*config, args); !problems.empty())
    throw ConfigError(std::move(problems));
  for (const auto& warning : config->warnings) spdlog::warn("{}", warning);
  for (const auto& entry : config->ignored) spdlog::info("not acted on: {}", entry.str());
  return config;
}

std::unique_ptr<AgentRegistry> build_registry(const Config& config,
                                              const std::vector<const AgentConfig*>& selected,
                                              const Arguments& args) {
  PluginRegistry plugins = scan_plugins(&config);
  log_registry_problems(plugins);
  AgentBuildOptions options;
  options.audit_file = args.audit_file;
  return std::make_unique<AgentRegistry>(config, selected, std::move(plugins), options);
}

std::unique_ptr<AgentRegistry> reporting_failure(
    const std::function<std::unique_ptr<AgentRegistry>()>& prepare) {
  try {
    return prepare();
  } catch (const ConfigError& e) {
    print_problems(e.problems());
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
  }
  return nullptr;
}

std::unique_ptr<AgentRegistry> prepare_one_agent(const Arguments& args,
                                                 const SignalService& signals,
                                                 std::shared_ptr<const Config>& config) {
  return reporting_failure([&] {
    config = load_config_logged(args);
    const AgentConfig& agent = config->select_agent(args.agent_id);
    if (agent.per_user)
      throw std::runtime_error(
          agent.location.str() + ": agent '" + agent.id +
          "' is per-user (per_user:): it gives each authenticated HTTP user a sandbox of their "
          "own, and stdio or a one-off command has a single user. Serve it with --http, or give "
          "this use an ordinary agent (cwd: instead of per_user:)");
    auto agents = build_registry(*config, {&agent}, args);
    agents->start_all([&signals] { return signals.noted() == 0; });
    return agents;
  });
}

std::optional<int> stop_if_signalled(const SignalService& signals, AgentRegistry& agents) {
  const int signal_number = signals.noted();
  if (signal_number == 0) return std::nullopt;
  spdlog::info("execmcp: {} while agent '{}' was starting; stopping it",
               signal_number == SIGINT ? "SIGINT" : "SIGTERM", agents.configured(0).id());
  agents.stop_all();
  return 128 + signal_number;
}

}  // namespace execmcp::host::cli
