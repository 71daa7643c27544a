// Tests for the memory-size parser the Docker backends and the local sandbox share.
#include "execmcp/plugins/plugin_settings/memory_limit.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace execmcp::plugins::plugin_settings {
namespace {

TEST(MemoryLimit, AcceptsDockerForms) {
  EXPECT_EQ(parse_memory_limit("2g"), 2LL * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_memory_limit("2G"), 2LL * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_memory_limit("512m"), 512LL * 1024 * 1024);
  EXPECT_EQ(parse_memory_limit("512mb"), 512LL * 1024 * 1024);
  EXPECT_EQ(parse_memory_limit("1024k"), 1024LL * 1024);
  EXPECT_EQ(parse_memory_limit("1073741824"), 1073741824LL);
  EXPECT_EQ(parse_memory_limit("100b"), 100);
  EXPECT_EQ(parse_memory_limit("1.5g"), 1536LL * 1024 * 1024);
  EXPECT_EQ(parse_memory_limit(" 64m "), 64LL * 1024 * 1024);
}

TEST(MemoryLimit, RejectsBadStringsNamingTheAcceptedForms) {
  for (const char* bad : {"", "g", "2x", "-1g", "0", "0m", "1.5", "1..5g", ".5g", "2gg", "two",
                          "99999999999999999999g", "5 g"}) {
    try {
      parse_memory_limit(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("512m"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace execmcp::plugins::plugin_settings
