// Start-on-first-use for the shared server's agents (see lazy_agent.hpp).
#include "agent/lazy_agent.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace execmcp::host {

namespace {

// A start error in the log: whole enough to act on, bounded (a preinstall build's tail can be
// long).
constexpr std::size_t kMaxLoggedError = 4096;

}  // namespace

LazyAgent::LazyAgent(ConfiguredAgent& agent, std::chrono::milliseconds retry_after,
                     std::size_t max_start_waiters)
    : agent_(agent),
      retry_after_(retry_after),
      max_start_waiters_(std::max<std::size_t>(1, max_start_waiters)) {}

LazyAgent::~LazyAgent() = default;

LazyAgent::State LazyAgent::state() const noexcept {
  // Started before it was wrapped (serve --start-all) counts as started.
  if (agent_.started()) return State::kStarted;
  return state_.load();
}

std::string LazyAgent::recent_failure() {
  std::lock_guard lock(error_mutex_);
  if (state_.load() != State::kFailed) return {};
  if (std::chrono::steady_clock::now() - failed_at_ >= retry_after_) return {};
  return last_error_;
}

std::string LazyAgent::ensure_started() {
  // Started already (serve --start-all): a second start would replace its container.
  if (state() == State::kStarted) return {};
  if (std::string error = recent_failure(); !error.empty()) return error;
  // Each caller waiting here holds a call worker: past the bound, answer now instead.
  if (start_waiters_.fetch_add(1) >= max_start_waiters_) {
    start_waiters_.fetch_sub(1);
    return "agent '" + agent_.id() + "' is still starting its backend (" +
           std::to_string(max_start_waiters_) +
           " calls already wait for it); retry in a few seconds";
  }
  struct Leave {
    std::atomic<std::size_t>& count;
    ~Leave() { count.fetch_sub(1); }
  } leave{start_waiters_};
  std::lock_guard start_lock(start_mutex_);
  // Whoever held the lock before may have started it, or just failed.
  if (state() == State::kStarted) return {};
  if (std::string error = recent_failure(); !error.empty()) return error;
  state_.store(State::kStarting);
  std::string error;
  try {
    spdlog::info("agent '{}': starting its {} backend", agent_.id(), agent_.backend_name());
    agent_.start();
    state_.store(State::kStarted);
    return {};
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "agent '" + agent_.id() + "' failed to start";
  }
  if (error.empty()) error = "agent '" + agent_.id() + "' failed to start";
  {
    std::lock_guard lock(error_mutex_);
    last_error_ = error;
    failed_at_ = std::chrono::steady_clock::now();
    state_.store(State::kFailed);
  }
  spdlog::error("{}",
                error.size() > kMaxLoggedError ? error.substr(0, kMaxLoggedError) + "..." : error);
  return error;
}

AgentDecorator::Pass LazyAgent::enter(bool may_start) {
  Pass pass;
  if (may_start) pass.error = ensure_started();
  if (pass.error.empty()) pass.agent = &agent_;
  return pass;
}

}  // namespace execmcp::host
