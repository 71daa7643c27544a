// log_text(): what reaches a log from a container is bounded and escaped.
#include "docker_common/log_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace execmcp::plugins::docker_common {
namespace {

bool has_control_byte(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

TEST(LogText, EscapesControlBytesC1ControlsAndBrokenUtf8) {
  EXPECT_EQ(log_text("plain text, 'quoted' \\ kept"), "plain text, 'quoted' \\ kept");
  EXPECT_EQ(log_text("a\nb\r\tc\x1b[31m\x7f"), "a\\x0ab\\x0d\\x09c\\x1b[31m\\x7f");
  EXPECT_EQ(log_text(std::string("nul\0byte", 8)), "nul\\x00byte");
  // Valid UTF-8 stays; a C1 control (U+009B, CSI), a lone continuation byte, a truncated
  // sequence, an overlong form and a surrogate are escaped byte by byte.
  EXPECT_EQ(log_text("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(log_text("\xc2\x9b"
                     "2J"),
            "\\xc2\\x9b2J");
  EXPECT_EQ(log_text("\x80"), "\\x80");
  EXPECT_EQ(log_text("\xe2\x82"), "\\xe2\\x82");
  EXPECT_EQ(log_text("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(log_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  // Escaping escaped text changes nothing.
  const std::string once = log_text("x\x01y\xffz");
  EXPECT_EQ(log_text(once), once);
}

TEST(LogText, IsBoundedAndSaysHowMuchItLeftOut) {
  const std::string flood(1 << 20, '\x01');
  const std::string out = log_text(flood, 100);
  EXPECT_LE(out.size(), 100u + 48u);
  EXPECT_FALSE(has_control_byte(out));
  // 25 escaped bytes fit in 100 (4 each).
  std::string shown;
  for (int i = 0; i < 25; ++i) shown += "\\x01";
  EXPECT_EQ(out, shown + " ... (" + std::to_string((1 << 20) - 25) + " more bytes not logged)");
  // A multi-byte character is never split.
  EXPECT_EQ(log_text("ab\xe2\x82\xac", 4), "ab ... (3 more bytes not logged)");
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
