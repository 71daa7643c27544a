// Forwarding for every decorator of an Agent (see agent_decorator.hpp).
#include "agent/agent_decorator.hpp"

namespace execmcp::host {

class AgentDecorator::Shells final : public BackgroundShellControl {
 public:
  explicit Shells(AgentDecorator& owner) : owner_(owner) {}

  BackgroundStartResult start(const BackgroundStartArgs& args) override {
    Pass pass = owner_.enter(true);
    owner_.keep_notices(pass.notices);
    BackgroundShellControl* shells = pass.agent ? pass.agent->background_shells() : nullptr;
    if (shells == nullptr) {
      BackgroundStartResult result;
      result.error = "Failed to start background shell: " +
                     (pass.error.empty() ? std::string(kNoBackgroundShells) : pass.error);
      return result;
    }
    return shells->start(args);
  }
  BackgroundOutput output(const std::string& shell_id, const std::optional<std::string>& cursor,
                          std::optional<std::size_t> max_lines,
                          const std::string& principal) override {
    Pass pass = owner_.enter(false);
    if (BackgroundShellControl* shells = running(pass))
      return shells->output(shell_id, cursor, max_lines, principal);
    BackgroundOutput none;
    none.error = no_shell(shell_id);
    return none;
  }
  std::optional<BackgroundShellStatus> status(const std::string& shell_id,
                                              const std::string& principal) override {
    Pass pass = owner_.enter(false);
    if (BackgroundShellControl* shells = running(pass)) return shells->status(shell_id, principal);
    return std::nullopt;
  }
  BackgroundKillResult kill(const std::string& shell_id, const std::string& principal) override {
    Pass pass = owner_.enter(false);
    if (BackgroundShellControl* shells = running(pass)) return shells->kill(shell_id, principal);
    BackgroundKillResult none;
    none.error = no_shell(shell_id);
    return none;
  }
  std::vector<BackgroundShellStatus> list(const std::string& principal) override {
    Pass pass = owner_.enter(false);
    if (BackgroundShellControl* shells = running(pass)) return shells->list(principal);
    return {};
  }

 private:
  static BackgroundShellControl* running(const Pass& pass) {
    return pass.agent ? pass.agent->background_shells() : nullptr;
  }
  static std::string no_shell(const std::string& shell_id) {
    return "no background shell '" + shell_id + "' (the sandbox has none running)";
  }
  AgentDecorator& owner_;
};

AgentDecorator::AgentDecorator() : shells_(std::make_unique<Shells>(*this)) {}

AgentDecorator::~AgentDecorator() = default;

BackgroundShellControl* AgentDecorator::background_shells() {
  return capabilities().background ? shells_.get() : nullptr;
}

void AgentDecorator::audit_task(const TaskAuditEvent& event) {
  Pass pass = enter(false);
  if (pass.agent != nullptr) pass.agent->audit_task(event);
}

ExecuteOutcome AgentDecorator::execute(const ExecuteArgs& args, sdk::OutputSink* sink,
                                       const sdk::CancelToken* cancel) {
  Pass pass = enter(true);
  ExecuteOutcome outcome;
  if (pass.agent == nullptr) {
    outcome.result.error = pass.error;
  } else {
    outcome = pass.agent->execute(args, sink, cancel);
  }
  outcome.result.notices.insert(outcome.result.notices.begin(), pass.notices.begin(),
                                pass.notices.end());
  return outcome;
}

sdk::ExecResult AgentDecorator::run_internal(const std::string& command,
                                             const sdk::CancelToken* cancel,
                                             const std::string& principal) {
  Pass pass = enter(true);
  sdk::ExecResult result;
  if (pass.agent == nullptr) {
    result.error = pass.error;
  } else {
    result = pass.agent->run_internal(command, cancel, principal);
  }
  result.notices.insert(result.notices.begin(), pass.notices.begin(), pass.notices.end());
  return result;
}

sdk::FileReadResult AgentDecorator::read_file(const sdk::FileReadRequest& request,
                                              const std::string& principal) {
  Pass pass = enter(true);
  keep_notices(pass.notices);
  if (pass.agent == nullptr) {
    sdk::FileReadResult result;
    result.error = pass.error;
    return result;
  }
  return pass.agent->read_file(request, principal);
}

sdk::FileWriteResult AgentDecorator::write_file(const sdk::FileWriteRequest& request,
                                                const std::string& principal) {
  Pass pass = enter(true);
  keep_notices(pass.notices);
  if (pass.agent == nullptr) {
    sdk::FileWriteResult result;
    result.error = pass.error;
    return result;
  }
  return pass.agent->write_file(request, principal);
}

}  // namespace execmcp::host
