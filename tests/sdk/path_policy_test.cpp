// sdk::PathPolicy / resolve_inside: symlinks followed, grants checked, read-only grants honoured.
#include "execmcp/sdk/path_policy.hpp"

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;
using execmcp::sdk::Access;
using execmcp::sdk::PathGrant;
using execmcp::sdk::PathPolicy;

class PathPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "execmcp-paths-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = fs::canonical(pattern);
    fs::create_directories(root_ / "ws" / "sub");
    fs::create_directories(root_ / "ref");
    fs::create_directories(root_ / "outside");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  fs::path root_;
};

TEST_F(PathPolicyTest, RelativePathsResolveAgainstTheCwd) {
  PathPolicy policy((root_ / "ws").string(), {{(root_ / "ws").string(), true}});
  EXPECT_EQ(policy.resolve("", Access::Read).path, (root_ / "ws").string());
  EXPECT_EQ(policy.resolve("sub", Access::Write).path, (root_ / "ws" / "sub").string());
  EXPECT_EQ(policy.resolve("sub/../new.txt", Access::Write).path,
            (root_ / "ws" / "new.txt").string());
}

TEST_F(PathPolicyTest, SymlinkOutOfTheWorkspaceIsRefused) {
  fs::create_symlink(root_ / "outside", root_ / "ws" / "escape");
  PathPolicy policy((root_ / "ws").string(), {{(root_ / "ws").string(), true}});
  const auto result = policy.resolve("escape/file", Access::Read);
  EXPECT_EQ(result.path, "");
  EXPECT_NE(result.error.find("outside this agent's allowed paths"), std::string::npos)
      << result.error;
  // `..` out of the workspace too.
  EXPECT_NE(policy.resolve("../outside", Access::Read).error, "");
}

// Found by the path resolver fuzz target: "sub\0/../../outside" was cut at the NUL by the file
// system calls and accepted as "sub", a path the caller never asked for.
TEST_F(PathPolicyTest, APathWithANulByteIsRefused) {
  PathPolicy policy((root_ / "ws").string(), {{(root_ / "ws").string(), true}});
  using namespace std::string_view_literals;
  const auto result = policy.resolve("sub\0/../../outside"sv, Access::Read);
  EXPECT_EQ(result.path, "");
  EXPECT_NE(result.error.find("NUL"), std::string::npos) << result.error;
}

// Found by the path resolver fuzz target: with a missing component before "..", the symlink
// after it was left unresolved ("missing/../escape/f" became "ws/escape/f", inside by its name
// but outside by what it names).
TEST_F(PathPolicyTest, DotDotAfterAMissingComponentCannotHideASymlink) {
  fs::create_symlink(root_ / "outside", root_ / "ws" / "escape");
  PathPolicy policy((root_ / "ws").string(), {{(root_ / "ws").string(), true}});
  for (const char* requested : {"missing/../escape/f", "missing/deeper/../../escape"}) {
    const auto result = policy.resolve(requested, Access::Write);
    EXPECT_EQ(result.path, "") << requested;
    EXPECT_NE(result.error.find("outside this agent's allowed paths"), std::string::npos)
        << result.error;
  }
}

TEST_F(PathPolicyTest, ReadOnlyGrantRefusesWrites) {
  PathPolicy policy((root_ / "ws").string(),
                    {{(root_ / "ws").string(), true}, {(root_ / "ref").string(), false}});
  const std::string file = (root_ / "ref" / "a.txt").string();
  EXPECT_EQ(policy.resolve(file, Access::Read).error, "");
  const auto write = policy.resolve(file, Access::Write);
  EXPECT_NE(write.error.find("read-only"), std::string::npos) << write.error;
}

TEST_F(PathPolicyTest, AGrantThatLaterBecomesASymlinkFailsClosed) {
  PathPolicy policy((root_ / "ws").string(), {{(root_ / "ref").string(), true}});
  fs::remove(root_ / "ref");
  fs::create_symlink(root_ / "outside", root_ / "ref");
  // The grant was resolved when the policy was made; what the new link points to is not granted.
  EXPECT_NE(policy.resolve((root_ / "ref" / "x").string(), Access::Read).error, "");
  // The one-off form resolves the grant now, and so follows it.
  EXPECT_EQ(execmcp::sdk::resolve_inside((root_ / "ref" / "x").string(), (root_ / "ws").string(),
                                         {{(root_ / "ref").string(), true}}, Access::Read)
                .error,
            "");
}

TEST_F(PathPolicyTest, ProtectedPathsOfAWritableGrantRefuseWritesAtOrUnderThem) {
  fs::create_directories(root_ / "ctx" / "keep" / "deep");
  const std::string keep = (root_ / "ctx" / "keep").string();
  PathPolicy policy((root_ / "ws").string(),
                    {{(root_ / "ws").string(), true}, {(root_ / "ctx").string(), true, {keep}}});
  // Writes elsewhere in the context still work.
  EXPECT_EQ(policy.resolve((root_ / "ctx" / "free.txt").string(), Access::Write).error, "");
  EXPECT_EQ(policy.resolve((root_ / "ctx" / "keeper.txt").string(), Access::Write).error, "");
  for (const fs::path& target :
       {root_ / "ctx" / "keep", root_ / "ctx" / "keep" / "new.txt",
        root_ / "ctx" / "keep" / "deep" / "x", root_ / "ctx" / "free" / ".." / "keep" / "y"}) {
    SCOPED_TRACE(target.string());
    const auto refused = policy.resolve(target.string(), Access::Write);
    EXPECT_EQ(refused.path, "");
    EXPECT_NE(refused.error.find("is protected (context_paths[0].protected_paths)"),
              std::string::npos)
        << refused.error;
    // Reading stays allowed.
    EXPECT_EQ(policy.resolve(target.string(), Access::Read).error, "");
  }
}

TEST_F(PathPolicyTest, ASymlinkIntoAProtectedPathIsRefusedToo) {
  fs::create_directories(root_ / "ctx" / "keep");
  fs::create_symlink(root_ / "ctx" / "keep", root_ / "ws" / "alias");
  PathPolicy policy((root_ / "ws").string(),
                    {{(root_ / "ws").string(), true},
                     {(root_ / "ctx").string(), true, {(root_ / "ctx" / "keep").string()}}});
  const auto refused = policy.resolve("alias/file.txt", Access::Write);
  EXPECT_NE(refused.error.find("is protected"), std::string::npos) << refused.error;
}

}  // namespace
