// The execmcp subcommands (serve, exec, check-config, plugins) behind main().
#include "cli/commands.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <boost/dll/runtime_symbol_info.hpp>

#include "agent/spdlog_sink.hpp"
#include "auth/http_policy.hpp"
#include "cli/arguments.hpp"
#include "common/signal_service.hpp"
#include "config/config.hpp"
#include "config/massgen_flags.hpp"
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

// serve --http's defaults for --max-concurrent and --max-queued-calls (stdio: 8 and 16).
constexpr std::size_t kHttpDefaultMaxConcurrent = 64;
constexpr std::size_t kHttpDefaultMaxQueued = 64;

void setup_logging(const std::string& level, const std::string& fallback) {
  // stdout belongs to MCP: every log line goes to stderr, bounded and escaped.
  install_server_logger(std::make_shared<spdlog::sinks::stderr_color_sink_mt>(),
                        spdlog::level::from_str(level.empty() ? fallback : level));
}

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

void log_registry_problems(const PluginRegistry& registry) {
  for (const auto& warning : registry.warnings()) spdlog::warn("plugins: {}", warning);
  for (const auto& error : registry.errors()) spdlog::warn("plugins: {}", error);
}

std::string program_path() {
  boost::dll::fs::error_code ec;
  const auto path = boost::dll::program_location(ec);
  return ec ? std::string("execmcp") : path.string();
}

// When the signals noted one (while the agent started, or since): stops the agent and returns the
// exit code, 128 + the signal.
std::optional<int> stop_if_signalled(const SignalService& signals, ConfiguredAgent& agent) {
  const int signal_number = signals.noted();
  if (signal_number == 0) return std::nullopt;
  spdlog::info("execmcp: {} while agent '{}' was starting; stopping it",
               signal_number == SIGINT ? "SIGINT" : "SIGTERM", agent.id());
  agent.shutdown();
  return 128 + signal_number;
}

// With --strict, each MassGen key read but not acted on as an error; empty otherwise.
std::vector<std::string> strict_problems(const Config& config, const Arguments& args) {
  std::vector<std::string> problems;
  if (!args.strict) return problems;
  for (const auto& entry : config.ignored)
    problems.push_back(entry.str() + " is not acted on by execmcp (--strict)");
  return problems;
}

// Loads the config and logs its warnings and the keys it does not act on. Throws ConfigError
// (also for those keys, with --strict).
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

// Scans the plugins and builds each selected agent (not started). Throws like build_agent.
std::vector<std::unique_ptr<ConfiguredAgent>> build_agents(
    const Config& config, const std::vector<const AgentConfig*>& selected, const Arguments& args) {
  PluginRegistry registry = scan_plugins(&config);
  log_registry_problems(registry);
  AgentBuildOptions options;
  options.audit_file = args.audit_file;
  std::vector<std::unique_ptr<ConfiguredAgent>> agents;
  for (const auto* agent : selected)
    agents.push_back(build_agent(config, *agent, registry, options));
  return agents;
}

// Loads the config, scans plugins, builds and starts the selected agent (not started when a
// signal arrived first); nullptr after printing the reason when any of that fails. Call
// stop_if_signalled() after.
std::unique_ptr<ConfiguredAgent> prepare_agent(const Arguments& args, const SignalService& signals,
                                               std::shared_ptr<const Config>& config) {
  try {
    config = load_config_logged(args);
    auto agent = std::move(build_agents(*config, {&config->select_agent(args.agent_id)}, args)[0]);
    if (signals.noted() == 0) agent->start();
    return agent;
  } catch (const ConfigError& e) {
    print_problems(e.problems());
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
  }
  return nullptr;
}

ServeRequest serve_request(const Arguments& args) {
  ServeRequest request;
  request.server_version = EXECMCP_VERSION;
  if (args.max_concurrent) request.max_concurrent = *args.max_concurrent;
  request.finish_calls_on_eof = args.finish_on_eof;
  request.max_message_bytes = args.max_message_bytes;
  request.max_message_values = args.max_message_values;
  request.max_outbound_bytes = args.max_outbound_bytes;
  request.max_queued_calls = args.max_queued_calls;
  request.http_address = args.http_address;
  request.tls_cert_file = args.tls_cert_file;
  request.tls_key_file = args.tls_key_file;
  request.insecure_no_auth = args.insecure_no_auth;
  request.max_connections = args.max_connections;
  request.max_calls_per_agent = args.max_calls_per_agent;
  return request;
}

