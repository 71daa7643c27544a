// grant_acl_recursive(): checked by really opening files as uid 1000 in a child process (needs
// root; skipped otherwise).
#include "workspace_acl/workspace_acl.hpp"

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

namespace execmcp::plugins::workspace_acl {
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

// Returns true when uid/gid 1000 can open `path` with `flags` (or create it with O_CREAT).
bool can_open_as_1000(const std::string& path, int flags) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(1000, 1000, 1000) != 0 ||
        ::setresuid(1000, 1000, 1000) != 0)
      ::_exit(2);
    int fd = ::open(path.c_str(), flags, 0644);
    ::_exit(fd >= 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(GrantAcl, GivesUid1000WriteOnWritableTreesAndReadOnlyOnOthers) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to uid 1000";
  TempDir dir;
  const std::string rw = dir.path() + "/rw", ro = dir.path() + "/ro";
  fs::create_directories(rw + "/sub");
  fs::create_directories(ro);
  std::ofstream(rw + "/sub/f.txt") << "x";
  std::ofstream(ro + "/g.txt") << "y";
  ::chmod(dir.path().c_str(), 0755);
  for (const auto& p : {rw, rw + "/sub", ro}) ::chmod(p.c_str(), 0700);
  ::chmod((rw + "/sub/f.txt").c_str(), 0600);
  ::chmod((ro + "/g.txt").c_str(), 0600);
  ASSERT_FALSE(can_open_as_1000(rw + "/sub/f.txt", O_RDONLY));

  ASSERT_EQ(grant_acl_recursive(rw, 1000, true), "");
  ASSERT_EQ(grant_acl_recursive(ro, 1000, false), "");
  EXPECT_TRUE(can_open_as_1000(rw + "/sub/f.txt", O_WRONLY));
  EXPECT_TRUE(can_open_as_1000(rw + "/sub/new.txt", O_WRONLY | O_CREAT));
  EXPECT_TRUE(can_open_as_1000(ro + "/g.txt", O_RDONLY));
  EXPECT_FALSE(can_open_as_1000(ro + "/g.txt", O_WRONLY));
  EXPECT_FALSE(can_open_as_1000(ro + "/new.txt", O_WRONLY | O_CREAT));

  // Files root creates later inherit the grant (default ACL); ownership never changes.
  std::ofstream(rw + "/later.txt") << "z";
  EXPECT_TRUE(can_open_as_1000(rw + "/later.txt", O_WRONLY));
  struct stat st {};
  ASSERT_EQ(::stat((rw + "/sub/f.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  // Other users gain nothing.
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(2000, 2000, 2000) != 0 ||
        ::setresuid(2000, 2000, 2000) != 0)
      ::_exit(2);
    ::_exit(::open((rw + "/sub/f.txt").c_str(), O_RDONLY) >= 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 1);
}

// An agent (another container writing this tree) swaps a directory for a symlink to the outside
// again and again while the grant walks the tree: the walk must never reach the outside, which a
// walk by path names (each call resolving "sub" afresh) does.
TEST(GrantAcl, ADirectorySwappedForASymlinkDuringTheWalkNeverLeadsOutside) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to own the test tree";
  TempDir dir;
  const std::string ws = dir.path() + "/ws", outside = dir.path() + "/outside";
  fs::create_directories(ws + "/sub");
  fs::create_directories(outside);
  for (int i = 0; i < 2000; ++i) {
    std::ofstream(ws + "/sub/f" + std::to_string(i)) << "w";
    std::ofstream(outside + "/f" + std::to_string(i)) << "o";
  }
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    while (!stop) {
      ::rename((ws + "/sub").c_str(), (ws + "/sub.real").c_str());
      ::symlink(outside.c_str(), (ws + "/sub").c_str());
      ::unlink((ws + "/sub").c_str());
      ::rename((ws + "/sub.real").c_str(), (ws + "/sub").c_str());
    }
  });
  for (int round = 0; round < 20; ++round) grant_acl_recursive(ws, 1000, true);
  stop = true;
  swapper.join();
  int touched = 0;
  for (int i = 0; i < 2000; ++i) {
    char buf[256];
    const std::string f = outside + "/f" + std::to_string(i);
    touched += ::lgetxattr(f.c_str(), "system.posix_acl_access", buf, sizeof buf) >= 0;
  }
  EXPECT_EQ(touched, 0) << "files outside the tree got an ACL for uid 1000";
  char buf[256];
  EXPECT_LT(::lgetxattr(outside.c_str(), "system.posix_acl_default", buf, sizeof buf), 0);
}

TEST(GrantAcl, ReportsAMissingPath) {
  EXPECT_NE(grant_acl_recursive("/nonexistent/execmcp/x", 1000, true), "");
}

}  // namespace
}  // namespace execmcp::plugins::workspace_acl
