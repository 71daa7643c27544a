// The local file tools' path resolver: lexical grant lookup, opening beneath a grant with the
// kernel's openat2 and with the component walk, and a symlink swapped in while it resolves.
#include "path_beneath.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "swap_while_alive.hpp"

namespace {

namespace fs = std::filesystem;
using execmcp::plugins::local::GrantRoot;
using execmcp::plugins::local::locate;
using execmcp::plugins::local::open_beneath;
using execmcp::plugins::local::open_grant_root;
using execmcp::plugins::local::open_parent_beneath;
using execmcp::plugins::local::Resolver;
using execmcp::sdk::Access;

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string read_fd(int fd) {
  std::string data;
  char buf[256];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) data.append(buf, static_cast<std::size_t>(n));
  return data;
}

TEST(Locate, MapsPathsToTheGrantLexically) {
  const std::vector<GrantRoot> roots{{"/ws", "/real/ws", true, {}}, {"/ref", "/ref", false, {}}};
  auto a = locate("sub/f.txt", "/ws", roots, Access::Write);
  EXPECT_EQ(a.error, "");
  EXPECT_EQ(a.grant, 0u);
  EXPECT_EQ(a.relative, "sub/f.txt");
  // The canonical form of a grant counts too; "." and "//" are dropped, ".." goes up as written.
  auto b = locate("/real/ws/./a//b/../c", "/ws", roots, Access::Read);
  EXPECT_EQ(b.error, "");
  EXPECT_EQ(b.relative, "a/c");
  EXPECT_EQ(locate("", "/ws", roots, Access::Read).relative, "");
  auto ref = locate("../ref/x", "/ws", roots, Access::Read);
  EXPECT_EQ(ref.grant, 1u);
  EXPECT_EQ(ref.relative, "x");
}

TEST(Locate, RefusesOutsideReadOnlyAndNul) {
  const std::vector<GrantRoot> roots{{"/ws", "/ws", true, {}}, {"/ref", "/ref", false, {}}};
  EXPECT_NE(locate("../etc/passwd", "/ws", roots, Access::Read).error.find("outside"),
            std::string::npos);
  EXPECT_NE(locate("/wsx/a", "/ws", roots, Access::Read).error, "");  // a prefix, not a parent
  EXPECT_NE(locate("/../../ws/../etc", "/ws", roots, Access::Read).error, "");
  EXPECT_NE(locate("/ref/x", "/ws", roots, Access::Write).error.find("read-only"),
            std::string::npos);
  EXPECT_NE(locate(std::string("a\0/../../etc", 12), "/ws", roots, Access::Read).error.find("NUL"),
            std::string::npos);
}

TEST(Locate, RefusesWritesAtOrBeneathAProtectedPathButReadsThem) {
  const std::vector<GrantRoot> roots{
      {"/ws", "/real/ws", true, {"/ws/.git", "/real/ws/.git", "/ws/config.json"}}};
  for (const std::string path :
       {".git", ".git/config", "/real/ws/.git/hooks/x", "config.json", "sub/../.git/./HEAD"}) {
    const auto write = locate(path, "/ws", roots, Access::Write);
    EXPECT_NE(write.error.find("is protected"), std::string::npos) << path << ": " << write.error;
    EXPECT_NE(write.error.find("read-only for this agent"), std::string::npos) << path;
    EXPECT_EQ(locate(path, "/ws", roots, Access::Read).error, "") << path;
  }
  // Beside a protected path, and a name it is only a prefix of, stay writable.
  for (const std::string path : {"src/a.txt", ".gitignore", "config.json.bak", ".git2/x"})
    EXPECT_EQ(locate(path, "/ws", roots, Access::Write).error, "") << path;
}

class OpenBeneath : public ::testing::TestWithParam<Resolver> {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "execmcp-beneath-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    top_ = fs::canonical(pattern);
    ws_ = top_ / "ws";
    outside_ = top_ / "outside";
    fs::create_directories(ws_ / "sub");
    fs::create_directories(outside_);
    write_text(ws_ / "sub" / "f.txt", "inside");
    write_text(outside_ / "f.txt", "SECRET");
    root_fd_ = open_grant_root(ws_.string());
    ASSERT_GE(root_fd_, 0);
  }
  void TearDown() override {
    if (root_fd_ >= 0) ::close(root_fd_);
    std::error_code ec;
    fs::remove_all(top_, ec);
  }
  // The content read through open_beneath, or "error <errno>".
  std::string read(const std::string& relative) {
    const int fd = open_beneath(root_fd_, ws_.string(), relative, O_RDONLY, 0, GetParam());
    if (fd < 0) return "error " + std::to_string(-fd);
    std::string data = read_fd(fd);
    ::close(fd);
    return data;
  }
  fs::path top_, ws_, outside_;
  int root_fd_ = -1;
};

TEST_P(OpenBeneath, FollowsSymlinksThatStayInside) {
  fs::create_symlink("sub/f.txt", ws_ / "rel");
  fs::create_symlink(ws_ / "sub", ws_ / "abs");  // absolute, but pointing inside
  fs::create_symlink("../sub", ws_ / "sub" / "up");
  EXPECT_EQ(read("sub/f.txt"), "inside");
  EXPECT_EQ(read("rel"), "inside");
  EXPECT_EQ(read("abs/f.txt"), "inside");
  EXPECT_EQ(read("sub/up/up/f.txt"), "inside");
}