// serve --http: every agent of the config (or each --agent) in one process. Agents are built
// here and started on first use (or now, with --start-all); each is shut down (its container
// removed) when serving ends.
int command_serve_http(const Arguments& args, const HttpServeFunction& serve_http) {
  if (!serve_http) {
    std::cerr << "error: this execmcp was built without the HTTP server\n";
    return 1;
  }
  // Until the server installs its own handlers, and again while the agents stop.
  SignalService signals(SignalService::Mode::kNoteFirst);
  std::shared_ptr<const Config> config;
  std::vector<std::unique_ptr<ConfiguredAgent>> agents;
  try {
    config = load_config_logged(args);
    std::vector<const AgentConfig*> selected;
    if (args.agent_ids.empty()) {
      for (const auto& agent : config->agents) selected.push_back(&agent);
    } else {
      for (const auto& id : args.agent_ids) selected.push_back(&config->select_agent(id));
    }
    std::vector<std::string> ids;
    for (const auto* agent : selected) ids.push_back(agent->id);
    if (std::string refusal = auth::local_agents_refusal(*config, args.agent_ids);
        !refusal.empty()) {
      std::cerr << "error: " << refusal << "\n";
      return 1;
    }
    agents = build_agents(*config, selected, args);
    for (auto& agent : agents) {
      if (args.start_all && signals.noted() == 0) agent->start();
    }
    spdlog::info("execmcp: serving {} agent(s) over HTTP: {}", agents.size(), join(ids, ", "));
  } catch (const ConfigError& e) {
    print_problems(e.problems());
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  std::vector<ConfiguredAgent*> served;
  for (auto& agent : agents) served.push_back(agent.get());
  int code = 1;
  if (signals.noted() != 0) {
    code = 128 + signals.noted();
  } else {
    try {
      ServeRequest request = serve_request(args);
      // One process for many agents: more calls at once than one agent's stdio server needs.
      if (!args.max_concurrent) request.max_concurrent = kHttpDefaultMaxConcurrent;
      if (!args.max_queued_calls) request.max_queued_calls = kHttpDefaultMaxQueued;
      code = serve_http(*config, served, request);
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
    }
  }
  for (auto& agent : agents) agent->shutdown();
  spdlog::info("execmcp: {} agent(s) stopped", agents.size());
  return code;
}

int command_serve(const Arguments& args, const ServeFunction& serve) {
  if (!serve) {
    std::cerr << "error: this execmcp was built without the MCP server\n";
    return 1;
  }
  // Until the server installs its own handlers, and again while the agent stops.
  SignalService signals(SignalService::Mode::kNoteFirst);
  std::shared_ptr<const Config> config;
  auto agent = prepare_agent(args, signals, config);
  if (!agent) return 1;
  const std::string filters = join(agent->filter_names(), ", ");
  if (args.massgen) {
    spdlog::info(
        "execmcp: serving agent '{}' (backend {}, filters: {}, workspace {}) on stdio, "
        "from MassGen's flags",
        agent->id(), agent->backend_name(), filters.empty() ? "none" : filters, agent->cwd());
  } else {
    spdlog::info(
        "execmcp: serving agent '{}' (backend {}, filters: {}, workspace {}) on stdio; "
        "point your MCP client's command at: {} serve --config {} --agent {}",
        agent->id(), agent->backend_name(), filters.empty() ? "none" : filters, agent->cwd(),
        program_path(), config->source_file, agent->id());
  }
  ServeRequest request = serve_request(args);
  if (auto code = stop_if_signalled(signals, *agent)) return *code;
  int code = 1;
  try {
    code = serve(*agent, request);
  } catch (const std::exception& e) {
    spdlog::error("MCP server failed: {}", e.what());
  }
  agent->shutdown();
  spdlog::info("execmcp: agent '{}' stopped", agent->id());
  return code;
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
  auto agent = prepare_agent(args, signals, config);
  if (!agent) return 1;
  if (auto code = stop_if_signalled(signals, *agent)) return *code;
  ExecuteArgs exec;
  exec.principal = "cli";
  exec.command = join(args.exec_command, " ");
  exec.work_dir = args.work_dir;
  if (args.timeout_seconds)
    exec.timeout = std::chrono::milliseconds(static_cast<long long>(*args.timeout_seconds * 1000));
  const ExecuteOutcome outcome = execute_cancellable(*agent, exec);
  agent->shutdown();

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
  std::cout << args.config_file << ": " << schema_name(config->schema) << " config, "
            << config->agents.size() << (config->agents.size() == 1 ? " agent" : " agents") << "\n";
  for (const auto& agent : config->agents) {
    std::vector<std::string> filters;
    for (const auto& filter : agent.filters) filters.push_back(filter.plugin);
    std::cout << "  agent '" << agent.id << "': backend " << agent.backend.plugin
              << ", filters: " << (filters.empty() ? "none" : join(filters, " -> "))
              << ", workspace " << (agent.cwd.empty() ? "(none)" : agent.cwd) << ", timeout "
              << agent.timeout.count() / 1000.0 << "s (max " << agent.max_timeout.count() / 1000.0
              << "s)";
    if (!agent.context_paths.empty())
      std::cout << ", " << agent.context_paths.size() << " context path(s)";
    if (!agent.mcp_enabled) std::cout << " [MCP command line disabled]";
    std::cout << "\n";
  }
  for (const auto& warning : config->warnings) std::cout << "warning: " << warning << "\n";

  // Instantiate (never start) each agent's plugins so their settings errors show up now.
  PluginRegistry registry = scan_plugins(config.get());
  for (const auto& warning : registry.warnings()) std::cout << "warning: " << warning << "\n";
  std::vector<std::string> problems;
  std::vector<std::string> capabilities;  // what each agent's tools will be, once all is OK
  for (const auto& agent : config->agents) {
    if (!agent.mcp_enabled) continue;
    try {
      AgentBuildOptions options;
      options.touch_filesystem = false;
      const auto built = build_agent(*config, agent, registry, options);
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

int run(const std::vector<std::string>& argv, const ServeFunction& serve,
        const HttpServeFunction& serve_http) {
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
  if (args.command == "serve" && !args.http_address.empty())
    return command_serve_http(args, serve_http);
  if (args.command == "serve") return command_serve(args, serve);
  if (args.command == "exec") return command_exec(args);
  if (args.command == "check-config") return command_check_config(args);
  return command_plugins(args);
}

}  // namespace execmcp::host::cli
