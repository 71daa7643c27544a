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
#include "config/config.hpp"
#include "plugins/plugin_registry.hpp"

namespace execmcp::host {

// Serving over stdio is a registry of one. Built and stopped on the main thread; the servers use
// agent() and the read-only queries from their own threads.
class AgentRegistry {
 public:
  // Builds (never starts) each selected agent through the plugins. Throws like build_agent
  // (ConfigError naming the config line, or std::exception).
  AgentRegistry(const Config& config, const std::vector<const AgentConfig*>& selected,
                const PluginRegistry& plugins, const AgentBuildOptions& options);
  // stop_all().
  ~AgentRegistry();
  AgentRegistry(const AgentRegistry&) = delete;
  AgentRegistry& operator=(const AgentRegistry&) = delete;

  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] std::vector<std::string> ids() const;

  // What the servers serve: its backend starts on the first call that needs it.
  [[nodiscard]] LazyAgent& agent(std::size_t index) { return *entries_[index].lazy; }
  [[nodiscard]] const LazyAgent& agent(std::size_t index) const { return *entries_[index].lazy; }
  // The agent itself (its backend's name, filters, workspace; start and shutdown).
  [[nodiscard]] ConfiguredAgent& configured(std::size_t index) { return *entries_[index].agent; }
  // Whether its commands run in a sandbox (the backend's traits, asked once when built): a
  // started one owns a container (or a VM).
  [[nodiscard]] bool isolated(std::size_t index) const { return entries_[index].isolated; }

  // Starts each agent now, in order, while keep_going() (a signal may arrive meanwhile). Throws
  // std::runtime_error for the first that cannot start.
  void start_all(const std::function<bool()>& keep_going);
  // Shuts every agent down (its shells ended, its container removed); each once.
  void stop_all() noexcept;

 private:
  struct Entry {
    std::unique_ptr<ConfiguredAgent> agent;
    std::unique_ptr<LazyAgent> lazy;  // over *agent: destroyed first
    bool isolated = false;
  };
  std::vector<Entry> entries_;
};

}  // namespace execmcp::host
