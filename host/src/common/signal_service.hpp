// SIGINT, SIGTERM (and SIGPIPE while serving) for the whole program, handled in one place.
#pragma once

#include <csignal>
#include <functional>
#include <memory>

namespace execmcp::host {

struct SignalServiceState;  // what the handler reads (signal_service.cpp)

// Installs the handlers for its lifetime and restores the previous ones after. Instances nest (a
// server's inside the program's): the innermost one gets the signals until it is destroyed.
//
// Signals are caught with handlers rather than blocked, because a blocked mask would be inherited
// by every command the backends spawn; a handler only notes the signal or writes it to a pipe, and
// whatever acts on it runs on an ordinary thread (watch()).
class SignalService {
 public:
  enum class Mode {
    // While agents start or stop (a Docker backend creates or removes its container then): the
    // first SIGINT/SIGTERM is noted (noted()) rather than fatal, so the agent can still be shut
    // down, its container removed; a second one ends the program at once.
    kNoteFirst,
    // While something runs that a signal should stop (a server, a command): each SIGINT/SIGTERM
    // is handed to watch(), none is fatal.
    kForward,
  };
  enum class BrokenPipe {
    kDefault,  // SIGPIPE left as it is
    // A handler that does nothing: writes to a closed peer then fail with EPIPE instead of killing
    // the server, and unlike SIG_IGN it is reset by exec, so the commands we spawn keep the
    // default (`yes | head` must end quietly).
    kFailWrite,
  };

  explicit SignalService(Mode mode, BrokenPipe broken_pipe = BrokenPipe::kDefault);
  ~SignalService();
  SignalService(const SignalService&) = delete;
  SignalService& operator=(const SignalService&) = delete;

  // kNoteFirst: the signal noted (SIGINT or SIGTERM), or 0.
  [[nodiscard]] int noted() const noexcept;

  // kForward: runs on the calling thread until wake(), calling on_signal for each SIGINT/SIGTERM
  // received (also those received before it was called).
  void watch(const std::function<void()>& on_signal) const;
  // Makes watch() return (from any thread).
  void wake() const;

 private:
  std::unique_ptr<SignalServiceState> state_;
};

}  // namespace execmcp::host
