// The handlers and the self-pipe behind SignalService (see signal_service.hpp).
#include "common/signal_service.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include <spdlog/spdlog.h>

namespace execmcp::host {

// Read by the signal handler: plain values set before the handlers are installed.
struct SignalServiceState {
  SignalService::Mode mode = SignalService::Mode::kNoteFirst;
  int read_fd = -1;
  int write_fd = -1;
  volatile std::sig_atomic_t noted = 0;
  SignalServiceState* previous = nullptr;  // the enclosing instance's, current again after this one
  struct sigaction old_int {};
  struct sigaction old_term {};
  struct sigaction old_pipe {};
  bool pipe_handled = false;
};

namespace {

// The innermost live instance's state; lock-free, so the handler may read it.
std::atomic<SignalServiceState*> g_current{nullptr};

void install(int signal_number, void (*handler)(int), struct sigaction* old) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(signal_number, &action, old);
}

}  // namespace

extern "C" void execmcp_on_stop_signal(int signal_number) {
  SignalServiceState* state = g_current.load();
  if (state == nullptr) return;
  if (state->mode == SignalService::Mode::kNoteFirst) {
    if (state->noted != 0) {
      std::signal(signal_number, SIG_DFL);
      std::raise(signal_number);
      return;
    }
    state->noted = signal_number;
    return;
  }
  // The handler only writes the signal number; watch() turns it into on_signal().
  const int saved_errno = errno;
  const auto byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] const ssize_t n = ::write(state->write_fd, &byte, 1);
  errno = saved_errno;
}

extern "C" void execmcp_on_sigpipe(int) {}

SignalService::SignalService(Mode mode, BrokenPipe broken_pipe)
    : state_(std::make_unique<SignalServiceState>()) {
  state_->mode = mode;
  if (mode == Mode::kForward) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw std::runtime_error(std::string("cannot create the signal pipe: ") +
                               std::strerror(errno));
    }
    state_->read_fd = fds[0];
    state_->write_fd = fds[1];
  }
  state_->previous = g_current.exchange(state_.get());
  install(SIGINT, execmcp_on_stop_signal, &state_->old_int);
  install(SIGTERM, execmcp_on_stop_signal, &state_->old_term);
  if (broken_pipe == BrokenPipe::kFailWrite) {
    install(SIGPIPE, execmcp_on_sigpipe, &state_->old_pipe);
    state_->pipe_handled = true;
  }
}

SignalService::~SignalService() {
  ::sigaction(SIGINT, &state_->old_int, nullptr);
  ::sigaction(SIGTERM, &state_->old_term, nullptr);
  if (state_->pipe_handled) ::sigaction(SIGPIPE, &state_->old_pipe, nullptr);
  g_current.store(state_->previous);
  if (state_->read_fd >= 0) ::close(state_->read_fd);
  if (state_->write_fd >= 0) ::close(state_->write_fd);
}

int SignalService::noted() const noexcept {
  return state_->noted;
}

void SignalService::wake() const {
  const unsigned char byte = 0;  // 0 is no signal: "stop watching"
  [[maybe_unused]] const ssize_t n = ::write(state_->write_fd, &byte, 1);
}

void SignalService::watch(const std::function<void()>& on_signal) const {
  while (true) {
    pollfd fd{state_->read_fd, POLLIN, 0};
    if (::poll(&fd, 1, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("mcp: poll on the signal pipe failed: {}", std::strerror(errno));
      return;
    }
    unsigned char bytes[16];
    const ssize_t n = ::read(state_->read_fd, bytes, sizeof bytes);
    for (ssize_t i = 0; i < n; ++i) {
      if (bytes[i] == 0) return;
      spdlog::info("mcp: received {}; shutting down", bytes[i] == SIGINT ? "SIGINT" : "SIGTERM");
      on_signal();
    }
  }
}

}  // namespace execmcp::host
