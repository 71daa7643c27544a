// Every agent one execmcp process serves: built from the config, each started on its first use
// (or all at once), all stopped together.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/configured_agent.hpp"
#include "agent/lazy_agent.hpp"
#include "agent/user_sandboxes.hpp"
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
// agent() and the read-only queries from their own threads.
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

  // What the servers serve: its backend starts on the first call that needs it. Not for a
  // per-user agent (sandboxes()).
  [[nodiscard]] LazyAgent& agent(std::size_t index) { return *entries_[index].lazy; }
  [[nodiscard]] const LazyAgent& agent(std::size_t index) const { return *entries_[index].lazy; }
  // A per-user agent's sandboxes, one per user; null for an ordinary agent.
  [[nodiscard]] UserSandboxes* sandboxes(std::size_t index) const {
    return entries_[index].sandboxes.get();
  }
  // The agent itself (its backend's name, filters, workspace; start and shutdown). For a
  // per-user agent, its template: built to check the config, never started.
  [[nodiscard]] ConfiguredAgent& configured(std::size_t index) { return *entries_[index].agent; }
  // Whether its commands run in a sandbox (the backend's traits, asked once when built): a
  // started one owns a container (or a VM).
  [[nodiscard]] bool isolated(std::size_t index) const { return entries_[index].isolated; }

  // Starts each agent now, in order, while keep_going() (a signal may arrive meanwhile). Throws
  // std::runtime_error for the first that cannot start. Per-user agents start no sandbox here.
  void start_all(const std::function<bool()>& keep_going);
  // The per-user agents' timers and warm pools (the HTTP server, once it serves).
  void start_sandboxes();
  // Shuts every agent down (its shells ended, its container removed); each once.
  void stop_all() noexcept;

 private:
  struct Entry {
    std::unique_ptr<ConfiguredAgent> agent;
    std::unique_ptr<LazyAgent> lazy;           // over *agent: destroyed first; null when per-user
    std::unique_ptr<UserSandboxes> sandboxes;  // per-user only
    bool isolated = false;
  };
  // A per-user entry: its template and its sandboxes' builder.
  Entry build_per_user(const AgentConfig& agent_config, const AgentBuildOptions& options);

  std::shared_ptr<const Config> config_;           // what per-user sandboxes are built from
  std::unique_ptr<const PluginRegistry> plugins_;  // outlives every agent built from it
  std::vector<Entry> entries_;
};

}  // namespace execmcp::host
