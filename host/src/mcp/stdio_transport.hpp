// Newline-delimited JSON-RPC over a pair of file descriptors (stdin/stdout for the stdio
// transport).
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>

#include "mcp/transport.hpp"

namespace execmcp::host::mcp {

class StdioTransport final : public Transport {
 public:
  // A line longer than this is cut here (the prefix fails to parse, so the client gets -32700)
  // and the rest of it is discarded, so a runaway peer cannot exhaust memory.
  static constexpr std::size_t kMaxLineBytes = 64 * 1024 * 1024;

  // Does not take ownership of the descriptors.
  StdioTransport(int in_fd, int out_fd);
  ~StdioTransport() override;
  StdioTransport(const StdioTransport&) = delete;
  StdioTransport& operator=(const StdioTransport&) = delete;

  std::optional<std::string> read_line() override;
  bool write_line(std::string_view message) override;
  void close() override;

 private:
  bool write_all(std::string_view bytes);

  int in_fd_;
  int out_fd_;
  int wake_read_fd_ = -1;  // self-pipe that close() writes to, polled next to in_fd_
  int wake_write_fd_ = -1;
  std::atomic<bool> closed_{false};

  // Reader state (one reader thread at a time).
  std::string buffer_;
  std::size_t scanned_ = 0;  // bytes of buffer_ already known to hold no newline
  bool eof_ = false;
  bool discarding_ = false;  // dropping the rest of an over-long line

  std::mutex write_mutex_;
  bool write_failed_ = false;
};

}  // namespace execmcp::host::mcp
