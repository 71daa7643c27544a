// A per-user agent as an AgentTarget: its template (the config checked, tools/list answered; never
// started) and its users' sandboxes, one per user key.
#pragma once

#include <memory>
#include <string>

#include "agent/agent_target.hpp"
#include "agent/configured_agent.hpp"
#include "agent/user_sandboxes.hpp"

namespace execmcp::host {

class PerUserTarget final : public AgentTarget {
 public:
  PerUserTarget(std::unique_ptr<ConfiguredAgent> shape, std::unique_ptr<UserSandboxes> sandboxes);
  ~PerUserTarget() override;  // stop()
  PerUserTarget(const PerUserTarget&) = delete;
  PerUserTarget& operator=(const PerUserTarget&) = delete;

  [[nodiscard]] const std::string& id() const override { return sandboxes_->id(); }
  [[nodiscard]] TargetTraits traits() const override { return {true, true}; }
  [[nodiscard]] ConfiguredAgent& configured() override { return *template_; }
  // The user's sandbox (UserSandboxes::sandbox_for), or 429 past max_users.
  Resolution resolve(const std::string& user_key) override;
  // Ready as a whole: each user's sandbox is made by that user's call.
  [[nodiscard]] AgentState state() const override { return AgentState::kStarted; }
  [[nodiscard]] TargetReport report() const override;
  void start() override {}
  void start_background() override { sandboxes_->start(); }
  void stop() noexcept override;

 private:
  std::unique_ptr<ConfiguredAgent> template_;
  std::unique_ptr<UserSandboxes> sandboxes_;
};

}  // namespace execmcp::host
