// Placeholders: same length, public prefix and punctuation kept, letters and digits replaced, never
// the value; and the values no placeholder can stand for.
#include "execmcp/egress_secrets/placeholder.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <string>

namespace es = execmcp::egress_secrets;

namespace {

// A deterministic source: the same seed gives the same placeholder.
es::RandomBytes seeded(std::uint32_t seed) {
  auto engine = std::make_shared<std::mt19937>(seed);
  return [engine](unsigned char* out, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<unsigned char>((*engine)() & 0xFF);
  };
}

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

}  // namespace

TEST(Placeholder, KeepsLengthPrefixAndPunctuation) {
  for (const std::string value :
       {"ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "glpat-abcdefghij-klmnopqrst",
        "xoxb-1234567890-1234567890-abcdefghijklmnop", "sk-proj.abc/def+ghi=jkl~mno:pqr",
        "plain-token_with.dots:and/slashes+ABCDEF"}) {
    ASSERT_FALSE(es::placeholder_problem(value)) << value;
    const auto placeholder = es::make_placeholder(value, seeded(7));
    ASSERT_EQ(placeholder.size(), value.size());
    EXPECT_NE(placeholder, value);
    std::size_t same = 0, symbols = 0;
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (is_alnum(value[i])) {
        EXPECT_TRUE(is_alnum(placeholder[i])) << value << " at " << i;
        ++symbols;
        same += placeholder[i] == value[i] ? 1 : 0;
      } else {
        EXPECT_EQ(placeholder[i], value[i]) << value << " at " << i;
      }
    }
    EXPECT_LT(same, symbols / 2) << value;
  }
  EXPECT_EQ(es::make_placeholder("ghp_abcdefghijklmnopqrstuvwxyz", seeded(1)).substr(0, 4), "ghp_");
  EXPECT_EQ(es::make_placeholder("github_pat_abcdefghijklmnopqrstuvwxyz", seeded(1)).substr(0, 11),
            "github_pat_");
}

TEST(Placeholder, IsDeterministicForASeedAndDiffersAcrossSeeds) {
  const std::string value = "abcdefghijklmnopqrstuvwxyz";
  EXPECT_EQ(es::make_placeholder(value, seeded(3)), es::make_placeholder(value, seeded(3)));
  std::set<std::string> seen;
  for (std::uint32_t seed = 0; seed < 50; ++seed)
    seen.insert(es::make_placeholder(value, seeded(seed)));
  EXPECT_EQ(seen.size(), 50u);
}

TEST(Placeholder, UsesEveryLetterAndDigitUniformly) {
  const std::string value(6200, 'a');
  std::set<char> symbols;
  for (const char c : es::make_placeholder(value, seeded(11))) symbols.insert(c);
  EXPECT_EQ(symbols.size(), 62u);
}

TEST(Placeholder, SkipsRandomBytesAbove247) {
  // A source that gives 255 (rejected, else 255 % 62 would favour the first symbols) three times
  // in four: only the fourth bytes make symbols.
  std::size_t calls = 0;
  es::RandomBytes skewed = [&calls](unsigned char* out, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) out[i] = (calls++ % 4 == 3) ? 61 : 255;
  };
  EXPECT_EQ(es::make_placeholder("abcdefghijklmnopq", skewed), std::string(17, '9'));
}

TEST(Placeholder, NamesTheValuesItCannotStandFor) {
  struct Case {
    std::string value;
    std::string words;
  };
  for (const auto& c : std::vector<Case>{
           {"", "empty"},
           {std::string(8 * 1024 + 1, 'a'), "longer than 8 KiB"},
           {"abcdefghijklmnopqrstuvwxyz\r\n", "CR, LF or NUL"},
           {std::string("abcdefghijklmnop\0qrstuv", 23), "CR, LF or NUL"},
           {"abc-def-ghi-jkl-mno", "fewer than 16"},
           {"ghp_abcdefghijklmno", "fewer than 16"},  // 15 beyond the prefix
       }) {
    const auto problem = es::placeholder_problem(c.value);
    ASSERT_TRUE(problem) << c.value.size();
    EXPECT_NE(problem->find(c.words), std::string::npos) << *problem;
    if (!c.value.empty()) {
      EXPECT_EQ(problem->find(c.value), std::string::npos);
    }
  }
  EXPECT_FALSE(es::placeholder_problem("ghp_abcdefghijklmnop"));
  EXPECT_FALSE(es::placeholder_problem(std::string(8 * 1024, 'a')));
}
