// Tests the built sanitize plugin through Boost.DLL, the way the host loads it.
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "filter_plugin_fixture.hpp"

namespace execmcp::plugins::sanitize {
namespace {

class SanitizePlugin : public testing::FilterPluginTest {
 protected:
  SanitizePlugin() : FilterPluginTest(EXECMCP_SANITIZE_PLUGIN_PATH) {}
};

TEST_F(SanitizePlugin, DescriptorNamesAFilterWithTheHostAbi) {
  expect_filter_descriptor("sanitize");
}

TEST_F(SanitizePlugin, BlocksAndPassesThroughTheSharedLibrary) {
  std::string error;
  auto filter = create("", error);
  ASSERT_NE(filter, nullptr) << error;
  sdk::FilterVerdict verdict = check(*filter, "cd /tmp && rm -rf /");
  EXPECT_TRUE(verdict.denied());
  EXPECT_EQ(verdict.rule, "rm-root");
  EXPECT_EQ(verdict.reason, "deleting the root or home directory is blocked (rm -rf /)");
  EXPECT_EQ(check(*filter, "dd if=/dev/zero of=/dev/sda").rule, "dd-device");
  EXPECT_EQ(check(*filter, "sudo ls").rule, "sudo");
  EXPECT_FALSE(check(*filter, "rm -rf /tmp/build").denied());
  EXPECT_FALSE(check(*filter, "echo \"rm -rf /\"").denied());
}

TEST_F(SanitizePlugin, RelativeTargetsResolveAgainstTheRequestsWorkDir) {
  std::string error;
  auto filter = create("", error);
  ASSERT_NE(filter, nullptr) << error;
  EXPECT_EQ(filter->check(sdk::FilterRequest{"agent-1", "rm -rf *", "/"}).rule, "rm-root");
  EXPECT_FALSE(filter->check(sdk::FilterRequest{"agent-1", "rm -rf *", "/work/ws"}).denied());
}

TEST_F(SanitizePlugin, SettingsAllowSudoButNotWhatItRuns) {
  std::string error;
  auto filter = create(R"({"allow": ["sudo"]})", error);
  ASSERT_NE(filter, nullptr) << error;
  EXPECT_FALSE(check(*filter, "sudo ls").denied());
  EXPECT_EQ(check(*filter, "sudo rm -rf /").rule, "rm-root");
}

TEST_F(SanitizePlugin, BadSettingsComeBackAsAnErrorNotAnException) {
  std::string error;
  auto filter = create(R"({"allow": ["root"]})", error);
  EXPECT_EQ(filter, nullptr);
  EXPECT_THAT(error, ::testing::HasSubstr("unknown rule 'root' (valid: sudo, su, chown, chmod)"));
  error.clear();
  EXPECT_EQ(create(R"({"deny": []})", error), nullptr);
  EXPECT_THAT(error, ::testing::HasSubstr("unknown setting 'deny'"));
}

}  // namespace
}  // namespace execmcp::plugins::sanitize
