// The execmcp subcommands behind main(): exec, check-config and plugins here, serve in
// serve_command.cpp.
#include "cli/commands.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "agent/spdlog_sink.hpp"
#include "cli/arguments.hpp"
#include "cli/command_setup.hpp"
#include "cli/serve_command.hpp"
#include "common/signal_service.hpp"
#include "config/config.hpp"
#include "execmcp/sdk/log_text.hpp"
#include "plugins/plugin_registry.hpp"

#ifndef EXECMCP_VERSION
#define EXECMCP_VERSION "0.0.0"
#endif

namespace execmcp::host::cli {

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitBlocked = 126;      // like a shell's "cannot execute"
constexpr int kExitCouldNotRun = 125;  // the backend could not run the command at all
constexpr int kExitTimedOut = 124;     // like timeout(1)

void setup_logging(const std::string& level, const std::string& fallback) {
  // stdout belongs to MCP: every log line goes to stderr, bounded and escaped.
  install_server_logger(std::make_shared<spdlog::sinks::stderr_color_sink_mt>(),
                        spdlog::level::from_str(level.empty() ? fallback : level));
}

// Runs the command; SIGINT/SIGTERM meanwhile cancel it (the agent stops after, as usual).
ExecuteOutcome execute_cancellable(ConfiguredAgent& agent, const ExecuteArgs& exec) {
  sdk::CancelToken cancel;
  const SignalService signals(SignalService::Mode::kForward);
  std::thread watcher([&] { signals.watch([&] { cancel.request_cancel(); }); });
  ExecuteOutcome outcome = agent.execute(exec, nullptr, &cancel);
  signals.wake();
  watcher.join();
  return outcome;
}

int command_exec(const Arguments& args) {
  // Until the command runs, and again while the agent stops.
  SignalService signals(SignalService::Mode::kNoteFirst);
  std::shared_ptr<const Config> config;
  auto agents = prepare_one_agent(args, signals, config);
  if (!agents) return 1;
  if (auto code = stop_if_signalled(signals, *agents)) return *code;
  ExecuteArgs exec;
  exec.principal = "cli";
  exec.command = join(args.exec_command, " ");
  exec.work_dir = args.work_dir;
  if (args.timeout_seconds)
    exec.timeout = std::chrono::milliseconds(static_cast<long long>(*args.timeout_seconds * 1000));
  const ExecuteOutcome outcome = execute_cancellable(agents->configured(0), exec);
  agents->stop_all();

  const auto& result = outcome.result;
  std::fwrite(result.stdout_data.data(), 1, result.stdout_data.size(), stdout);
  std::fflush(stdout);
  std::fwrite(result.stderr_data.data(), 1, result.stderr_data.size(), stderr);
  for (const auto& notice : result.notices) std::cerr << "execmcp: note: " << notice << "\n";
  if (result.stdout_truncated) std::cerr << "execmcp: note: stdout was truncated\n";
  if (result.stderr_truncated) std::cerr << "execmcp: note: stderr was truncated\n";
  if (outcome.blocked) {
    std::cerr << "execmcp: blocked by the '" << outcome.blocked_by << "' filter (rule '"
              << outcome.rule << "'): " << outcome.reason << "\n";
    return kExitBlocked;
  }
  if (!result.error.empty()) {
    std::cerr << "execmcp: " << result.error << "\n";
    return kExitCouldNotRun;
  }
  if (result.timed_out) {
    std::cerr << "execmcp: the command timed out\n";
    return kExitTimedOut;
  }
  if (result.cancelled) {
    std::cerr << "execmcp: the command was cancelled\n";
    return 130;
  }
  return result.exit_code >= 0 ? result.exit_code : kExitCouldNotRun;
}

// The plugins' own checks of an agent's settings (SDK 2.1), each problem at its config line: for
// an agent that serve would refuse for another reason (no MCP command line), so that a bad
// setting shows before someone enables it. A plugin that is not there is named, as a build would.
std::vector<std::string> agent_settings_problems(const AgentConfig& agent,
                                                 const PluginRegistry& registry) {
  std::vector<std::string> problems;
  auto check = [&](const PluginRef& ref, sdk::PluginKind kind) {
    if (ref.plugin.empty()) return;
    if (auto why = registry.absent(ref.plugin, kind); !why.empty()) {
      problems.push_back(ref.plugin_location.str() + ": " + ref.plugin_key_path + ": " + why);
      return;
    }
    const auto found = plugin_settings_problems(ref, kind, registry);
    problems.insert(problems.end(), found.begin(), found.end());
  };
  check(agent.backend, sdk::PluginKind::Backend);
  for (const auto& filter : agent.filters) check(filter, sdk::PluginKind::Filter);
  return problems;
}

int command_check_config(const Arguments& args) {
  std::shared_ptr<const Config> config;
  try {
    config = load_config(args.config_file);
    if (auto problems = strict_problems(*config, args); !problems.empty())
      throw ConfigError(std::move(problems));
  } catch (const ConfigError& e) {
    print_problems(e.problems());
    return 1;
  }
  // The plugins are read first: each describes its own settings (SDK 2.4).
  PluginRegistry registry = scan_plugins(config.get());
  std::cout << args.config_file << ": " << schema_name(config->schema) << " config, "
            << config->agents.size() << (config->agents.size() == 1 ? " agent" : " agents") << "\n";
  for (const auto& agent : config->agents) {
    std::vector<std::string> filters;
    for (const auto& filter : agent.filters) filters.push_back(filter.plugin);
    std::cout << "  agent '" << agent.id << "': backend " << agent.backend.plugin
              << ", filters: " << (filters.empty() ? "none" : join(filters, " -> "))
              << ", workspace "
              << (agent.per_user
                      ? agent.per_user->workspace_root + "/<user key> (seen as /workspace)"
                  : agent.cwd.empty() ? "(none)"
                                      : agent.cwd)
              << ", timeout " << agent.timeout.count() / 1000.0 << "s (max "
              << agent.max_timeout.count() / 1000.0 << "s)";
    if (!agent.context_paths.empty())
      std::cout << ", " << agent.context_paths.size() << " context path(s)";
    if (!agent.mcp_enabled) std::cout << " [MCP command line disabled]";
    std::cout << "\n";
    for (const auto& line : registry.describe_settings(
             agent.backend.plugin, sdk::PluginKind::Backend, agent.backend.settings.dump()))
      std::cout << "    " << sdk::log_text(line, 1024) << "\n";
    if (const auto& per_user = agent.per_user) {
      std::cout << "    per user: a sandbox per authenticated HTTP user, at most "
                << per_user->max_users << "; stopped after " << per_user->idle_stop.count() / 1000.0
                << "s without a call, removed after " << per_user->idle_remove.count() / 1000.0
                << "s stopped (workspaces kept); " << per_user->warm << " warm; calls per user: "
                << (per_user->max_calls_per_user == 0
                        ? std::string("a quarter of --max-concurrent")
                        : std::to_string(per_user->max_calls_per_user))
                << "\n";
    }
  }
  for (const auto& warning : config->warnings) std::cout << "warning: " << warning << "\n";

  // Instantiate (never start) each agent's plugins so their settings errors show up now.
  for (const auto& warning : registry.warnings()) std::cout << "warning: " << warning << "\n";
  std::vector<std::string> problems;
  std::vector<std::string> capabilities;  // what each agent's tools will be, once all is OK
  for (const auto& agent : config->agents) {
    if (!agent.mcp_enabled) {
      const auto found = agent_settings_problems(agent, registry);
      problems.insert(problems.end(), found.begin(), found.end());
      continue;
    }
    try {
      AgentBuildOptions options;
      options.touch_filesystem = false;
      const auto built = agent.per_user ? build_per_user_template(*config, agent, registry, options)
                                        : build_agent(*config, agent, registry, options);
      std::string line = "  agent '" + agent.id + "': background shells ";
      if (built->capabilities().background)
        line += "on (at most " + std::to_string(agent.background.max_running) + " running)";
      else if (!agent.background.enabled)
        line += "off (background.enabled: false)";
      else
        line += "off (backend " + agent.backend.plugin + " does not offer execmcp.background/1)";
      capabilities.push_back(std::move(line));
    } catch (const ConfigError& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    } catch (const std::exception& e) {
      problems.push_back(config->source_file + ": agent '" + agent.id + "': " + e.what());
    }
  }
  if (!problems.empty()) {
    // Unloadable files matter only when a plugin the config names was not found.
    for (const auto& error : registry.errors()) std::cerr << "note: " << error << "\n";
    print_problems(problems);
    return 1;
  }
  std::cout << args.config_file << ": OK\n";
  if (!capabilities.empty()) {
    std::cout << "capabilities:\n";
    for (const auto& line : capabilities) std::cout << line << "\n";
  }
  if (!config->ignored.empty()) {
    std::cout << "read but not acted on (" << config->ignored.size()
              << "; --strict makes these errors):\n";
    for (const auto& entry : config->ignored) std::cout << "  " << entry.str() << "\n";
  }
  return 0;
}

int command_plugins(const Arguments& args) {
  std::shared_ptr<const Config> config;
  if (!args.config_file.empty()) {
    try {
      config = load_config(args.config_file);
    } catch (const ConfigError& e) {
      print_problems(e.problems());
      return 1;
    }
  }
  PluginRegistry registry = scan_plugins(config.get());
  for (const auto& info : registry.plugins()) {
    std::printf("%-16s %-8s %-10s ABI %u.%u  %s\n", info.name.c_str(), kind_name(info.kind),
                info.version.c_str(), info.abi_major, info.abi_minor, info.file.c_str());
    if (!info.description.empty()) std::printf("%-16s %s\n", "", info.description.c_str());
  }
  std::fflush(stdout);
  for (const auto& warning : registry.warnings()) std::cerr << "warning: " << warning << "\n";
  for (const auto& error : registry.errors()) std::cerr << "error: " << error << "\n";
  if (registry.plugins().empty()) {
    std::cerr << "no plugins found (searched: "
              << join(PluginRegistry::default_search_dirs(config ? config->plugin_paths
                                                                 : std::vector<std::string>{}),
                      ", ")
              << ")\n";
    return 1;
  }
  return 0;
}

}  // namespace

const char* version() {
  return EXECMCP_VERSION;
}

int run(const std::vector<std::string>& argv) {
  const ParsedArguments parsed = parse_arguments(argv);
  if (!parsed.error.empty()) {
    std::cerr << "execmcp: " << parsed.error << "\n\n" << usage_text();
    return kExitUsage;
  }
  const Arguments& args = parsed.arguments;
  if (args.command == "help") {
    std::cout << "execmcp " << EXECMCP_VERSION << ": a code-execution MCP server for AI agents\n\n"
              << usage_text();
    return 0;
  }
  if (args.command == "version") {
    std::cout << "execmcp " << EXECMCP_VERSION << " (plugin ABI " << sdk::kAbiMajor << "."
              << sdk::kAbiMinor << ", " << sdk::kCompilerId << ")\n";
    return 0;
  }
  // Only serve logs at info by default; exec's stderr should be the command's own.
  const bool quiet = args.command != "serve";
  setup_logging(args.log_level, quiet ? "warn" : "info");
  if (args.command == "serve") return command_serve(args);
  if (args.command == "exec") return command_exec(args);
  if (args.command == "check-config") return command_check_config(args);
  return command_plugins(args);
}

}  // namespace execmcp::host::cli
