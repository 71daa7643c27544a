// Tests for the container-user policy (the ACL grant: tests/libs/workspace_acl).
#include "docker_common/parts/workspace_access.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <sys/xattr.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

namespace execmcp::plugins::docker_common {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "execmcp-wsacl-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ChooseContainerUser, ConfiguredUserWins) {
  TempDir dir;
  auto c = choose_container_user("4242:4242", dir.path());
  EXPECT_EQ(c.user, "4242:4242");
  EXPECT_FALSE(c.grant_acl);
}

TEST(ChooseContainerUser, NonRootOwnerRunsAsTheOwner) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown the test workspace";
  TempDir dir;
  ASSERT_EQ(::chown(dir.path().c_str(), 4321, 4322), 0);
  auto c = choose_container_user("", dir.path());
  EXPECT_EQ(c.user, "4321:4322");
  EXPECT_FALSE(c.grant_acl);
}

TEST(ChooseContainerUser, RootOwnedWorkspaceRunsAsImageUserWithAcl) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to own the test workspace";
  TempDir dir;
  auto c = choose_container_user("", dir.path());
  EXPECT_EQ(c.user, "1000:1000");
  EXPECT_TRUE(c.grant_acl);
  EXPECT_THROW(choose_container_user("", dir.path() + "/missing"), std::runtime_error);
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
