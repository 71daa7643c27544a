// The self-pipe behind StopSignals (see stop_signals.hpp).
#include "mcp/stop_signals.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include <spdlog/spdlog.h>

namespace execmcp::host::mcp {
namespace {

// The handler only writes the signal number; watch() turns it into on_stop().
int g_signal_pipe_write = -1;

extern "C" void on_stop_signal(int signal_number) {
  const int saved_errno = errno;
  const auto byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] const ssize_t n = ::write(g_signal_pipe_write, &byte, 1);
  errno = saved_errno;
}

extern "C" void on_sigpipe(int) {}

void install(int signal_number, void (*handler)(int), struct sigaction* old) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(signal_number, &action, old);
}

}  // namespace

StopSignals::StopSignals() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::runtime_error(std::string("cannot create the signal pipe: ") + std::strerror(errno));
  }
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  g_signal_pipe_write = write_fd_;
  install(SIGINT, on_stop_signal, &old_int_);
  install(SIGTERM, on_stop_signal, &old_term_);
  install(SIGPIPE, on_sigpipe, &old_pipe_);
}

StopSignals::~StopSignals() {
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  ::sigaction(SIGPIPE, &old_pipe_, nullptr);
  g_signal_pipe_write = -1;
  ::close(read_fd_);
  ::close(write_fd_);
}

void StopSignals::wake() const {
  const unsigned char byte = 0;  // 0 is no signal: "stop watching"
  [[maybe_unused]] const ssize_t n = ::write(write_fd_, &byte, 1);
}

void StopSignals::watch(const std::function<void()>& on_stop) const {
  while (true) {
    pollfd fd{read_fd_, POLLIN, 0};
    if (::poll(&fd, 1, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("mcp: poll on the signal pipe failed: {}", std::strerror(errno));
      return;
    }
    unsigned char bytes[16];
    const ssize_t n = ::read(read_fd_, bytes, sizeof bytes);
    for (ssize_t i = 0; i < n; ++i) {
      if (bytes[i] == 0) return;
      spdlog::info("mcp: received {}; shutting down", bytes[i] == SIGINT ? "SIGINT" : "SIGTERM");
      on_stop();
    }
  }
}

}  // namespace execmcp::host::mcp
