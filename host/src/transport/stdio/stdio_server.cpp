// serve_stdio: the stdio transport plus signal handling around one MCP session.
#include "transport/stdio/stdio_server.hpp"

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

#include "common/signal_service.hpp"
#include "transport/stdio/session.hpp"
#include "transport/stdio/stdio_transport.hpp"

namespace execmcp::host::mcp {
namespace {

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

}  // namespace

int serve_stdio(Agent& agent, const ServerOptions& options) {
  SignalService signals(SignalService::Mode::kForward, SignalService::BrokenPipe::kFailWrite);
  ProtocolFds fds;
  StdioTransport transport(fds.in(), fds.out(), options.limits.max_bytes);
  Session session(agent, transport, options);
  std::thread watcher([&] { signals.watch([&] { session.request_stop(); }); });
  const int exit_code = session.run();
  signals.wake();
  watcher.join();
  return exit_code;
}

}  // namespace execmcp::host::mcp
