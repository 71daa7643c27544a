// Test clients for the HTTP server: a raw TCP client on 127.0.0.1 (every read has a timeout, so a
// server bug fails the test instead of hanging it) and a runner for curl with line-wise output.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace execmcp::tests::http {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Remaining time until `deadline`, in poll() milliseconds (at least 0).
inline int poll_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

class RawClient {
 public:
  // Connects to 127.0.0.1:port; `receive_buffer` > 0 shrinks SO_RCVBUF first (a slow reader).
  explicit RawClient(std::uint16_t port, int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error("socket() failed");
    if (receive_buffer > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd_);
      throw std::runtime_error("connect() failed");
    }
  }
  ~RawClient() { close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Sends everything; false if the server closed or reset the connection.
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // Reads what is available within `timeout` into the pending buffer; false on EOF or error.
  bool read_some(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return true;
    char buffer[16384];
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    pending_.append(buffer, static_cast<std::size_t>(n));
    return true;
  }

  // One whole response (head plus Content-Length or chunked body), or nullopt when none came
  // within `timeout`.
  std::optional<std::string> read_response(std::chrono::milliseconds timeout = 10s) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      if (auto length = complete_response_length()) {
        std::string response = pending_.substr(0, *length);
        pending_.erase(0, *length);
        return response;
      }
      if (eof_ || Clock::now() >= deadline) return std::nullopt;
      read_some(std::chrono::milliseconds(std::min(poll_ms(deadline), 100)));
    }
  }

  // Reads until `needle` was received; what was received so far either way.
  std::string read_until(std::string_view needle, std::chrono::milliseconds timeout = 10s) {
    const auto deadline = Clock::now() + timeout;
    while (pending_.find(needle) == std::string::npos && !eof_ && Clock::now() < deadline) {
      read_some(std::chrono::milliseconds(std::min(poll_ms(deadline), 100)));
    }
    return pending_;
  }

  // True once the server closed the connection (EOF or reset) within `timeout`.
  bool wait_closed(std::chrono::milliseconds timeout = 10s) {
    const auto deadline = Clock::now() + timeout;
    while (!eof_ && Clock::now() < deadline) {
      read_some(std::chrono::milliseconds(std::min(poll_ms(deadline), 100)));
    }
    return eof_;
  }

  [[nodiscard]] const std::string& pending() const { return pending_; }
  [[nodiscard]] int fd() const { return fd_; }

 private:
  std::optional<std::size_t> complete_response_length() const {
    const auto head_end = pending_.find("\r\n\r\n");
    if (head_end == std::string::npos) return std::nullopt;
    const std::size_t body_start = head_end + 4;
    std::string head = pending_.substr(0, head_end);
    for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (head.starts_with("http/1.1 1")) return body_start;  // an interim response
    if (head.find("transfer-encoding: chunked") != std::string::npos) {
      const auto end = pending_.find("\r\n0\r\n\r\n", head_end);
      if (end == std::string::npos) return std::nullopt;
      return end + 7;
    }
    const auto at = head.find("content-length: ");
    if (at == std::string::npos) return body_start;
    const std::size_t length = std::stoul(head.substr(at + 16));
    if (pending_.size() < body_start + length) return std::nullopt;
    return body_start + length;
  }

  int fd_ = -1;
  std::string pending_;
  bool eof_ = false;
};

// The status code of a response ("HTTP/1.1 200 OK..." -> 200), 0 if malformed.
inline int status_of(const std::string& response) {
  if (response.size() < 12 || !response.starts_with("HTTP/1.")) return 0;
  return std::stoi(response.substr(9, 3));
}

inline std::string body_of(const std::string& response) {
  const auto at = response.find("\r\n\r\n");
  return at == std::string::npos ? std::string() : response.substr(at + 4);
}

// A child process (argv, no shell) whose stdout is read line by line with timeouts.
class ChildProcess {
 public:
  explicit ChildProcess(std::vector<std::string> argv) {
    // Built before fork(): the child of a threaded process must not allocate.
    std::vector<char*> args;
    for (auto& arg : argv) args.push_back(arg.data());
    args.push_back(nullptr);
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::dup2(pipe_fds[1], STDOUT_FILENO);
      const int null_fd = ::open("/dev/null", O_WRONLY);
      ::dup2(null_fd, STDERR_FILENO);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    ::close(pipe_fds[1]);
    out_ = pipe_fds[0];
  }
  ~ChildProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    if (out_ >= 0) ::close(out_);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // The next line of output (without '\n'), or nullopt on EOF or timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout = 10s) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      const auto newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return line;
      }
      if (eof_) return std::nullopt;
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, poll_ms(deadline)) <= 0) return std::nullopt;
      char chunk[4096];
      const ssize_t n = ::read(out_, chunk, sizeof chunk);
      if (n <= 0) {
        eof_ = true;
      } else {
        buffer_.append(chunk, static_cast<std::size_t>(n));
      }
    }
  }

  // All remaining output until EOF (or timeout).
  std::string read_all(std::chrono::milliseconds timeout = 20s) {
    const auto deadline = Clock::now() + timeout;
    while (!eof_ && Clock::now() < deadline) {
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, poll_ms(deadline)) <= 0) break;
      char chunk[4096];
      const ssize_t n = ::read(out_, chunk, sizeof chunk);
      if (n <= 0) {
        eof_ = true;
      } else {
        buffer_.append(chunk, static_cast<std::size_t>(n));
      }
    }
    std::string all = std::move(buffer_);
    buffer_.clear();
    return all;
  }

  // Exit status (waits for the child).
  int wait() {
    if (pid_ <= 0) return exit_code_;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_code_;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string buffer_;
  bool eof_ = false;
  int exit_code_ = -1;
};

// Runs a command to completion; its exit code and stdout.
struct CommandResult {
  int exit_code = -1;
  std::string out;
};
inline CommandResult run_command(std::vector<std::string> argv) {
  ChildProcess child(std::move(argv));
  CommandResult result;
  result.out = child.read_all();
  result.exit_code = child.wait();
  return result;
}

}  // namespace execmcp::tests::http
