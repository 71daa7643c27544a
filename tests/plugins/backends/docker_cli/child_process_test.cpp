// Tests for the docker-cli plugin's child processes, with /bin/sh as the child: the environment
// is exactly the one given, input arrives, both streams are read without deadlock, a timeout
// kills, a missing binary is said in words, and no descriptor leaks.
#include "docker_cli/child_process.hpp"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace execmcp::plugins::docker_cli {
namespace {

using namespace std::chrono_literals;

std::map<std::string, std::string> base_env() {
  return {{"PATH", "/usr/bin:/bin"}, {"HOME", "/nonexistent"}, {"LC_ALL", "C"}};
}

int open_fds() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n;
}

CliRun sh(const std::string& script, const std::string* input = nullptr,
          std::chrono::milliseconds timeout = 20s) {
  ChildLauncher sh("sh", base_env());
  return sh.run({"-c", script}, input, timeout);
}

TEST(ChildLauncher, TheEnvironmentIsExactlyTheOneGiven) {
  ::setenv("EXECMCP_CHILD_TEST_SECRET", "leak", 1);
  auto env = base_env();
  env["DOCKER_CONFIG"] = "/cfg";
  ChildLauncher launcher("env", env);
  ASSERT_TRUE(launcher.error().empty()) << launcher.error();
  const auto r = launcher.run({}, nullptr, 20s);
  ::unsetenv("EXECMCP_CHILD_TEST_SECRET");
  ASSERT_TRUE(r.ok()) << r.spawn_error << r.err;
  EXPECT_EQ(r.out, "DOCKER_CONFIG=/cfg\nHOME=/nonexistent\nLC_ALL=C\nPATH=/usr/bin:/bin\n");
}

// Boost.Process 1.74's environment compared a name with every entry over the name's length, so a
// long name read past a shorter entry's end (ASan: heap-buffer-overflow in docker_options_cli_exec,
// 37 variables). Names sort after a short heap-held entry, in env and in extra_env alike.
TEST(ChildLauncher, LongNamesBesideShortEntriesAreSetExactly) {
  auto env = base_env();
  env["AA_SHORT_ENTRY"] = "12";  // 17 bytes with its '=': held on the heap, shorter than the next
  env["ZZ_A_VARIABLE_NAME_FAR_LONGER_THAN_THE_ENTRY_BEFORE_IT"] = "one";
  ChildLauncher launcher("env", env);
  ASSERT_TRUE(launcher.error().empty()) << launcher.error();
  const std::map<std::string, std::string> extra{
      {"ZZ_ANOTHER_VARIABLE_NAME_LONGER_THAN_EVERY_ENTRY_OF_THE_LAUNCHER_ITSELF", "two"},
      {"PATH", "/never/replaced"}};
  std::string error;
  auto child = launcher.spawn({}, ChildStdio{}, error, &extra);
  ASSERT_TRUE(child) << error;
  EXPECT_EQ(child->wait_exit(), 0);
  std::string out;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(child->out_fd(), buf, sizeof buf)) > 0)
    out.append(buf, static_cast<std::size_t>(n));
  EXPECT_EQ(out,
            "AA_SHORT_ENTRY=12\nHOME=/nonexistent\nLC_ALL=C\nPATH=/usr/bin:/bin\n"
            "ZZ_A_VARIABLE_NAME_FAR_LONGER_THAN_THE_ENTRY_BEFORE_IT=one\n"
            "ZZ_ANOTHER_VARIABLE_NAME_LONGER_THAN_EVERY_ENTRY_OF_THE_LAUNCHER_ITSELF=two\n");
}

TEST(ChildLauncher, TheBinaryIsLookedUpInTheChildsPath) {
  ChildLauncher found("sh", base_env());
  EXPECT_TRUE(found.error().empty());
  EXPECT_EQ(found.program().front(), '/');
  auto env = base_env();
  env["PATH"] = "/nonexistent/bin:/also/not";
  ChildLauncher missing("sh", env);
  EXPECT_EQ(missing.error(),
            "the docker CLI 'sh' was not found in PATH (/nonexistent/bin:/also/not): install "
            "docker.io, or set docker_binary");
  const auto r = missing.run({"-c", "true"}, nullptr, 5s);
  EXPECT_EQ(r.spawn_error, missing.error());
  EXPECT_FALSE(r.ok());
  ChildLauncher absolute("/nonexistent/docker", base_env());
  EXPECT_NE(absolute.error().find("'/nonexistent/docker' cannot be run"), std::string::npos)
      << absolute.error();
}

TEST(ChildLauncher, ExitStatusAndBothStreams) {
  const auto r = sh("printf out; printf err >&2; exit 3");
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_EQ(r.out, "out");
  EXPECT_EQ(r.err, "err");
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(sh("kill -9 $$").exit_status, 128 + SIGKILL);
}

TEST(ChildLauncher, InputReachesTheChildAndEnds) {
  const std::string input = "hello\nworld\n";
  const auto r = sh("cat; echo done >&2", &input);
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_EQ(r.out, input);
  EXPECT_EQ(r.err, "done\n");
  const std::string empty;
  EXPECT_EQ(sh("wc -c", &empty).out.find('0') != std::string::npos, true);
  // Without input, stdin is /dev/null, never the server's.
  EXPECT_EQ(sh("cat; echo end").out, "end\n");
}

