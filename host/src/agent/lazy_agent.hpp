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

 private:
  ConfiguredAgent& agent_;
  const std::chrono::milliseconds retry_after_;
  mutable std::mutex mutex_;
  bool started_ = false;
  std::string last_error_;
  std::chrono::steady_clock::time_point failed_at_{};
};

}  // namespace execmcp::host
