// What the subcommands do first: load the config, scan the plugins, build the agents, and report
// every problem on stderr in the same words.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_registry.hpp"
#include "cli/arguments.hpp"
#include "common/signal_service.hpp"
#include "config/config.hpp"
#include "plugins/plugin_registry.hpp"

namespace execmcp::host::cli {

std::string join(const std::vector<std::string>& items, const char* separator);
void print_problems(const std::vector<std::string>& problems);

// The plugins in the default directories and the config's plugin_paths (none without a config).
PluginRegistry scan_plugins(const Config* config);

// With --strict, each MassGen key read but not acted on as an error; empty otherwise.
std::vector<std::string> strict_problems(const Config& config, const Arguments& args);

// Loads the config (or MassGen's flags) for serving, wipes the variables that held its tokens, and
// logs its warnings and the keys it does not act on. Throws ConfigError (also for those keys, with
// --strict).
std::shared_ptr<const Config> load_config_logged(const Arguments& args);

// Scans the plugins and builds each selected agent (not started). Throws like build_agent.
std::unique_ptr<AgentRegistry> build_registry(const Config& config,
                                              const std::vector<const AgentConfig*>& selected,
                                              const Arguments& args);

// Runs `prepare` (which loads a config and builds agents); on a ConfigError its problems, on
// another exception its message, go to stderr in the subcommands' words and nullptr comes back.
std::unique_ptr<AgentRegistry> reporting_failure(
    const std::function<std::unique_ptr<AgentRegistry>()>& prepare);

// Loads the config, scans plugins, builds and starts the agent --agent names (not started when
// `signals` noted one first); nullptr after printing the reason when any of that fails. Call
// stop_if_signalled() after.
std::unique_ptr<AgentRegistry> prepare_one_agent(const Arguments& args,
                                                 const SignalService& signals,
                                                 std::shared_ptr<const Config>& config);

// When `signals` noted one (while the agent started, or since): stops the agent and returns the
// exit code, 128 + the signal.
std::optional<int> stop_if_signalled(const SignalService& signals, AgentRegistry& agents);

}  // namespace execmcp::host::cli
