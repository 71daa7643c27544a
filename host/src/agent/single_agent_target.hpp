// An ordinary agent as an AgentTarget: one configured agent for every caller, its backend started
// on the first call that needs it (LazyAgent) or all at once (start()).
#pragma once

#include <memory>
#include <string>

#include "agent/agent_target.hpp"
#include "agent/configured_agent.hpp"
#include "agent/lazy_agent.hpp"

namespace execmcp::host {

class SingleAgentTarget final : public AgentTarget {
 public:
  // `isolated`: its backend's traits, asked once by whoever built it (never on a request's thread).
  SingleAgentTarget(std::unique_ptr<ConfiguredAgent> agent, bool isolated);
  ~SingleAgentTarget() override;  // stop()
  SingleAgentTarget(const SingleAgentTarget&) = delete;
  SingleAgentTarget& operator=(const SingleAgentTarget&) = delete;

  [[nodiscard]] const std::string& id() const override { return agent_->id(); }
  [[nodiscard]] TargetTraits traits() const override { return {isolated_, false}; }
  [[nodiscard]] ConfiguredAgent& configured() override { return *agent_; }
  // Every caller gets the same agent (the target owns it; the answer holds nothing).
  Resolution resolve(const std::string& user_key) override;
  [[nodiscard]] AgentState state() const override { return lazy_->state(); }
  [[nodiscard]] TargetReport report() const override;
  void start() override { agent_->start(); }
  void start_background() override {}
  void stop() noexcept override { agent_->shutdown(); }

 private:
  std::unique_ptr<ConfiguredAgent> agent_;
  std::unique_ptr<LazyAgent> lazy_;  // over *agent_: destroyed first
  const bool isolated_;
};

}  // namespace execmcp::host
