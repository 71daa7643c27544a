// Start-on-first-use for the shared server's agents (see lazy_agent.hpp).
#include "agent/lazy_agent.hpp"

#include <spdlog/spdlog.h>

namespace execmcp::host {

LazyAgent::LazyAgent(ConfiguredAgent& agent, std::chrono::milliseconds retry_after)
    : agent_(agent), retry_after_(retry_after) {}

bool LazyAgent::started() const {
  std::lock_guard lock(mutex_);
  return started_ || agent_.started();
}

std::string LazyAgent::ensure_started() {
  std::lock_guard lock(mutex_);
  // Started already (serve --start-all): a second start would replace its container.
  if (started_ || agent_.started()) {
    started_ = true;
    return {};
  }
  const auto now = std::chrono::steady_clock::now();
  if (!last_error_.empty() && now - failed_at_ < retry_after_) return last_error_;
  try {
    spdlog::info("agent '{}': starting its {} backend", agent_.id(), agent_.backend_name());
    agent_.start();
    started_ = true;
    last_error_.clear();
    return {};
  } catch (const std::exception& e) {
    last_error_ = e.what();
  } catch (...) {
    last_error_ = "agent '" + agent_.id() + "' failed to start";
  }
  failed_at_ = now;
  spdlog::error("{}", last_error_);
  return last_error_;
}

ExecuteOutcome LazyAgent::execute(const ExecuteArgs& args, sdk::OutputSink* sink,
                                  const sdk::CancelToken* cancel) {
  if (std::string error = ensure_started(); !error.empty()) {
    ExecuteOutcome outcome;
    outcome.result.error = error;
    return outcome;
  }
  return agent_.execute(args, sink, cancel);
}

sdk::ExecResult LazyAgent::run_internal(const std::string& command, const sdk::CancelToken* cancel,
                                        const std::string& principal) {
  if (std::string error = ensure_started(); !error.empty()) {
    sdk::ExecResult result;
    result.error = error;
    return result;
  }
  return agent_.run_internal(command, cancel, principal);
}

sdk::FileReadResult LazyAgent::read_file(const sdk::FileReadRequest& request,
                                         const std::string& principal) {
  if (std::string error = ensure_started(); !error.empty()) {
    sdk::FileReadResult result;
    result.error = error;
    return result;
  }
  return agent_.read_file(request, principal);
}

sdk::FileWriteResult LazyAgent::write_file(const sdk::FileWriteRequest& request,
                                           const std::string& principal) {
  if (std::string error = ensure_started(); !error.empty()) {
    sdk::FileWriteResult result;
    result.error = error;
    return result;
  }
  return agent_.write_file(request, principal);
}

BackgroundStartResult LazyAgent::start_background(const BackgroundStartArgs& args) {
  if (std::string error = ensure_started(); !error.empty()) {
    BackgroundStartResult result;
    result.error = "Failed to start background shell: " + error;
    return result;
  }
  return agent_.start_background(args);
}

sdk::BackendTraits LazyAgent::traits() const {
  return agent_.traits();
}

}  // namespace execmcp::host
