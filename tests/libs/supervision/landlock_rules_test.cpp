// Landlock rules as execmcp-runner takes them (arguments) and applies them (in a forked child, on
// this kernel, forced to ABI 2: what Debian 12's stock kernel has).
#include "supervision/landlock_rules.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;
namespace ll = execmcp::plugins::supervision::landlock;

namespace {

TEST(LandlockRulesTest, ArgumentsRoundTrip) {
  ll::Rules rules;
  rules.rw = {"/workspace", "/tmp"};
  rules.ro = {"/usr"};
  rules.list = {"/"};
  rules.max_abi = 2;
  const auto args = ll::to_args(rules);
  EXPECT_EQ(args.front(), "--execmcp-landlock-rw=/workspace");
  ll::Rules back;
  for (const auto& a : args) EXPECT_TRUE(ll::parse_arg(a, back)) << a;
  EXPECT_EQ(back.rw, rules.rw);
  EXPECT_EQ(back.ro, rules.ro);
  EXPECT_EQ(back.list, rules.list);
  EXPECT_EQ(back.max_abi, 2);
}

TEST(LandlockRulesTest, MalformedArgumentsAreRefused) {
  ll::Rules rules;
  for (const char* bad : {"--execmcp-landlock-rw=relative", "--execmcp-landlock-ro=",
                          "--execmcp-landlock-max-abi=x", "--execmcp-landlock-max-abi=-1",
                          "--execmcp-landlock-max-abi=2x", "--other", "--execmcp-landlock-zz=/"})
    EXPECT_FALSE(ll::parse_arg(bad, rules)) << bad;
  EXPECT_TRUE(rules.empty());
}

TEST(LandlockRulesTest, HandledRightsFollowTheAbi) {
  constexpr std::uint64_t kRefer = 1ULL << 13, kTruncate = 1ULL << 14, kIoctlDev = 1ULL << 15;
  EXPECT_EQ(ll::handled_access(0), 0U);
  EXPECT_EQ(ll::handled_access(1) & (kRefer | kTruncate | kIoctlDev), 0U);
  EXPECT_EQ(ll::handled_access(2) & (kRefer | kTruncate), kRefer);
  EXPECT_NE(ll::handled_access(3) & kTruncate, 0U);
  EXPECT_EQ(ll::handled_access(4) & kIoctlDev, 0U);
  EXPECT_NE(ll::handled_access(5) & kIoctlDev, 0U);
  EXPECT_EQ(ll::ro_access(7) & (1ULL << 1), 0U) << "read-only rules never grant WRITE_FILE";
  EXPECT_EQ(ll::list_access(7), 1ULL << 3);
}

class LandlockApplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ll::kernel_abi() < 2) GTEST_SKIP() << "Landlock ABI >= 2 is not in this kernel";
    char tmpl[] = "/tmp/execmcp-landlock-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/rw/sub");
    fs::create_directories(root_ + "/other");
    std::FILE* f = std::fopen((root_ + "/rw/file").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }
  std::string root_;
};

// Exit code of a child that applied `rules` and then ran `check` (0: every step as expected).
template <typename Check>
int after_apply(const ll::Rules& rules, Check check) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::string error;
    if (ll::apply(rules, error) != (rules.max_abi > 0 ? rules.max_abi : ll::kernel_abi()))
      ::_exit(100);
    ::_exit(check());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

TEST_F(LandlockApplyTest, OnlyTheRulesPathsAreReachable) {
  ll::Rules rules;
  rules.rw = {root_ + "/rw"};
  rules.ro = {"/usr"};
  rules.list = {"/"};
  rules.max_abi = 2;
  const std::string rw = root_ + "/rw", other = root_ + "/other";
  const int code = after_apply(rules, [&] {
    const int created = ::open((rw + "/new").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (created < 0) return 1;
    ::close(created);
    // REFER (ABI 2): a rename across directories inside the rule works.
    if (::rename((rw + "/file").c_str(), (rw + "/sub/file").c_str()) != 0) return 2;
    if (::open((other + "/x").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644) >= 0 ||
        errno != EACCES)
      return 3;
    const int usr = ::open("/usr/bin/sh", O_RDONLY | O_CLOEXEC);
    if (usr < 0) return 4;
    ::close(usr);
    if (::open("/usr/x-landlock", O_CREAT | O_WRONLY | O_CLOEXEC, 0644) >= 0) return 5;
    if (::open("/etc/hostname", O_RDONLY | O_CLOEXEC) >= 0 || errno != EACCES) return 6;
    if (::access(root_.c_str(), F_OK) != 0) return 7;  // listing / is allowed: lookups work
    return 0;
  });
  EXPECT_EQ(code, 0);
  EXPECT_FALSE(fs::exists(other + "/x"));
  EXPECT_TRUE(fs::exists(rw + "/sub/file"));
}

TEST_F(LandlockApplyTest, AbiOneIsRefused) {
  ll::Rules rules;
  rules.rw = {root_ + "/rw"};
  rules.max_abi = 1;
  std::string error;
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(ll::apply(rules, error) == 0 && error.find("REFER") != std::string::npos);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

TEST_F(LandlockApplyTest, AMissingPathFailsClosed) {
  ll::Rules rules;
  rules.rw = {root_ + "/absent"};
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::string error;
    ::_exit(ll::apply(rules, error) == 0 && error.find("cannot open") != std::string::npos);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

}  // namespace
