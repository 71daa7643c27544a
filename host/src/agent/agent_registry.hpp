// Every agent one execmcp process serves: built from the config, each started on its first use
// (or all at once), all stopped together.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/agent_target.hpp"
#include "agent/configured_agent.hpp"
#include "config/config.hpp"
#include "plugins/plugin_registry.hpp"

namespace execmcp::host {

// A per-user agent's template: built as one user's sandbox would be (workspace_root as its
// workspace, seen as /workspace), never started. Throws like build_agent, and ConfigError when its
// backend cannot stop and start a sandbox again (execmcp.sandbox/1).
std::unique_ptr<ConfiguredAgent> build_per_user_template(const Config& config,
                                                         const AgentConfig& agent,
                                                         const PluginRegistry& plugins,
                                                         AgentBuildOptions options);

// Serving over stdio is a registry of one. Built and stopped on the main thread; the servers use
// target() and the read-only queries from their own threads.
class AgentRegistry {
 public:
  // Builds (never starts) each selected agent through the plugins, which it keeps (per-user
  // agents make sandboxes as users come). Throws like build_agent (ConfigError naming the config
  // line, or std::exception); a per-user agent whose backend cannot stop and resume its sandbox
  // is a ConfigError.
  AgentRegistry(const Config& config, const std::vector<const AgentConfig*>& selected,
                PluginRegistry plugins, const AgentBuildOptions& options);
  // stop_all().
  ~AgentRegistry();
  AgentRegistry(const AgentRegistry&) = delete;
  AgentRegistry& operator=(const AgentRegistry&) = delete;

  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] std::vector<std::string> ids() const;

  // What agent `index` resolves to: one agent, or a per-user agent's sandboxes.
  [[nodiscard]] AgentTarget& target(std::size_t index) const { return *entries_[index]; }
  // The agent itself (its backend's name, filters, workspace). For a per-user agent, its
  // template: built to check the config, never started.
  [[nodiscard]] ConfiguredAgent& configured(std::size_t index) const {
    return entries_[index]->configured();
  }

  // Starts each agent now, in order, while keep_going() (a signal may arrive meanwhile). Throws
  // std::runtime_error for the first that cannot start. Per-user agents start no sandbox here.
  void start_all(const std::function<bool()>& keep_going);
  // Each target's own threads: the per-user agents' timers and warm pools (the HTTP server, once
  // it serves).
  void start_background();
  // Shuts every agent down (its shells ended, its container removed); each once.
  void stop_all() noexcept;

 private:
  // A per-user agent: its template and its sandboxes' builder.
  std::unique_ptr<AgentTarget> build_per_user(const AgentConfig& agent_config,
                                              const AgentBuildOptions& options);

  std::shared_ptr<const Config> config_;           // what per-user sandboxes are built from
  std::unique_ptr<const PluginRegistry> plugins_;  // outlives every agent built from it
  std::vector<std::unique_ptr<AgentTarget>> entries_;
};

}  // namespace execmcp::host