TEST(ChildLauncher, BigInputAndOutputOnBothStreamsDoNotDeadlock) {
  // More than any pipe or socket buffer, on every stream at once.
  const std::string input(8 << 20, 'x');
  const auto r = sh("tee /dev/stderr | wc -c", &input);
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_EQ(std::stol(r.out), 8 << 20);
  EXPECT_EQ(r.err.size(), input.size());
}

TEST(ChildLauncher, AChildThatStopsReadingGetsNoMoreInput) {
  const std::string input(8 << 20, 'x');
  const auto r = sh("head -c 10 >/dev/null; echo stopped", &input);
  EXPECT_EQ(r.out, "stopped\n");
  EXPECT_FALSE(r.timed_out);
}

TEST(ChildLauncher, TheTimeoutKills) {
  const auto started = std::chrono::steady_clock::now();
  const auto r = sh("echo begun; exec sleep 30", nullptr, 300ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.out, "begun\n");
  EXPECT_EQ(r.exit_status, 128 + SIGTERM);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 20s);
}

TEST(ChildLauncher, TermIgnoredMeansKill) {
  ChildLauncher launcher("sh", base_env());
  std::string error;
  auto child =
      launcher.spawn({"-c", "trap '' TERM; echo ready; while :; do sleep 1; done"}, {}, error);
  ASSERT_TRUE(child) << error;
  pollfd p{child->out_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  EXPECT_EQ(child->end(0ms, 100ms), 128 + SIGKILL);
  EXPECT_EQ(child->poll_exit(), 128 + SIGKILL);
}

TEST(ChildLauncher, AnExitAfterEndOfInputIsWaitedFor) {
  ChildLauncher launcher("sh", base_env());
  std::string error;
  ChildStdio stdio;
  stdio.input = true;
  stdio.stdin_is_stdout = true;
  auto child = launcher.spawn({"-c", "cat; exit 7"}, stdio, error);
  ASSERT_TRUE(child) << error;
  EXPECT_EQ(child->in_fd(), child->out_fd());
  ASSERT_EQ(::write(child->in_fd(), "ping", 4), 4);
  char buf[8];
  pollfd p{child->out_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  EXPECT_EQ(::read(child->out_fd(), buf, sizeof buf), 4);
  child->close_in();
  EXPECT_EQ(child->end(10s), 7);
}

TEST(ChildLauncher, StderrMergedKeepsArrivalOrder) {
  ChildLauncher launcher("sh", base_env());
  std::string error;
  ChildStdio stdio;
  stdio.stderr_is_stdout = true;
  auto child = launcher.spawn({"-c", "echo 1; echo 2 >&2; echo 3"}, stdio, error);
  ASSERT_TRUE(child) << error;
  EXPECT_EQ(child->err_fd(), -1);
  EXPECT_EQ(child->wait_exit(), 0);
  char buf[64];
  const ssize_t n = ::read(child->out_fd(), buf, sizeof buf);
  EXPECT_EQ(std::string(buf, static_cast<std::size_t>(std::max<ssize_t>(n, 0))), "1\n2\n3\n");
}

TEST(ChildLauncher, NoDescriptorLeaks) {
  const int before = open_fds();
  const std::string input = "abc";
  for (int i = 0; i < 20; ++i) {
    sh("cat; echo e >&2", &input);
    sh("exec sleep 30", nullptr, 50ms);
    ChildLauncher("/nonexistent", base_env()).run({}, nullptr, 1s);
  }
  {
    ChildLauncher launcher("sh", base_env());
    std::string error;
    ChildStdio stdio;
    stdio.input = true;
    stdio.stdin_is_stdout = true;
    auto child = launcher.spawn({"-c", "exec sleep 30"}, stdio, error);
    ASSERT_TRUE(child) << error;
  }
  EXPECT_EQ(open_fds(), before);
  // The child sees only its three standard descriptors: ours are close-on-exec, and so is every
  // other descriptor of this process (this one is not).
  const int inherited = ::dup(0);
  ASSERT_GT(inherited, 2);
  const auto r = sh("ls /proc/self/fd | wc -l");
  ::close(inherited);
  EXPECT_EQ(std::stoi(r.out), 4);  // 0, 1, 2 and the one ls reads the directory with
}

TEST(ChildLauncher, ConcurrentSpawnsDoNotHoldEachOthersStreams) {
  // A long-lived child started while another thread spawns must not keep that spawn's pipes:
  // the short runs end as soon as their children exit.
  ChildLauncher launcher("sh", base_env());
  std::string error;
  auto holder = launcher.spawn({"-c", "exec sleep 30"}, {}, error);
  std::vector<std::thread> threads;
  std::atomic<int> slow{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        ChildStdio stdio;
        stdio.input = true;
        stdio.stdin_is_stdout = true;
        std::string e;
        auto c = launcher.spawn({"-c", "exec sleep 30"}, stdio, e);
        const auto r = launcher.run({"-c", "echo x"}, nullptr, 10s);
        if (r.timed_out || r.out != "x\n") ++slow;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(slow.load(), 0);
}

}  // namespace
}  // namespace execmcp::plugins::docker_cli
