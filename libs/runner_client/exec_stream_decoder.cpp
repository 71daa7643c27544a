// The exec stream decoder: a small state machine over header bytes and payload bytes.
#include "runner_client/exec_stream_decoder.hpp"

#include <algorithm>

namespace execmcp::plugins::runner_client {

bool ExecStreamDecoder::feed(std::string_view data, Handler& handler) {
  if (failed()) return false;
  while (!data.empty()) {
    if (remaining_ == 0) {
      const std::size_t take = std::min(data.size(), sizeof header_ - header_fill_);
      std::copy_n(data.data(), take, header_ + header_fill_);
      header_fill_ += take;
      data.remove_prefix(take);
      if (header_fill_ < sizeof header_) return true;
      header_fill_ = 0;
      const unsigned type = header_[0];
      const std::uint32_t size = (std::uint32_t{header_[4]} << 24) |
                                 (std::uint32_t{header_[5]} << 16) |
                                 (std::uint32_t{header_[6]} << 8) | std::uint32_t{header_[7]};
      if (type > 3 || header_[1] != 0 || header_[2] != 0 || header_[3] != 0) {
        error_ = "exec stream protocol error: bad frame header (stream type " +
                 std::to_string(type) + ")";
        return false;
      }
      if (size > max_frame_) {
        error_ = "exec stream protocol error: frame claims " + std::to_string(size) +
                 " bytes, more than the " + std::to_string(max_frame_) + "-byte limit";
        return false;
      }
      current_ = static_cast<Stream>(type);
      remaining_ = size;
      continue;
    }
    const std::size_t take = std::min<std::size_t>(data.size(), remaining_);
    if (current_ != Stream::Stdin) handler.on_payload(current_, data.substr(0, take));
    remaining_ -= static_cast<std::uint32_t>(take);
    data.remove_prefix(take);
  }
  return true;
}

bool demux_all(std::string_view data, std::string& out, std::string* error) {
  struct Collect : ExecStreamDecoder::Handler {
    std::string& out;
    explicit Collect(std::string& o) : out(o) {}
    void on_payload(ExecStreamDecoder::Stream, std::string_view d) override { out.append(d); }
  } collect(out);
  // Logs frames are bounded by the daemon's line size; allow large ones here.
  ExecStreamDecoder decoder(64u * 1024 * 1024);
  if (!decoder.feed(data, collect)) {
    if (error) *error = decoder.error();
    return false;
  }
  if (!decoder.at_frame_boundary()) {
    if (error) *error = "exec stream ended inside a frame";
    return false;
  }
  return true;
}

}  // namespace execmcp::plugins::runner_client
