// poll()-based line reader and serialised line writer over file descriptors.
#include "mcp/stdio_transport.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include <spdlog/spdlog.h>

namespace execmcp::host::mcp {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;

}  // namespace

StdioTransport::StdioTransport(int in_fd, int out_fd) : in_fd_(in_fd), out_fd_(out_fd) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::system_error(errno, std::generic_category(),
                            "cannot create the transport wake pipe");
  }
  wake_read_fd_ = fds[0];
  wake_write_fd_ = fds[1];
}

StdioTransport::~StdioTransport() {
  ::close(wake_read_fd_);
  ::close(wake_write_fd_);
}

std::optional<std::string> StdioTransport::read_line() {
  while (true) {
    if (closed_.load(std::memory_order_acquire)) return std::nullopt;

    const auto newline = buffer_.find('\n', scanned_);
    if (newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      scanned_ = 0;
      if (discarding_) {
        discarding_ = false;
        continue;
      }
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return line;
    }
    scanned_ = buffer_.size();
    if (discarding_) {
      buffer_.clear();
      scanned_ = 0;
    } else if (buffer_.size() >= kMaxLineBytes) {
      spdlog::warn("mcp: incoming message longer than {} bytes; discarding the rest of it",
                   kMaxLineBytes);
      std::string prefix = std::move(buffer_);
      buffer_.clear();
      scanned_ = 0;
      discarding_ = true;
      return prefix;
    }
    if (eof_) {
      if (buffer_.empty() || discarding_) return std::nullopt;
      std::string last = std::move(buffer_);  // a final line without its newline
      buffer_.clear();
      scanned_ = 0;
      return last;
    }

    pollfd fds[2] = {{in_fd_, POLLIN, 0}, {wake_read_fd_, POLLIN, 0}};
    const int ready = ::poll(fds, 2, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      spdlog::error("mcp: poll on input failed: {}", std::strerror(errno));
      eof_ = true;
      continue;
    }
    if (fds[1].revents != 0) return std::nullopt;
    if (fds[0].revents == 0) continue;

    char chunk[kReadChunk];
    const ssize_t n = ::read(in_fd_, chunk, sizeof chunk);
    if (n > 0) {
      buffer_.append(chunk, static_cast<std::size_t>(n));
    } else if (n == 0) {
      eof_ = true;
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      spdlog::error("mcp: read from input failed: {}", std::strerror(errno));
      eof_ = true;
    }
  }
}

bool StdioTransport::write_line(std::string_view message) {
  std::lock_guard lock(write_mutex_);
  if (write_failed_) return false;
  // One buffer so the message and its newline go out together.
  std::string framed;
  framed.reserve(message.size() + 1);
  framed.append(message);
  framed.push_back('\n');
  if (!write_all(framed)) {
    write_failed_ = true;
    return false;
  }
  return true;
}

bool StdioTransport::write_all(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(out_fd_, bytes.data(), bytes.size());
    if (n >= 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {  // a non-blocking stdout: wait until writable
      pollfd fd{out_fd_, POLLOUT, 0};
      ::poll(&fd, 1, 1000);
      continue;
    }
    spdlog::warn("mcp: write to output failed: {}", std::strerror(errno));
    return false;
  }
  return true;
}

void StdioTransport::close() {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  const char byte = 1;
  // Only wakes the reader; the pipe is non-blocking and one byte is enough.
  [[maybe_unused]] const ssize_t n = ::write(wake_write_fd_, &byte, 1);
}

}  // namespace execmcp::host::mcp
