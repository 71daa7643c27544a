// The composition root of `execmcp serve`: the agent registry, the signal service and the server
// the options choose, built here and nowhere else.
#include "cli/serve_command.hpp"

#include <iostream>

#include <spdlog/spdlog.h>
#include <boost/dll/runtime_symbol_info.hpp>

#include "agent/agent_registry.hpp"
#include "auth/http_policy.hpp"
#include "cli/command_setup.hpp"
#include "cli/commands.hpp"
#include "common/signal_service.hpp"
#include "server/http_serve.hpp"
#include "transport/stdio/stdio_server.hpp"

namespace execmcp::host::cli {

namespace {

std::string program_path() {
  boost::dll::fs::error_code ec;
  const auto path = boost::dll::program_location(ec);
  return ec ? std::string("execmcp") : path.string();
}

// The parsed options with what the program adds: its version.
server::ServeOptions serve_options(const Arguments& args) {
  server::ServeOptions options = args.serve;
  options.session.server_version = version();
  return options;
}

void log_stdio_agent(const Arguments& args, const Config& config, ConfiguredAgent& agent) {
  const std::string filters = join(agent.filter_names(), ", ");
  if (args.massgen) {
    spdlog::info(
        "execmcp: serving agent '{}' (backend {}, filters: {}, workspace {}) on stdio, "
        "from MassGen's flags",
        agent.id(), agent.backend_name(), filters.empty() ? "none" : filters, agent.cwd());
  } else {
    spdlog::info(
        "execmcp: serving agent '{}' (backend {}, filters: {}, workspace {}) on stdio; "
        "point your MCP client's command at: {} serve --config {} --agent {}",
        agent.id(), agent.backend_name(), filters.empty() ? "none" : filters, agent.cwd(),
        program_path(), config.source_file, agent.id());
  }
}

// serve over stdio: a registry of one agent, started before serving.
int serve_on_stdio(const Arguments& args) {
  // Until the server installs its own handlers, and again while the agent stops.
  SignalService signals(SignalService::Mode::kNoteFirst);
  std::shared_ptr<const Config> config;
  auto agents = prepare_one_agent(args, signals, config);
  if (!agents) return 1;
  log_stdio_agent(args, *config, agents->configured(0));
  const server::ServeOptions options = serve_options(args);
  if (auto code = stop_if_signalled(signals, *agents)) return *code;
  int code = 1;
  try {
    // A registry of one ordinary agent (a per-user agent was refused): every caller gets it.
    const Resolution agent = agents->target(0).resolve("stdio");
    if (!agent.agent) throw std::runtime_error(agent.refusal);
    code = mcp::serve_stdio(*agent.agent, options.session);
  } catch (const std::exception& e) {
    spdlog::error("MCP server failed: {}", e.what());
  }
  agents->stop_all();
  spdlog::info("execmcp: agent '{}' stopped", agents->configured(0).id());
  return code;
}

// The agents serve --http serves: each --agent, or every agent of the config.
std::vector<const AgentConfig*> selected_agents(const Config& config, const Arguments& args) {
  std::vector<const AgentConfig*> selected;
  if (args.agent_ids.empty()) {
    for (const auto& agent : config.agents) selected.push_back(&agent);
  } else {
    for (const auto& id : args.agent_ids) selected.push_back(&config.select_agent(id));
  }
  return selected;
}

// Loads the config and builds its agents for serve --http (started too with --start-all, unless a
// signal came first); nullptr after printing the reason when any of that fails.
std::unique_ptr<AgentRegistry> prepare_http_agents(const Arguments& args,
                                                   const SignalService& signals,
                                                   std::shared_ptr<const Config>& config) {
  return reporting_failure([&]() -> std::unique_ptr<AgentRegistry> {
    config = load_config_logged(args);
    const auto selected = selected_agents(*config, args);
    auto agents = build_registry(*config, selected, args);
    // Built, not started: each backend says whether it isolates its commands.
    std::vector<std::string> not_isolated;
    for (std::size_t i = 0; i < agents->size(); ++i)
      if (!agents->target(i).traits().isolated) not_isolated.push_back(agents->target(i).id());
    if (std::string refusal = auth::unisolated_agents_refusal(*config, not_isolated);
        !refusal.empty()) {
      std::cerr << "error: " << refusal << "\n";
      return nullptr;
    }
    if (args.start_all) agents->start_all([&signals] { return signals.noted() == 0; });
    spdlog::info("execmcp: serving {} agent(s) over HTTP: {}", agents->size(),
                 join(agents->ids(), ", "));
    return agents;
  });
}

// serve --http: every agent of the config (or each --agent) in one process, each started on first
// use (or now, with --start-all).
int serve_on_http(const Arguments& args) {
  // Until the server installs its own handlers, and again while the agents stop.
  SignalService signals(SignalService::Mode::kNoteFirst);
  std::shared_ptr<const Config> config;
  auto agents = prepare_http_agents(args, signals, config);
  if (!agents) return 1;
  int code = 1;
  if (signals.noted() != 0) {
    code = 128 + signals.noted();
  } else {
    try {
      code = server::serve_http(*config, *agents, serve_options(args));
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
    }
  }
  agents->stop_all();
  spdlog::info("execmcp: {} agent(s) stopped", agents->size());
  return code;
}

}  // namespace

int command_serve(const Arguments& args) {
  return args.serve.http_address.empty() ? serve_on_stdio(args) : serve_on_http(args);
}

}  // namespace execmcp::host::cli
