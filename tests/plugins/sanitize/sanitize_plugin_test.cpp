// Tests the built sanitize plugin through Boost.DLL, the way the host loads it.
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/dll/shared_library.hpp>

#include "execmcp/sdk/plugin.hpp"

namespace execmcp::plugins::sanitize {
namespace {

class SanitizePlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    library_.load(EXECMCP_SANITIZE_PLUGIN_PATH);
    ASSERT_TRUE(library_.is_loaded());
  }

  std::unique_ptr<sdk::CommandFilter> create(const std::string& settings, std::string& error) {
    auto& factory = library_.get_alias<sdk::FilterFactory>(sdk::kFilterFactorySymbol);
    sdk::FilterInit init;
    init.agent_id = "agent-1";
    init.settings_json = settings;
    return std::unique_ptr<sdk::CommandFilter>(factory(init, error));
  }

  static sdk::FilterVerdict check(const sdk::CommandFilter& filter, std::string_view command) {
    return filter.check(sdk::FilterRequest{"agent-1", command, ""});
  }

  boost::dll::shared_library library_;  // declared first: destroyed after the filters
};

TEST_F(SanitizePlugin, DescriptorNamesAFilterWithTheHostAbi) {
  const auto& descriptor = library_.get_alias<const sdk::PluginDescriptor>(sdk::kDescriptorSymbol);
  EXPECT_EQ(descriptor.magic, sdk::kDescriptorMagic);
  EXPECT_EQ(descriptor.abi_major, sdk::kAbiMajor);
  EXPECT_EQ(descriptor.abi_minor, sdk::kAbiMinor);
  EXPECT_EQ(descriptor.kind, sdk::PluginKind::Filter);
  EXPECT_STREQ(descriptor.name, "sanitize");
  EXPECT_STREQ(descriptor.compiler_id, sdk::kCompilerId);
  EXPECT_FALSE(library_.has("execmcp_create_backend"));
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
