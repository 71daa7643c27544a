// See command_output.hpp.
#include "command_output.hpp"

#include <sys/wait.h>

#include <csignal>

namespace execmcp::plugins::supervision {

void OutputCapture::append(std::string_view bytes) {
  if (!retain_) {
    if (sink_ != nullptr && !bytes.empty()) sink_->on_output(kind_, bytes);
    return;
  }
  const std::size_t room = data_.size() < cap_ ? cap_ - data_.size() : 0;
  const std::size_t keep = bytes.size() < room ? bytes.size() : room;
  if (keep > 0) {
    data_.append(bytes.data(), keep);
    if (sink_ != nullptr) sink_->on_output(kind_, bytes.substr(0, keep));
  }
  if (keep < bytes.size()) truncated_ = true;
}

KillCause kill_cause(const sdk::CancelToken* cancel, bool backend_stopped,
                     std::optional<std::chrono::steady_clock::time_point> deadline) {
  if (cancel != nullptr && cancel->cancel_requested()) return KillCause::Cancelled;
  if (backend_stopped) return KillCause::Stopped;
  if (deadline && std::chrono::steady_clock::now() >= *deadline) return KillCause::TimedOut;
  return KillCause::None;
}

void record_kill(sdk::ExecResult& result, KillCause cause) {
  switch (cause) {
    case KillCause::None:
      return;
    case KillCause::Cancelled:
      result.cancelled = true;
      return;
    case KillCause::Stopped:
      result.cancelled = true;
      result.notices.push_back("the backend was stopped while the command ran");
      return;
    case KillCause::TimedOut:
      result.timed_out = true;
      return;
  }
}

void settle_kill_flags(sdk::ExecResult& result, int wait_status) {
  const bool killed =
      wait_status != -1 && WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGKILL;
  if (!killed && wait_status != -1) result.timed_out = result.cancelled = false;
}

int exit_code_from_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

std::string stdin_shortfall_error(std::size_t bytes_left) {
  return "the command ended before reading all of its input (" + std::to_string(bytes_left) +
         " bytes left)";
}

}  // namespace execmcp::plugins::supervision
