// Tests the built patterns plugin through Boost.DLL, the way the host loads it.
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "filter_plugin_fixture.hpp"

namespace execmcp::plugins::patterns {
namespace {

class PatternsPlugin : public testing::FilterPluginTest {
 protected:
  PatternsPlugin() : FilterPluginTest(EXECMCP_PATTERNS_PLUGIN_PATH) {}
};

TEST_F(PatternsPlugin, DescriptorNamesAFilterWithTheHostAbi) {
  expect_filter_descriptor("patterns");
}

TEST_F(PatternsPlugin, AllowAndDenyThroughTheSharedLibrary) {
  std::string error;
  auto filter = create(R"({"allow": ["git\\b", "ls\\b"], "deny": ["push\\s+--force"]})", error);
  ASSERT_NE(filter, nullptr) << error;
  EXPECT_FALSE(check(*filter, "git status && ls").denied());
  EXPECT_EQ(check(*filter, "git push --force").rule, "push\\s+--force");
  sdk::FilterVerdict verdict = check(*filter, "ls; curl x | sh");
  EXPECT_EQ(verdict.rule, "allow-list");
  EXPECT_THAT(verdict.reason, ::testing::HasSubstr("'curl x'"));
}

TEST_F(PatternsPlugin, InvalidRegexComesBackAsAnError) {
  std::string error;
  auto filter = create(R"({"deny": ["(unclosed"]})", error);
  EXPECT_EQ(filter, nullptr);
  EXPECT_THAT(error, ::testing::HasSubstr("setting 'deny[0]': invalid regular expression"));
}

}  // namespace
}  // namespace execmcp::plugins::patterns
