// Tests of ${VAR}, ${VAR:-default} and ~ expansion in config paths.
#include <gtest/gtest.h>

#include <stdexcept>

#include "config/path_expansion.hpp"
#include "test_support.hpp"

namespace execmcp::host {
namespace {

TEST(PathExpansion, ReplacesVariablesAndDefaults) {
  tests::ScopedEnv set("EXECMCP_PX_SET", std::string("value"));
  tests::ScopedEnv empty("EXECMCP_PX_EMPTY", std::string(""));
  tests::ScopedEnv unset("EXECMCP_PX_UNSET", std::nullopt);
  EXPECT_EQ(expand_variables("a/${EXECMCP_PX_SET}/b"), "a/value/b");
  EXPECT_EQ(expand_variables("${EXECMCP_PX_UNSET:-dflt}"), "dflt");
  EXPECT_EQ(expand_variables("${EXECMCP_PX_EMPTY:-dflt}"), "dflt");
  EXPECT_EQ(expand_variables("${EXECMCP_PX_SET:-dflt}"), "value");
  EXPECT_EQ(expand_variables("${EXECMCP_PX_UNSET:-}x"), "x");
  EXPECT_EQ(expand_variables("$HOME-is-not-expanded"), "$HOME-is-not-expanded");
  EXPECT_THROW(expand_variables("${EXECMCP_PX_UNSET}"), std::invalid_argument);
  EXPECT_THROW(expand_variables("${EXECMCP_PX_SET"), std::invalid_argument);
  EXPECT_THROW(expand_variables("${}"), std::invalid_argument);
}

TEST(PathExpansion, ResolvesHomeAndRelativePaths) {
  tests::ScopedEnv home("HOME", std::string("/home/tester"));
  EXPECT_EQ(expand_path("~", "/base"), "/home/tester");
  EXPECT_EQ(expand_path("~/ws", "/base"), "/home/tester/ws");
  EXPECT_EQ(expand_path("ws/../w2/", "/base"), "/base/w2");
  EXPECT_EQ(expand_path("/abs/./x", "/base"), "/abs/x");
  EXPECT_EQ(expand_path("~other", "/base"), "/base/~other");  // only ~ and ~/ are special
  EXPECT_THROW(expand_path("", "/base"), std::invalid_argument);
}

}  // namespace
}  // namespace execmcp::host
