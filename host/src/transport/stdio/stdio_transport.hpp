// Newline-delimited JSON-RPC over a pair of file descriptors (stdin/stdout for the stdio
// transport).
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>

#include "transport/stdio/transport.hpp"

namespace execmcp::host::mcp {

class StdioTransport final : public Transport {
 public:
  // Does not take ownership of the descriptors. A line longer than max_line_bytes is returned cut
  // to max_line_bytes + 1 bytes (so the reader can tell it was too long and refuse it) and the
  // rest of it is discarded unread into memory, so a runaway peer cannot exhaust it.
  StdioTransport(int in_fd, int out_fd, std::size_t max_line_bytes);
  ~StdioTransport() override;
  StdioTransport(const StdioTransport&) = delete;
  StdioTransport& operator=(const StdioTransport&) = delete;

  std::optional<std::string> read_line() override;
  // Polls for room before each write of at most PIPE_BUF bytes, so it never blocks in write()
  // itself (stdout stays a blocking descriptor: O_NONBLOCK would leak to whoever shares it).
  bool write_line(std::string_view message) override;
  // Only messages that fit in PIPE_BUF with their newline, when poll() says there is room.
  bool try_write_line(std::string_view message) override;
  void abort_writes() override;
  void close() override;

 private:
  bool write_all(std::string_view bytes);

  int in_fd_;
  int out_fd_;
  const std::size_t max_line_bytes_;
  int wake_read_fd_ = -1;  // self-pipe that close() writes to, polled next to in_fd_
  int wake_write_fd_ = -1;
  int abort_read_fd_ = -1;  // self-pipe that abort_writes() writes to, polled next to out_fd_
  int abort_write_fd_ = -1;
  std::atomic<bool> closed_{false};
  std::atomic<bool> writes_aborted_{false};

  // Reader state (one reader thread at a time).
  std::string buffer_;
  std::size_t start_ = 0;    // where the next line begins in buffer_
  std::size_t scanned_ = 0;  // bytes of buffer_ already known to hold no newline
  bool eof_ = false;
  bool discarding_ = false;  // dropping the rest of an over-long line

  std::mutex write_mutex_;
  bool write_failed_ = false;
};

}  // namespace execmcp::host::mcp
