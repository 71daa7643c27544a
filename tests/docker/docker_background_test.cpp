// Background processes (sdk::BackgroundProcesses) of the Docker backends against the real engine,
// beyond the conformance kit's background cases (docker_conformance_* runs those): the pid in agent
// mode, the refusal's wording, execute() right after stop(), and a long printer that the runner
// streams without keeping.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "execmcp/conformance/background_recorder.hpp"
#include "execmcp/sdk/background_processes.hpp"

#include "docker_test_support.hpp"

namespace {

using namespace execmcp::docker_test;  // NOLINT(google-build-using-namespace)
using namespace std::chrono_literals;
namespace sdk = execmcp::sdk;

using Watcher = execmcp::conformance::BackgroundRecorder;

class DockerBackground : public SharedBackendTest<DockerBackground> {
 public:
  static constexpr const char* kAgent = "background";
  static constexpr const char* kSettings = R"({"pids_limit": 256})";

 protected:
  sdk::BackgroundProcesses& bg() {
    auto* p = static_cast<sdk::BackgroundProcesses*>(
        backend_->query_interface(sdk::kBackgroundProcessesId));
    EXPECT_NE(p, nullptr);
    return *p;
  }
  // Starts `command`, which prints "ready" once its children run: its id once it did, else 0.
  std::uint64_t start_ready(Watcher& w, const std::string& command) {
    sdk::BackgroundRequest req;
    req.command = command;
    const auto started = bg().start_background(req, &w);
    EXPECT_EQ(started.error, "");
    for (int i = 0; i < 100 && w.out().empty(); ++i) std::this_thread::sleep_for(50ms);
    EXPECT_EQ(w.out(), "ready\n");
    return started.error.empty() && w.out() == "ready\n" ? started.id : 0;
  }
  std::string count(const std::string& pattern) {
    return trim(run(*backend_, "ps -eo args | grep -c '" + pattern + "'; true").stdout_data);
  }
};

// In agent mode the runner reports the shell's pid (exec mode may report 0, "unknown").
TEST_F(DockerBackground, AgentModeReportsTheShellsPid) {
  if (test_exec_mode() == "exec") GTEST_SKIP() << "exec mode does not know the pid";
  Watcher w;
  sdk::BackgroundRequest req;
  req.command = "echo $$";
  const auto started = bg().start_background(req, &w);
  ASSERT_EQ(started.error, "");
  EXPECT_GT(started.pid, 0);
  ASSERT_TRUE(w.wait_exit(60s));
  EXPECT_EQ(w.out(), std::to_string(started.pid) + "\n");
}

TEST_F(DockerBackground, AWorkDirOutsideTheGrantsIsRefusedAndNothingStarts) {
  Watcher w;
  sdk::BackgroundRequest req;
  req.command = "echo no";
  req.work_dir = "/etc";
  const auto started = bg().start_background(req, &w);
  EXPECT_NE(started.error.find("work_dir refused"), std::string::npos) << started.error;
  EXPECT_EQ(started.id, 0u);
  EXPECT_EQ(w.exits(), 0);
}

TEST_F(DockerBackground, StopEndsEveryBackgroundProcessBeforeItReturns) {
  Watcher a, b;
  sdk::BackgroundRequest req;
  req.command = "while :; do echo tick; sleep 0.2; done";
  ASSERT_EQ(bg().start_background(req, &a).error, "");
  req.command = "sleep 1003";
  ASSERT_EQ(bg().start_background(req, &b).error, "");
  for (int i = 0; i < 50 && a.out().empty(); ++i) std::this_thread::sleep_for(100ms);
  backend_->stop();
  EXPECT_EQ(a.exits(), 1);
  EXPECT_EQ(b.exits(), 1);
  EXPECT_TRUE(a.exit().killed);
  EXPECT_TRUE(b.exit().killed);
  EXPECT_NE(a.out().find("tick\n"), std::string::npos);
  EXPECT_EQ(count("^sleep 1003"), "0");
  // The backend still serves.
  EXPECT_EQ(run(*backend_, "echo after").stdout_data, "after\n");
}

// Issue 17: a command killed the spare pool in the container, and the kill of a background shell
// then said "killed" while the shell's setsid child ran on. Busy spares now outlive the pool, which
// the runner starts again, so the kill still reaches the whole tree.
TEST_F(DockerBackground, KillingTheSparePoolLeavesNoBackgroundEscapeeAfterTheKill) {
  if (test_exec_mode() == "exec") GTEST_SKIP() << "exec mode runs no spare pool";
  Watcher w;
  const std::uint64_t id = start_ready(w, "setsid sleep 1004 & echo ready; sleep 1005");
  ASSERT_NE(id, 0u);
  ASSERT_EQ(count("^sleep 1004"), "1");
  // The command's shell is a child of its spare, the spare of the pool program: kill that.
  const auto killed =
      run(*backend_, "pool=$(awk '{print $4}' /proc/$PPID/stat); echo $pool; kill -9 $pool");
  ASSERT_EQ(killed.exit_code, 0) << killed.stderr_data;
  ASSERT_GT(std::atol(killed.stdout_data.c_str()), 1) << killed.stdout_data;
  EXPECT_EQ(run(*backend_, "echo again").stdout_data, "again\n");
  bg().terminate_background(id, 0ms);
  ASSERT_TRUE(w.wait_exit(60s));
  EXPECT_EQ(count("^sleep 1004"), "0") << "the setsid child outlived the kill";
  EXPECT_EQ(count("^sleep 1005"), "0");
  // "killed" only when the tree was seen ended; otherwise the end carries why.
  if (!w.exit().killed) {
    EXPECT_NE(w.exit().error, "");
  }
}

// A command that kills execmcp-runner itself takes the runner's whole tree with it: no background
// process of that runner runs on unseen, its end is an error (never "killed"), and the next call
// gets a new runner.
TEST_F(DockerBackground, KillingTheRunnerEndsItsBackgroundShellsAndSaysSo) {
  if (test_exec_mode() == "exec") GTEST_SKIP() << "exec mode runs no execmcp-runner";
  Watcher w;
  const std::uint64_t id = start_ready(w, "setsid sleep 1006 & echo ready; sleep 1007");
  ASSERT_NE(id, 0u);
  // The shell's parent is its spare, the spare's the pool, the pool's the runner.
  run(*backend_,
      "pool=$(awk '{print $4}' /proc/$PPID/stat); kill -9 $(awk '{print $4}' /proc/$pool/stat)");
  ASSERT_TRUE(w.wait_exit(60s));
  EXPECT_FALSE(w.exit().killed);
  EXPECT_NE(w.exit().error, "");
  EXPECT_EQ(run(*backend_, "echo again").stdout_data, "again\n");
  EXPECT_EQ(count("^sleep 1006"), "0") << "a setsid child of the killed runner ran on";
  EXPECT_EQ(count("^sleep 1007"), "0");
}

TEST_F(DockerBackground, AFiftyMegabytePrinterIsStreamedAndKeptNowhere) {
  Watcher w(0);  // counts the bytes, keeps none
  sdk::BackgroundRequest req;
  req.command = "head -c 50000000 /dev/zero | tr '\\0' x";
  const auto started = bg().start_background(req, &w);
  ASSERT_EQ(started.error, "");
  ASSERT_TRUE(w.wait_exit(120s));
  EXPECT_EQ(w.exit().exit_code, 0);
  EXPECT_EQ(w.bytes(), 50000000u);  // every byte, no cap
  if (test_exec_mode() == "exec") return;
  // The runner's peak memory stays far below what went through it. gVisor's /proc has no peak
  // (VmHWM): there the resident size after the printer is what can be read.
  const auto hwm = run(*backend_,
                       "for p in $(pgrep -f 'execmcp-runner --execmcp-runner-channel'); do "
                       "grep VmHWM /proc/$p/status || grep VmRSS /proc/$p/status; done");
  ASSERT_NE(hwm.stdout_data.find("Vm"), std::string::npos) << hwm.stderr_data;
  const long kb = std::stol(hwm.stdout_data.substr(hwm.stdout_data.find(':') + 1));
  std::fprintf(stderr, "  execmcp-runner %s after a 50 MB printer: %ld kB\n",
               hwm.stdout_data.substr(0, 5).c_str(), kb);
  EXPECT_LT(kb, 30 * 1024);
}

}  // namespace
