// A GoogleTest fixture that loads a built filter plugin through Boost.DLL, the way the host does.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <boost/dll/shared_library.hpp>

#include "execmcp/sdk/plugin.hpp"

namespace execmcp::plugins::testing {

class FilterPluginTest : public ::testing::Test {
 protected:
  explicit FilterPluginTest(std::string path) : path_(std::move(path)) {}

  void SetUp() override {
    library_.load(path_);
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

  // The descriptor a host reads before anything else: a filter of this host's ABI named `name`.
  void expect_filter_descriptor(const char* name) {
    const auto& descriptor =
        library_.get_alias<const sdk::PluginDescriptor>(sdk::kDescriptorSymbol);
    EXPECT_EQ(descriptor.magic, sdk::kDescriptorMagic);
    EXPECT_EQ(descriptor.abi_major, sdk::kAbiMajor);
    EXPECT_EQ(descriptor.abi_minor, sdk::kAbiMinor);
    EXPECT_EQ(descriptor.kind, sdk::PluginKind::Filter);
    EXPECT_STREQ(descriptor.name, name);
    EXPECT_STREQ(descriptor.compiler_id, sdk::kCompilerId);
    EXPECT_FALSE(library_.has(sdk::kBackendFactorySymbol));  // one plugin, one kind
  }

 private:
  std::string path_;
  boost::dll::shared_library library_;  // outlives the filters the tests make (they are locals)
};

}  // namespace execmcp::plugins::testing
