// One agent for every caller (see single_agent_target.hpp).
#include "agent/single_agent_target.hpp"

namespace execmcp::host {

SingleAgentTarget::SingleAgentTarget(std::unique_ptr<ConfiguredAgent> agent, bool isolated)
    : agent_(std::move(agent)), lazy_(std::make_unique<LazyAgent>(*agent_)), isolated_(isolated) {}

SingleAgentTarget::~SingleAgentTarget() {
  lazy_.reset();
  stop();
}

Resolution SingleAgentTarget::resolve(const std::string& /*user_key*/) {
  // Aliasing an empty owner: the pointer, no ownership (the target outlives every request).
  return Resolution{std::shared_ptr<Agent>(std::shared_ptr<void>(), lazy_.get()), false, {}};
}

TargetReport SingleAgentTarget::report() const {
  TargetReport report;
  report.backend = lazy_->state();
  // Whether a backend owns a container is its traits' word (isolated), not its plugin's name.
  report.containers_owned = isolated_ && lazy_->started() ? 1 : 0;
  return report;
}

}  // namespace execmcp::host
