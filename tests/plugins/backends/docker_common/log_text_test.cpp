// log_text() and LogBudget: what reaches a log from a container is bounded and escaped.
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

TEST(LogBudget, PassesLinesUntilSpentThenOnlyCounts) {
  LogBudget budget(3, 1000, 10);
  EXPECT_EQ(budget.take("one"), "one");
  EXPECT_EQ(budget.take("a line that is long", 5), "a line tha ... (14 more bytes not logged)");
  EXPECT_FALSE(budget.just_spent());
  EXPECT_EQ(budget.take("\x1b"), "\\x1b");
  EXPECT_EQ(budget.take("four"), std::nullopt);
  EXPECT_TRUE(budget.just_spent());
  EXPECT_FALSE(budget.just_spent());
  EXPECT_EQ(budget.take("five!", 3), std::nullopt);
  EXPECT_EQ(budget.dropped(), 4u + 5u + 3u);
  budget.count(1);  // a refused line's newline
  EXPECT_EQ(budget.dropped(), 4u + 5u + 3u + 1u);
  // The byte bound counts what is logged (escaped), not what came.
  LogBudget bytes(100, 8, 100);
  bytes.count(1);  // before it is spent, nothing is refused
  EXPECT_EQ(bytes.dropped(), 0u);
  EXPECT_EQ(bytes.take("\x01"), "\\x01");
  EXPECT_EQ(bytes.take("\x01\x01"), std::nullopt);
  EXPECT_TRUE(bytes.just_spent());
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
