// An AgentTarget for tests of what sees only that interface (the HTTP endpoint, the probes): one
// agent for every user, or a function of the user key, with a state the test sets.
#pragma once

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "agent/agent_target.hpp"

namespace execmcp::host::testing {

class FakeTarget final : public AgentTarget {
 public:
  using Resolve = std::function<Resolution(const std::string& user_key)>;
  using State = std::function<AgentState()>;

  // Every user gets `agent` (not owned).
  FakeTarget(std::string id, Agent& agent, State state = {})
      : id_(std::move(id)),
        resolve_([&agent](const std::string&) {
          return Resolution{std::shared_ptr<Agent>(std::shared_ptr<void>(), &agent), false, {}};
        }),
        state_(std::move(state)) {}
  // Each user gets what `resolve` answers (a per-user target).
  FakeTarget(std::string id, Resolve resolve, State state = {})
      : id_(std::move(id)),
        resolve_(std::move(resolve)),
        state_(std::move(state)),
        per_user_(true) {}

  [[nodiscard]] const std::string& id() const override { return id_; }
  [[nodiscard]] TargetTraits traits() const override { return {per_user_, per_user_}; }
  // Not asked by the endpoint or the probes.
  [[nodiscard]] ConfiguredAgent& configured() override { std::abort(); }
  Resolution resolve(const std::string& user_key) override {
    ++resolved;
    return resolve_(user_key);
  }
  [[nodiscard]] AgentState state() const override {
    return state_ ? state_() : AgentState::kStarted;
  }
  [[nodiscard]] TargetReport report() const override {
    TargetReport report;
    if (!per_user_) report.backend = state();
    return report;
  }
  void start() override {}
  void start_background() override {}
  void stop() noexcept override {}

  int resolved = 0;  // resolve() calls

 private:
  std::string id_;
  Resolve resolve_;
  State state_;
  bool per_user_ = false;
};

}  // namespace execmcp::host::testing
