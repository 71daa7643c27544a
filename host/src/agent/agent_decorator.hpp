// The one forwarding combinator for the agents that stand in front of another: LazyAgent (starts
// the backend on first use) and a per-user agent's UserSandbox (makes, claims or starts the user's
// sandbox). A decorator writes only how a call gets in (the agent it reaches, or why none, and
// notices for its result) and what happens when it ends; every method of Agent and of its
// background shells is forwarded here, once.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/agent.hpp"

namespace execmcp::host {

class AgentDecorator : public Agent {
 public:
  // A call's way in: the agent it goes to, or why none. A pass made with an owner calls the
  // owner's leave() when it ends (after the forwarded call returned).
  class Pass {
   public:
    Pass() = default;
    explicit Pass(AgentDecorator* owner) : owner_(owner) {}
    Pass(Pass&& other) noexcept
        : agent(other.agent),
          error(std::move(other.error)),
          notices(std::move(other.notices)),
          owner_(std::exchange(other.owner_, nullptr)) {}
    Pass& operator=(Pass&&) = delete;
    ~Pass() {
      if (owner_ != nullptr) owner_->leave();
    }

    // Null with `error`, or for a call that may not start anything when nothing runs.
    Agent* agent = nullptr;
    std::string error;
    std::vector<std::string> notices;  // put first in the call's result

   private:
    AgentDecorator* owner_ = nullptr;
  };

  AgentDecorator();
  ~AgentDecorator() override;
  AgentDecorator(const AgentDecorator&) = delete;
  AgentDecorator& operator=(const AgentDecorator&) = delete;

  ExecuteOutcome execute(const ExecuteArgs& args, sdk::OutputSink* sink,
                         const sdk::CancelToken* cancel) final;
  sdk::ExecResult run_internal(const std::string& command, const sdk::CancelToken* cancel,
                               const std::string& principal) final;
  sdk::FileReadResult read_file(const sdk::FileReadRequest& request,
                                const std::string& principal) final;
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request,
                                  const std::string& principal) final;
  // Forwarded shells when capabilities().background: starting one enters with may_start, the
  // other calls look only at what runs. nullptr otherwise.
  BackgroundShellControl* background_shells() final;
  // To the agent a pass that starts nothing reaches; none (a per-user sandbox not made yet or
  // removed): the task's server log lines are its only trace.
  void audit_task(const TaskAuditEvent& event) final;

 protected:
  // The way in for one call. `may_start`: the call needs the backend (a command, a file, a shell's
  // start) and may start or make it; false: it only looks at what runs (a shell's output,
  // status, kill, list), and a decorator with nothing running answers agent == nullptr.
  virtual Pass enter(bool may_start) = 0;
  // A pass made with this owner ended.
  virtual void leave() noexcept {}
  // Notices for a call whose result cannot carry them (a file call, a shell's start); dropped
  // unless the decorator keeps them for a later result.
  virtual void keep_notices(std::vector<std::string>& /*notices*/) {}

 private:
  class Shells;
  std::unique_ptr<Shells> shells_;
};

}  // namespace execmcp::host
