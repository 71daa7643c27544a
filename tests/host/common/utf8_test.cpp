// Tests for the UTF-8 sanitizer, including streams split at every byte.
#include "common/utf8.hpp"

#include <gtest/gtest.h>

namespace execmcp::host {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, ValidTextIsUnchanged) {
  const std::string text =
      "plain ascii, caf\xC3\xA9, \xE2\x82\xAC, \xF0\x9F\x98\x80, nul:" + std::string(1, '\0');
  EXPECT_TRUE(is_valid_utf8(text));
  EXPECT_EQ(sanitize_utf8(text), text);
}

TEST(Utf8, InvalidSequencesBecomeReplacementCharacters) {
  EXPECT_EQ(sanitize_utf8("a\xFF"
                          "b"),
            "a" + kFffd + "b");
  EXPECT_EQ(sanitize_utf8("\x80\x80"), kFffd + kFffd);              // lone continuations
  EXPECT_EQ(sanitize_utf8("\xC0\xAF"), kFffd + kFffd);              // overlong lead C0
  EXPECT_EQ(sanitize_utf8("\xE0\x80\xAF"), kFffd + kFffd + kFffd);  // overlong 3-byte
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate
  EXPECT_EQ(sanitize_utf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(sanitize_utf8("\xE2\x82"
                          "x"),
            kFffd + "x");  // truncated sequence is one FFFD
  EXPECT_EQ(sanitize_utf8("end\xF0\x9F\x98"), "end" + kFffd);
  EXPECT_FALSE(is_valid_utf8("\xC3"));
  EXPECT_TRUE(is_valid_utf8(sanitize_utf8("\xC3\x28\xA0\xA1\xF8")));
}

TEST(Utf8, StreamSplitAtEveryByteMatchesWholeSanitize) {
  const std::string input = "ok \xE2\x82\xAC \xF0\x9F\x98\x80 bad\xFF\xC3 \xE2\x82 tail\xF0\x9F";
  const std::string expected = sanitize_utf8(input);
  for (std::size_t split = 0; split <= input.size(); ++split) {
    Utf8StreamSanitizer stream;
    std::string out = stream.feed(std::string_view(input).substr(0, split));
    out += stream.feed(std::string_view(input).substr(split));
    out += stream.finish();
    EXPECT_EQ(out, expected) << "split at " << split;
  }
  Utf8StreamSanitizer bytewise;
  std::string out;
  for (char c : input) out += bytewise.feed(std::string_view(&c, 1));
  out += bytewise.finish();
  EXPECT_EQ(out, expected);
}

TEST(Utf8, StreamHoldsOnlyIncompleteTail) {
  Utf8StreamSanitizer stream;
  EXPECT_EQ(stream.feed("a\xE2\x82"), "a");
  EXPECT_EQ(stream.feed("\xAC"), "\xE2\x82\xAC");
  EXPECT_EQ(stream.feed("\xE2"), "");
  EXPECT_EQ(stream.feed("z"), kFffd + "z");  // the held byte could not be completed
  EXPECT_EQ(stream.finish(), "");
}

}  // namespace
}  // namespace execmcp::host
