// An Agent whose backend starts on its first use (the shared server starts agents on demand), so
// one agent that cannot start (engine down for its image, a plugin error) fails only its own calls.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "agent/agent_decorator.hpp"
#include "agent/configured_agent.hpp"

namespace execmcp::host {

class LazyAgent final : public AgentDecorator {
 public:
  // What /ready and /metrics report; read without waiting on a start.
  using State = AgentState;

  // After a failed start, calls within `retry_after` get the same error without trying again.
  // At most `max_start_waiters` calls wait for one start (each holds a call worker while it
  // waits); more get an error at once, so a slow start cannot take every worker from the others.
  explicit LazyAgent(ConfiguredAgent& agent,
                     std::chrono::milliseconds retry_after = std::chrono::seconds(5),
                     std::size_t max_start_waiters = 4);
  ~LazyAgent() override;
  LazyAgent(const LazyAgent&) = delete;
  LazyAgent& operator=(const LazyAgent&) = delete;

  // Starts the backend unless it runs; "" when it does, else why it cannot. Thread safe: one
  // caller starts, up to max_start_waiters - 1 concurrent callers wait for that start.
  std::string ensure_started();
  // Never blocks (an I/O thread asks while a start may take minutes).
  [[nodiscard]] State state() const noexcept;
  [[nodiscard]] bool started() const noexcept { return state() == State::kStarted; }

  [[nodiscard]] const std::string& id() const override { return agent_.id(); }
  [[nodiscard]] const std::string& cwd() const override { return agent_.cwd(); }
  [[nodiscard]] sdk::BackendTraits traits() const override { return agent_.traits(); }
  // Answered without starting the backend (the capability is known once it is created).
  [[nodiscard]] AgentCapabilities capabilities() const override { return agent_.capabilities(); }
  // The agent it starts (a per-user sandbox calls it once ensure_started() said "").
  [[nodiscard]] ConfiguredAgent& inner() const { return agent_; }

 protected:
  // A call that needs the backend (commands, files, a shell's start) starts it first; a look at
  // the shells needs none (no shells before one started).
  Pass enter(bool may_start) override;

 private:
  // The last failure while it is recent (within retry_after_), else "".
  std::string recent_failure();

  ConfiguredAgent& agent_;
  const std::chrono::milliseconds retry_after_;
  const std::size_t max_start_waiters_;
  std::atomic<State> state_{State::kNotStarted};
  std::atomic<std::size_t> start_waiters_{0};
  // Held for the whole start, and only by callers that need one: never by state().
  std::mutex start_mutex_;
  std::mutex error_mutex_;  // last_error_ and failed_at_; held briefly
  std::string last_error_;
  std::chrono::steady_clock::time_point failed_at_{};
};

}  // namespace execmcp::host
