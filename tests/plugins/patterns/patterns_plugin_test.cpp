// Tests the built patterns plugin through Boost.DLL, the way the host loads it.
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/dll/shared_library.hpp>

#include "execmcp/sdk/plugin.hpp"

namespace execmcp::plugins::patterns {
namespace {

class PatternsPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    library_.load(EXECMCP_PATTERNS_PLUGIN_PATH);
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

TEST_F(PatternsPlugin, DescriptorNamesAFilterWithTheHostAbi) {
  const auto& descriptor = library_.get_alias<const sdk::PluginDescriptor>(sdk::kDescriptorSymbol);
  EXPECT_EQ(descriptor.magic, sdk::kDescriptorMagic);
  EXPECT_EQ(descriptor.abi_major, sdk::kAbiMajor);
  EXPECT_EQ(descriptor.abi_minor, sdk::kAbiMinor);
  EXPECT_EQ(descriptor.kind, sdk::PluginKind::Filter);
  EXPECT_STREQ(descriptor.name, "patterns");
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
