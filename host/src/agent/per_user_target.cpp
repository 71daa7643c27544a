// A per-user agent's template and sandboxes (see per_user_target.hpp).
#include "agent/per_user_target.hpp"

namespace execmcp::host {

PerUserTarget::PerUserTarget(std::unique_ptr<ConfiguredAgent> shape,
                             std::unique_ptr<UserSandboxes> sandboxes)
    : template_(std::move(shape)), sandboxes_(std::move(sandboxes)) {}

PerUserTarget::~PerUserTarget() {
  stop();
}

Resolution PerUserTarget::resolve(const std::string& user_key) {
  return sandboxes_->sandbox_for(user_key);
}

TargetReport PerUserTarget::report() const {
  TargetReport report;
  const SandboxCounts counts = sandboxes_->counts();
  report.containers_owned = counts.warm + counts.running + counts.stopped;
  report.sandboxes = counts;
  report.sandbox_events = sandboxes_->events();
  return report;
}

void PerUserTarget::stop() noexcept {
  sandboxes_->stop_all();
  template_->shutdown();
}

}  // namespace execmcp::host
