// SIGINT/SIGTERM for a server's lifetime: noted by a handler (self-pipe), acted on by a thread.
#pragma once

#include <csignal>
#include <functional>

namespace execmcp::host::mcp {

// Installs the handlers for its lifetime and restores the previous ones after. Signals are caught
// with handlers rather than blocked, because a blocked mask would be inherited by every command
// the backends spawn. SIGPIPE gets a handler that does nothing: writes to a closed peer then fail
// with EPIPE instead of killing us, and unlike SIG_IGN it is reset by exec, so the commands we
// spawn keep the default (`yes | head` must end quietly). One instance at a time per process.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Runs on the calling thread until wake(): calls on_stop for each SIGINT/SIGTERM received.
  void watch(const std::function<void()>& on_stop) const;
  // Makes watch() return (from any thread).
  void wake() const;

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_pipe_ {};
};

}  // namespace execmcp::host::mcp
