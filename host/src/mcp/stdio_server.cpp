// serve_stdio: the stdio transport plus signal handling around one MCP session.
#include "mcp/stdio_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "mcp/session.hpp"
#include "mcp/stdio_transport.hpp"

namespace execmcp::host::mcp {
namespace {

// Self-pipe: the handler only writes the signal number; a thread turns it into request_stop().
int g_signal_pipe_write = -1;

extern "C" void on_stop_signal(int signal_number) {
  const int saved_errno = errno;
  const auto byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] const ssize_t n = ::write(g_signal_pipe_write, &byte, 1);
  errno = saved_errno;
}

// A handler that does nothing: writes to a closed stdout then fail with EPIPE instead of killing
// us. Unlike SIG_IGN, a handler is reset by exec, so the commands we spawn still get the default
// SIGPIPE behaviour (`yes | head` must end quietly).
extern "C" void on_sigpipe(int) {}

// Installs the handlers for the lifetime of serve_stdio and restores the previous ones after.
// Signals are caught with handlers rather than blocked, because a blocked mask would be inherited
// by every command the backends spawn.
class SignalGuard {
 public:
  SignalGuard() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw std::runtime_error(std::string("cannot create the signal pipe: ") +
                               std::strerror(errno));
    }
    read_fd_ = fds[0];
    write_fd_ = fds[1];
    g_signal_pipe_write = write_fd_;
    install(SIGINT, on_stop_signal, &old_int_);
    install(SIGTERM, on_stop_signal, &old_term_);
    install(SIGPIPE, on_sigpipe, &old_pipe_);
  }
  ~SignalGuard() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::sigaction(SIGPIPE, &old_pipe_, nullptr);
    g_signal_pipe_write = -1;
    ::close(read_fd_);
    ::close(write_fd_);
  }
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

  [[nodiscard]] int read_fd() const { return read_fd_; }
  // Wakes the watcher thread without a signal (byte 0 means "stop watching").
  void wake() const {
    const unsigned char byte = 0;
    [[maybe_unused]] const ssize_t n = ::write(write_fd_, &byte, 1);
  }

 private:
  static void install(int signal_number, void (*handler)(int), struct sigaction* old) {
    struct sigaction action {};
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(signal_number, &action, old);
  }

  int read_fd_ = -1;
  int write_fd_ = -1;
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_pipe_ {};
};

// Moves the protocol streams off fds 0 and 1 for the lifetime of serve_stdio: stdout then points
// at stderr and stdin at /dev/null, so a stray printf, a logger writing to stdout or a spawned
// command that inherits the standard fds can never corrupt or steal protocol messages.
class ProtocolFds {
 public:
  ProtocolFds() {
    in_ = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
    out_ = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (in_ < 0 || out_ < 0) {
      throw std::runtime_error(std::string("cannot duplicate stdin/stdout: ") +
                               std::strerror(errno));
    }
    std::fflush(stdout);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0) {
      ::dup2(null_fd, STDIN_FILENO);
      ::close(null_fd);
    }
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
  }
  ~ProtocolFds() {
    std::fflush(stdout);
    ::dup2(in_, STDIN_FILENO);
    ::dup2(out_, STDOUT_FILENO);
    ::close(in_);
    ::close(out_);
  }
  ProtocolFds(const ProtocolFds&) = delete;
  ProtocolFds& operator=(const ProtocolFds&) = delete;

  [[nodiscard]] int in() const { return in_; }
  [[nodiscard]] int out() const { return out_; }

 private:
  int in_ = -1;
  int out_ = -1;
};

// Waits for a stop signal or wake(); returns when woken.
void watch_signals(const SignalGuard& signals, Session& session) {
  while (true) {
    pollfd fd{signals.read_fd(), POLLIN, 0};
    if (::poll(&fd, 1, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("mcp: poll on the signal pipe failed: {}", std::strerror(errno));
      return;
    }
    unsigned char bytes[16];
    const ssize_t n = ::read(signals.read_fd(), bytes, sizeof bytes);
    for (ssize_t i = 0; i < n; ++i) {
      if (bytes[i] == 0) return;
      spdlog::info("mcp: received {}; shutting down", bytes[i] == SIGINT ? "SIGINT" : "SIGTERM");
      session.request_stop();
    }
  }
}

}  // namespace

int serve_stdio(Agent& agent, const ServerOptions& options) {
  SignalGuard signals;
  ProtocolFds fds;
  StdioTransport transport(fds.in(), fds.out(), options.limits.max_bytes);
  Session session(agent, transport, options);
  std::thread watcher([&] { watch_signals(signals, session); });
  const int exit_code = session.run();
  signals.wake();
  watcher.join();
  return exit_code;
}

}  // namespace execmcp::host::mcp
