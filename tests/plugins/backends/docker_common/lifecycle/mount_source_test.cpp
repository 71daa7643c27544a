// Unit tests of the mount-source check (real files in a temp dir; no engine).
#include "docker_common/lifecycle/mount_source.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace execmcp::plugins::docker_common {
namespace {

namespace fs = std::filesystem;

class MountSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "execmcp-mountsrc-XXXXXX").string();
    root_ = ::mkdtemp(tmpl.data());
    fs::create_directories(root_ + "/ws/tools");
    fs::create_directories(root_ + "/outside");
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

TEST(PathWithin, ComparesWholeComponents) {
  EXPECT_TRUE(path_within("/a/b", "/a/b"));
  EXPECT_TRUE(path_within("/a/b/c", "/a/b"));
  EXPECT_FALSE(path_within("/a/bc", "/a/b"));
  EXPECT_FALSE(path_within("/a", "/a/b"));
  EXPECT_TRUE(path_within("/anything", "/"));
}

TEST_F(MountSourceTest, ARealDirectoryOutsideEveryWritableRootIsFine) {
  EXPECT_EQ(check_mount_source(root_ + "/outside", {{root_ + "/ws", "this agent"}}), "");
  // A writable root itself is fine: its own name is not in a directory the agent can change.
  EXPECT_EQ(check_mount_source(root_ + "/ws", {{root_ + "/ws", "this agent"}}), "");
}

TEST_F(MountSourceTest, ASourceInsideAWritableRootIsRefusedNamingWhoCanWriteIt) {
  const auto err = check_mount_source(root_ + "/ws/tools", {{root_ + "/ws", "agent 'b'"}});
  EXPECT_NE(err.find("inside '" + root_ + "/ws'"), std::string::npos) << err;
  EXPECT_NE(err.find("agent 'b'"), std::string::npos) << err;
}

TEST_F(MountSourceTest, ASymlinkAnywhereOnThePathIsRefused) {
  fs::create_directory_symlink(root_ + "/outside", root_ + "/link");
  auto err = check_mount_source(root_ + "/link", {});
  EXPECT_NE(err.find("'" + root_ + "/link' is a symlink"), std::string::npos) << err;
  fs::create_directory(root_ + "/outside/sub");
  err = check_mount_source(root_ + "/link/sub", {});
  EXPECT_NE(err.find("'" + root_ + "/link' is a symlink"), std::string::npos) << err;
}

TEST_F(MountSourceTest, MissingAndNonNormalPathsAreRefused) {
  EXPECT_NE(check_mount_source(root_ + "/nope", {}).find("No such file"), std::string::npos);
  for (const std::string& p : {std::string("relative"), root_ + "/ws/../outside", root_ + "//ws",
                               root_ + "/ws/", root_ + "/./ws", std::string()})
    EXPECT_NE(check_mount_source(p, {}).find("absolute path without"), std::string::npos) << p;
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
