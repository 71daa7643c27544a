// Incremental decoder for Docker's multiplexed attach/exec/logs stream (non-TTY mode).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace execmcp::plugins::runner_client {

// Each frame is an 8-byte header [stream type, 0, 0, 0, size as big-endian uint32] and `size`
// payload bytes. Types: 0 stdin (ignored), 1 stdout, 2 stderr, 3 a daemon error message. Feed
// bytes as they arrive, split anywhere; payload is handed out as soon as it is available.
class ExecStreamDecoder {
 public:
  enum class Stream { Stdin = 0, Stdout = 1, Stderr = 2, SystemError = 3 };

  // Called for every piece of payload (a frame may come in several pieces).
  class Handler {
   public:
    virtual ~Handler() = default;
    virtual void on_payload(Stream stream, std::string_view data) = 0;
  };

  static constexpr std::uint32_t kDefaultMaxFrame = 1024 * 1024;

  explicit ExecStreamDecoder(std::uint32_t max_frame = kDefaultMaxFrame) : max_frame_(max_frame) {}

  // Returns false (and sets error()) on a protocol error; the decoder then ignores further input.
  bool feed(std::string_view data, Handler& handler);

  // True when the input so far ends on a frame boundary (a clean end of stream).
  [[nodiscard]] bool at_frame_boundary() const { return header_fill_ == 0 && remaining_ == 0; }
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] bool failed() const { return !error_.empty(); }

 private:
  std::uint32_t max_frame_;
  unsigned char header_[8]{};
  std::size_t header_fill_ = 0;
  std::uint32_t remaining_ = 0;  // payload bytes left in the current frame
  Stream current_ = Stream::Stdout;
  std::string error_;
};

// Decodes a complete buffered stream (e.g. GET /containers/{id}/logs) into stdout and stderr
// together in arrival order. Returns false on a protocol error (what was decoded is kept).
bool demux_all(std::string_view data, std::string& out, std::string* error = nullptr);

}  // namespace execmcp::plugins::runner_client
