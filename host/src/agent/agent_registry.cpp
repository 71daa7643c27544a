// Building, starting and stopping the process's agents (see agent_registry.hpp).
#include "agent/agent_registry.hpp"

namespace execmcp::host {

AgentRegistry::AgentRegistry(const Config& config, const std::vector<const AgentConfig*>& selected,
                             const PluginRegistry& plugins, const AgentBuildOptions& options) {
  entries_.reserve(selected.size());
  for (const AgentConfig* agent_config : selected) {
    Entry entry;
    entry.agent = build_agent(config, *agent_config, plugins, options);
    entry.lazy = std::make_unique<LazyAgent>(*entry.agent);
    entry.isolated = entry.agent->traits().isolated;
    entries_.push_back(std::move(entry));
  }
}

AgentRegistry::~AgentRegistry() {
  stop_all();
}

std::vector<std::string> AgentRegistry::ids() const {
  std::vector<std::string> ids;
  for (const Entry& entry : entries_) ids.push_back(entry.agent->id());
  return ids;
}

void AgentRegistry::start_all(const std::function<bool()>& keep_going) {
  for (Entry& entry : entries_) {
    if (!keep_going()) return;
    entry.agent->start();
  }
}

void AgentRegistry::stop_all() noexcept {
  for (Entry& entry : entries_) entry.agent->shutdown();
}

}  // namespace execmcp::host
