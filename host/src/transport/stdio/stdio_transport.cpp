// poll()-based line reader and serialised line writer over file descriptors.
#include "transport/stdio/stdio_transport.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include <spdlog/spdlog.h>

namespace execmcp::host::mcp {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;

void make_wake_pipe(int& read_fd, int& write_fd) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::system_error(errno, std::generic_category(),
                            "cannot create the transport wake pipe");
  }
  read_fd = fds[0];
  write_fd = fds[1];
}

}  // namespace

StdioTransport::StdioTransport(int in_fd, int out_fd, std::size_t max_line_bytes)
    : in_fd_(in_fd), out_fd_(out_fd), max_line_bytes_(std::max<std::size_t>(max_line_bytes, 1)) {
  make_wake_pipe(wake_read_fd_, wake_write_fd_);
  try {
    make_wake_pipe(abort_read_fd_, abort_write_fd_);
  } catch (...) {
    ::close(wake_read_fd_);
    ::close(wake_write_fd_);
    throw;
  }
}

StdioTransport::~StdioTransport() {
  ::close(wake_read_fd_);
  ::close(wake_write_fd_);
  ::close(abort_read_fd_);
  ::close(abort_write_fd_);
}

std::optional<std::string> StdioTransport::read_line() {
  while (true) {
    if (closed_.load(std::memory_order_acquire)) return std::nullopt;

    const auto newline = buffer_.find('\n', std::max(start_, scanned_));
    if (newline != std::string::npos) {
      const std::size_t begin = start_;
      start_ = newline + 1;
      scanned_ = start_;
      if (discarding_) {
        discarding_ = false;
        continue;
      }
      std::size_t end = newline;
      if (end > begin && buffer_[end - 1] == '\r') --end;
      // Cut here too: a line that arrived whole in one read can be longer than the cap.
      return buffer_.substr(begin, std::min(end - begin, max_line_bytes_ + 1));
    }
    // No newline in what we hold: drop the consumed part (one move per read, not per line).
    buffer_.erase(0, start_);
    start_ = 0;
    scanned_ = buffer_.size();
    if (discarding_) {
      buffer_.clear();
      scanned_ = 0;
    } else if (buffer_.size() > max_line_bytes_) {
      spdlog::warn("mcp: incoming message longer than {} bytes; discarding the rest of it",
                   max_line_bytes_);
      std::string prefix = buffer_.substr(0, max_line_bytes_ + 1);
      buffer_.clear();
      buffer_.shrink_to_fit();
      scanned_ = 0;
      discarding_ = true;
      return prefix;
    }
    if (eof_) {
      if (buffer_.empty() || discarding_) return std::nullopt;
      std::string last = buffer_.substr(0, std::min(buffer_.size(), max_line_bytes_ + 1));
      buffer_.clear();  // a final line without its newline
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
  if (write_failed_ || writes_aborted_.load()) return false;
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
    // POLLOUT on a pipe means a free page: PIPE_BUF bytes then go out without blocking.
    pollfd fds[2] = {{out_fd_, POLLOUT, 0}, {abort_read_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::warn("mcp: poll on output failed: {}", std::strerror(errno));
      return false;
    }
    if (fds[1].revents != 0) return false;  // abort_writes()
    if (fds[0].revents == 0) continue;
    const ssize_t n = ::write(out_fd_, bytes.data(), std::min<std::size_t>(bytes.size(), PIPE_BUF));
    if (n >= 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    spdlog::warn("mcp: write to output failed: {}", std::strerror(errno));
    return false;
  }
  return true;
}

bool StdioTransport::try_write_line(std::string_view message) {
  if (message.size() + 1 > PIPE_BUF) return false;
  std::unique_lock lock(write_mutex_, std::try_to_lock);
  if (!lock || write_failed_ || writes_aborted_.load()) return false;
  pollfd fd{out_fd_, POLLOUT, 0};
  if (::poll(&fd, 1, 0) != 1 || fd.revents != POLLOUT) return false;  // no room, or an error
  char framed[PIPE_BUF];
  std::memcpy(framed, message.data(), message.size());
  framed[message.size()] = '\n';
  const std::string_view bytes(framed, message.size() + 1);
  const ssize_t n = ::write(out_fd_, bytes.data(), bytes.size());
  if (n < 0) return false;  // write_line() retries it and reports a real error
  // A pipe with room takes PIPE_BUF bytes whole; anything else finishes like write_line().
  if (static_cast<std::size_t>(n) < bytes.size() &&
      !write_all(bytes.substr(static_cast<std::size_t>(n)))) {
    write_failed_ = true;
  }
  return true;
}

void StdioTransport::abort_writes() {
  if (writes_aborted_.exchange(true)) return;
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(abort_write_fd_, &byte, 1);
}

void StdioTransport::close() {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  const char byte = 1;
  // Only wakes the reader; the pipe is non-blocking and one byte is enough.
  [[maybe_unused]] const ssize_t n = ::write(wake_write_fd_, &byte, 1);
}

}  // namespace execmcp::host::mcp