TEST_P(OpenBeneath, RefusesEveryWayOut) {
  fs::create_symlink(outside_, ws_ / "out");
  fs::create_symlink("../outside/f.txt", ws_ / "rel-out");
  fs::create_symlink("/proc/self/root" + outside_.string() + "/f.txt", ws_ / "magic");
  const std::string exdev = "error " + std::to_string(EXDEV);
  EXPECT_EQ(read("out/f.txt"), exdev);
  EXPECT_EQ(read("rel-out"), exdev);
  EXPECT_EQ(read("../outside/f.txt"), exdev);
  EXPECT_EQ(read("sub/../../outside/f.txt"), exdev);
  EXPECT_EQ(read("/" + outside_.string() + "/f.txt").rfind("error", 0), 0u);
  EXPECT_EQ(read("magic").rfind("error", 0), 0u);
  fs::create_symlink("loop", ws_ / "loop");
  EXPECT_EQ(read("loop"), "error " + std::to_string(ELOOP));
}

TEST_P(OpenBeneath, ParentFollowsALastSymlinkInsideAndCreatesDirectories) {
  fs::create_symlink("sub/f.txt", ws_ / "link");
  auto parent = open_parent_beneath(root_fd_, ws_.string(), "link", false, GetParam());
  ASSERT_GE(parent.fd, 0) << parent.error;
  EXPECT_EQ(parent.leaf, "f.txt");
  struct stat st {};
  EXPECT_EQ(::fstatat(parent.fd, parent.leaf.c_str(), &st, 0), 0);
  ::close(parent.fd);

  fs::create_symlink(outside_ / "new.txt", ws_ / "dangling-out");
  auto out = open_parent_beneath(root_fd_, ws_.string(), "dangling-out", false, GetParam());
  EXPECT_EQ(out.fd, -1);
  EXPECT_EQ(out.error, EXDEV);

  auto made = open_parent_beneath(root_fd_, ws_.string(), "a/b/c.txt", true, GetParam());
  ASSERT_GE(made.fd, 0) << made.error;
  EXPECT_EQ(made.leaf, "c.txt");
  ::close(made.fd);
  EXPECT_TRUE(fs::is_directory(ws_ / "a" / "b"));
  auto missing = open_parent_beneath(root_fd_, ws_.string(), "x/y.txt", false, GetParam());
  EXPECT_EQ(missing.error, ENOENT);
}

// A directory on the path is swapped for a symlink out (renameat2 RENAME_EXCHANGE, atomic) as
// fast as possible while reads and writes go on: not one byte outside may be read or written.
TEST_P(OpenBeneath, SymlinkSwappedInDuringResolutionNeverLeaksOut) {
  fs::create_directories(ws_ / "d");
  write_text(ws_ / "d" / "f.txt", "inside");
  fs::create_symlink(outside_, ws_ / "d-link");
  execmcp::test::SwapWhileAlive swapper(ws_ / "d", ws_ / "d-link");  // stops even on ASSERT
  int reads_inside = 0;
  int writes_inside = 0;
  // 2000 tries, and on a loaded machine more until a read and a write got through.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int i = 0; (i < 2000 || reads_inside == 0 || writes_inside == 0) &&
                  std::chrono::steady_clock::now() < until;
       ++i) {
    const std::string data = read("d/f.txt");
    ASSERT_NE(data, "SECRET") << "read outside after " << i << " tries";
    reads_inside += data == "inside" ? 1 : 0;
    auto parent = open_parent_beneath(root_fd_, ws_.string(), "d/new.txt", false, GetParam());
    if (parent.fd >= 0) {
      const int fd = ::openat(parent.fd, parent.leaf.c_str(),
                              O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd >= 0) {
        ++writes_inside;
        ::close(fd);
      }
      ::close(parent.fd);
    }
    ASSERT_FALSE(fs::exists(outside_ / "new.txt")) << "wrote outside after " << i << " tries";
  }
  swapper.stop();
  EXPECT_GT(reads_inside, 0) << "the race never let a read through: the test proves nothing";
  EXPECT_GT(writes_inside, 0);
}

INSTANTIATE_TEST_SUITE_P(Resolvers, OpenBeneath,
                         ::testing::Values(Resolver::kKernel, Resolver::kWalk),
                         [](const auto& info) {
                           return info.param == Resolver::kKernel ? "Kernel" : "Walk";
                         });

TEST(OpenGrantRoot, AGrantReplacedByASymlinkFailsClosed) {
  std::string pattern = (fs::temp_directory_path() / "execmcp-grant-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const fs::path top = fs::canonical(pattern);
  fs::create_directories(top / "elsewhere");
  fs::create_symlink(top / "elsewhere", top / "grant");
  EXPECT_EQ(open_grant_root((top / "grant").string()), -ELOOP);
  fs::remove_all(top);
}

}  // namespace
