// Tests for the incremental Docker exec stream decoder, including splits at every byte.
#include "runner_client/exec_stream_decoder.hpp"

#include <gtest/gtest.h>

#include <string>

namespace execmcp::plugins::runner_client {
namespace {

using Stream = ExecStreamDecoder::Stream;

std::string frame(unsigned type, const std::string& payload) {
  std::string h(8, '\0');
  h[0] = static_cast<char>(type);
  const auto n = static_cast<std::uint32_t>(payload.size());
  h[4] = static_cast<char>((n >> 24) & 0xFF);
  h[5] = static_cast<char>((n >> 16) & 0xFF);
  h[6] = static_cast<char>((n >> 8) & 0xFF);
  h[7] = static_cast<char>(n & 0xFF);
  return h + payload;
}

struct Collect : ExecStreamDecoder::Handler {
  std::string out, err, sys;
  int calls = 0;
  void on_payload(Stream s, std::string_view d) override {
    ++calls;
    if (s == Stream::Stdout) out.append(d);
    if (s == Stream::Stderr) err.append(d);
    if (s == Stream::SystemError) sys.append(d);
  }
};

std::string all_bytes() {
  std::string s;
  for (int i = 0; i < 256; ++i) s.push_back(static_cast<char>(i));
  return s;
}

TEST(ExecStreamDecoder, DecodesInterleavedFramesInOneFeed) {
  const std::string data =
      frame(1, "hello ") + frame(2, "oops") + frame(1, "world") + frame(0, "in");
  ExecStreamDecoder d;
  Collect c;
  ASSERT_TRUE(d.feed(data, c));
  EXPECT_EQ(c.out, "hello world");
  EXPECT_EQ(c.err, "oops");
  EXPECT_TRUE(c.sys.empty());
  EXPECT_TRUE(d.at_frame_boundary());
}

TEST(ExecStreamDecoder, SplitAtEveryByteBoundaryGivesTheSameOutput) {
  const std::string bin = all_bytes();
  const std::string data = frame(1, "abc") + frame(2, bin) + frame(1, "") + frame(1, bin + "xyz") +
                           frame(0, "stdin") + frame(2, "end");
  for (std::size_t split = 0; split <= data.size(); ++split) {
    ExecStreamDecoder d;
    Collect c;
    ASSERT_TRUE(d.feed(std::string_view(data).substr(0, split), c)) << split;
    ASSERT_TRUE(d.feed(std::string_view(data).substr(split), c)) << split;
    EXPECT_EQ(c.out, "abc" + bin + "xyz") << "split at " << split;
    EXPECT_EQ(c.err, bin + "end") << "split at " << split;
    EXPECT_TRUE(d.at_frame_boundary());
  }
}

TEST(ExecStreamDecoder, OneByteAtATime) {
  const std::string data = frame(1, "12345") + frame(2, "678");
  ExecStreamDecoder d;
  Collect c;
  for (char ch : data) {
    ASSERT_TRUE(d.feed(std::string_view(&ch, 1), c));
  }
  EXPECT_EQ(c.out, "12345");
  EXPECT_EQ(c.err, "678");
}

TEST(ExecStreamDecoder, MidFrameIsNotABoundary) {
  const std::string data = frame(1, "12345");
  ExecStreamDecoder d;
  Collect c;
  ASSERT_TRUE(d.feed(std::string_view(data).substr(0, 10), c));
  EXPECT_FALSE(d.at_frame_boundary());
  EXPECT_EQ(c.out, "12");  // payload is handed out as soon as it arrives
  ExecStreamDecoder inside_header;
  ASSERT_TRUE(inside_header.feed(std::string_view(data).substr(0, 3), c));
  EXPECT_FALSE(inside_header.at_frame_boundary());
}

TEST(ExecStreamDecoder, TypeThreeIsReportedAsSystemError) {
  const std::string data = frame(1, "partial") + frame(3, "container not running");
  ExecStreamDecoder d;
  Collect c;
  ASSERT_TRUE(d.feed(data, c));
  EXPECT_EQ(c.out, "partial");
  EXPECT_EQ(c.sys, "container not running");
}

TEST(ExecStreamDecoder, OversizedFrameClaimIsAProtocolError) {
  std::string h(8, '\0');
  h[0] = 1;
  h[4] = 0x7F;  // ~2 GiB claimed
  ExecStreamDecoder d;
  Collect c;
  EXPECT_FALSE(d.feed(h + "abc", c));
  EXPECT_TRUE(d.failed());
  EXPECT_NE(d.error().find("limit"), std::string::npos) << d.error();
  EXPECT_TRUE(c.out.empty());
  // Once failed, further input is refused.
  EXPECT_FALSE(d.feed(frame(1, "x"), c));
}

TEST(ExecStreamDecoder, FrameExactlyAtTheCapIsAccepted) {
  ExecStreamDecoder d(16);
  Collect c;
  EXPECT_TRUE(d.feed(frame(1, std::string(16, 'a')), c));
  EXPECT_FALSE(d.feed(frame(1, std::string(17, 'a')), c));
}

TEST(ExecStreamDecoder, UnknownStreamTypeOrNonZeroPaddingIsAProtocolError) {
  {
    ExecStreamDecoder d;
    Collect c;
    EXPECT_FALSE(d.feed(frame(7, "x"), c));
  }
  {
    std::string f = frame(1, "x");
    f[2] = 1;
    ExecStreamDecoder d;
    Collect c;
    EXPECT_FALSE(d.feed(f, c));
  }
}

TEST(DemuxAll, JoinsStreamsInOrderAndDetectsTruncation) {
  std::string out;
  std::string err;
  EXPECT_TRUE(demux_all(frame(1, "a\n") + frame(2, "b\n") + frame(1, "c\n"), out, &err));
  EXPECT_EQ(out, "a\nb\nc\n");
  out.clear();
  EXPECT_FALSE(demux_all(frame(1, "abcdef").substr(0, 10), out, &err));
  EXPECT_FALSE(err.empty());
}

}  // namespace
}  // namespace execmcp::plugins::runner_client
