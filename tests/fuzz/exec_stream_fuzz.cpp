// libFuzzer target: Docker's multiplexed exec stream, fed whole and again split at a point the
// input chooses; both runs must agree on the bytes and on whether the stream is broken.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "runner_client/exec_stream_decoder.hpp"

using execmcp::plugins::runner_client::ExecStreamDecoder;

namespace {

struct Collect : ExecStreamDecoder::Handler {
  std::string out, err, system;
  void on_payload(ExecStreamDecoder::Stream stream, std::string_view data) override {
    if (stream == ExecStreamDecoder::Stream::Stdout) out += data;
    if (stream == ExecStreamDecoder::Stream::Stderr) err += data;
    if (stream == ExecStreamDecoder::Stream::SystemError) system += data;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  // The first two bytes choose a small frame cap and a split point; the rest is the stream.
  const std::uint32_t max_frame = 1u + data[0] * 64u;
  std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);
  const std::size_t split = stream.empty() ? 0 : data[1] % (stream.size() + 1);

  ExecStreamDecoder whole_decoder(max_frame);
  Collect whole;
  const bool whole_ok = whole_decoder.feed(stream, whole);

  ExecStreamDecoder split_decoder(max_frame);
  Collect parts;
  bool split_ok = split_decoder.feed(stream.substr(0, split), parts);
  if (split_ok) split_ok = split_decoder.feed(stream.substr(split), parts);

  if (whole_ok != split_ok || whole.out != parts.out || whole.err != parts.err ||
      whole.system != parts.system)
    std::abort();  // decoding must not depend on where the bytes were split
  if (whole_ok && whole_decoder.at_frame_boundary() != split_decoder.at_frame_boundary())
    std::abort();

  std::string all;
  std::string error;
  execmcp::plugins::runner_client::demux_all(stream, all, &error);
  if (all.size() > stream.size()) std::abort();  // payload can never exceed the input
  return 0;
}
