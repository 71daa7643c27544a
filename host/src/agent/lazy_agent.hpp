// An Agent whose backend starts on its first use (the shared server starts agents on demand), so
// one agent that cannot start (engine down for its image, a plugin error) fails only its own calls.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "agent/configured_agent.hpp"

namespace execmcp::host {

class LazyAgent final : public Agent {
 public:
  // After a failed start, calls within `retry_after` get the same error without trying again.
  explicit LazyAgent(ConfiguredAgent& agent,
                     std::chrono::milliseconds retry_after = std::chrono::seconds(5));

  // Starts the backend unless it runs; "" when it does, else why it cannot. Thread safe: one
  // caller starts, concurrent callers wait for that start.
  std::string ensure_started();
  [[nodiscard]] bool started() const;

  [[nodiscard]] const std::string& id() const override { return agent_.id(); }
  [[nodiscard]] const std::string& cwd() const override { return agent_.cwd(); }
  ExecuteOutcome execute(const ExecuteArgs& args, sdk::OutputSink* sink,
                         const sdk::CancelToken* cancel) override;
  sdk::ExecResult run_internal(const std::string& command, const sdk::CancelToken* cancel,
                               const std::string& principal) override;
  sdk::FileReadResult read_file(const sdk::FileReadRequest& request,
                                const std::string& principal) override;
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request,
                                  const std::string& principal) override;
  [[nodiscard]] sdk::BackendTraits traits() const override;

  // Answered without starting the backend (the capability is known once it is created).
  [[nodiscard]] AgentCapabilities capabilities() const override { return agent_.capabilities(); }
  // Starts the backend first; the other background calls need no start (no shells before one).
  BackgroundStartResult start_background(const BackgroundStartArgs& args) override;
  BackgroundOutput background_output(const std::string& shell_id,
                                     const std::optional<std::string>& cursor,
                                     std::optional<std::size_t> max_lines,
                                     const std::string& principal) override {
    return agent_.background_output(shell_id, cursor, max_lines, principal);
  }
  std::optional<BackgroundShellStatus> background_status(const std::string& shell_id,
                                                         const std::string& principal) override {
    return agent_.background_status(shell_id, principal);
  }
  BackgroundKillResult kill_background(const std::string& shell_id,
                                       const std::string& principal) override {
    return agent_.kill_background(shell_id, principal);
  }
  std::vector<BackgroundShellStatus> list_background(const std::string& principal) override {
    return agent_.list_background(principal);
  }

 private:
  ConfiguredAgent& agent_;
  const std::chrono::milliseconds retry_after_;
  mutable std::mutex mutex_;
  bool started_ = false;
  std::string last_error_;
  std::chrono::steady_clock::time_point failed_at_{};
};

}  // namespace execmcp::host
