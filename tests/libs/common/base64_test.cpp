// Tests of the one base64 codec: both alphabets, padding, and what is refused.
#include "execmcp/common/base64.hpp"

#include <string>

#include <gtest/gtest.h>

namespace execmcp::common {
namespace {

TEST(Base64, EncodesTheRfc4648Vectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode("\xfb\xff", Base64Alphabet::Standard), "+/8=");
  EXPECT_EQ(base64_encode("\xfb\xff", Base64Alphabet::Url), "-_8");  // no padding
}

TEST(Base64, DecodesWithOrWithoutPaddingAndRefusesTheOtherAlphabet) {
  EXPECT_EQ(base64_decode("Zm9vYg=="), "foob");
  EXPECT_EQ(base64_decode("Zm9vYg"), "foob");
  EXPECT_EQ(base64_decode("+/8="), "\xfb\xff");
  EXPECT_EQ(base64_decode("-_8", Base64Alphabet::Url), "\xfb\xff");
  EXPECT_EQ(base64_decode("-_8"), std::nullopt);
  EXPECT_EQ(base64_decode("+/8", Base64Alphabet::Url), std::nullopt);
  EXPECT_EQ(base64_decode("Z"), std::nullopt) << "one digit cannot encode a byte";
  EXPECT_EQ(base64_decode("Zm=9v"), std::nullopt) << "'=' only as trailing padding";
  EXPECT_EQ(base64_decode("Zm 9v"), std::nullopt);
}

TEST(Base64, EveryByteValueRoundTripsInBothAlphabets) {
  std::string bytes;
  for (int round = 0; round < 3; ++round)
    for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  for (std::size_t len = 0; len <= bytes.size(); len += 97) {
    const std::string part = bytes.substr(0, len);
    for (const auto alphabet : {Base64Alphabet::Standard, Base64Alphabet::Url})
      EXPECT_EQ(base64_decode(base64_encode(part, alphabet), alphabet), part) << len;
  }
}

}  // namespace
}  // namespace execmcp::common
