// The conformance cases of the optional interface execmcp.background/1 (BackgroundProcesses): each
// is skipped, with a message saying why, when the backend does not offer it.
//
// Whether a process is still alive is asked of the backend itself (`kill -0` through execute(),
// on pids the processes wrote to files), so the cases hold for a sandboxed backend whose pids the
// test cannot see; heartbeat files in the workspace tell when the backend may be stopped.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "execmcp/conformance/background_recorder.hpp"
#include "execmcp/sdk/background_processes.hpp"

#include "conformance_fixture.hpp"

namespace execmcp::conformance {

namespace detail {
void link_background_cases() noexcept {}
}  // namespace detail

namespace {

using detail::Clock;
using detail::file_size_or_zero;
using detail::read_host_file;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

class BackgroundConformance : public detail::BackendFixture {
 protected:
  void SetUp() override {
    detail::BackendFixture::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    processes_ = sdk::background_processes(*backend_);
    if (processes_ == nullptr)
      GTEST_SKIP() << "'" << GetParam().name << "' does not offer " << sdk::kBackgroundProcessesId
                   << " (query_interface() answered null): the background cases do not apply";
  }

  sdk::BackgroundStarted start(BackgroundRecorder& recorder, const std::string& command,
                               const std::string& work_dir = "") {
    sdk::BackgroundRequest request;
    request.command = command;
    request.work_dir = work_dir;
    return processes_->start_background(request, &recorder);
  }

  // terminate_background() on another thread; false when it did not return within the slack.
  bool terminate_returns(std::uint64_t id, std::chrono::milliseconds grace) {
    auto done = std::async(std::launch::async,
                           [this, id, grace] { processes_->terminate_background(id, grace); });
    return done.wait_for(slack() + grace) == std::future_status::ready;
  }

  // The pids (read from files the processes wrote in the workspace) that the backend still sees
  // running, as its own shell reports them; a zombie counts as gone.
  std::string alive(const std::vector<std::string>& pid_files) {
    std::string pids;
    for (const auto& file : pid_files) pids += " " + detail::read_host_file(workspace_ / file);
    for (char& c : pids)
      if (c == '\n') c = ' ';
    auto result = run("for p in" + pids +
                      "; do if kill -0 $p 2>/dev/null || [ -d /proc/$p ]; then"
                      " case \"$(cat /proc/$p/stat 2>/dev/null)\" in *') Z '*) ;; *) echo $p;; "
                      "esac; fi; done");
    return result.error.empty() ? result.stdout_data : "execute failed: " + result.error;
  }

  // Waits (up to the slack) for every pid in the files to be gone; returns those left.
  std::string wait_gone(const std::vector<std::string>& pid_files) {
    auto until = Clock::now() + slack();
    std::string left = alive(pid_files);
    while (!left.empty() && Clock::now() < until) {
      std::this_thread::sleep_for(100ms);
      left = alive(pid_files);
    }
    return left;
  }

  bool have_setsid() { return run("command -v setsid").exit_code == 0; }

  sdk::BackgroundProcesses* processes_ = nullptr;
};

TEST_P(BackgroundConformance, StreamsOutputAndReportsTheExitOnce) {
  fs::create_directories(workspace_ / "sub");
  BackgroundRecorder recorder;
  sdk::BackgroundRequest request;
  // In order per stream, stdin empty (`cat` ends at once), the request's environment, work_dir.
  request.command =
      "i=0; while [ $i -lt 200 ]; do echo line-$i; i=$((i+1)); done; echo $$ > bg.pid; cat; "
      "printf '%s\\n' \"$EXECMCP_BG\" >&2; exit 7";
  request.work_dir = "sub";
  request.env = {{"EXECMCP_BG", "one two=three"}};
  const auto started = processes_->start_background(request, &recorder);
  ASSERT_EQ(started.error, "");
  EXPECT_NE(started.id, 0u);
  EXPECT_EQ(started.work_dir, (workspace_ / "sub").string());
  ASSERT_TRUE(recorder.wait_exit(slack())) << "no on_exit(): did `cat` wait for input?";
  std::string expected;
  for (int i = 0; i < 200; ++i) expected += "line-" + std::to_string(i) + "\n";
  EXPECT_EQ(recorder.out(), expected);
  EXPECT_EQ(recorder.err(), "one two=three\n");
  const auto exit = recorder.exit();
  EXPECT_EQ(exit.exit_code, 7);
  EXPECT_EQ(exit.signal, 0);
  EXPECT_FALSE(exit.killed);
  EXPECT_EQ(exit.error, "");
  if (started.pid != 0) {  // 0 means "unknown" in the contract
    EXPECT_EQ(read_host_file(workspace_ / "sub" / "bg.pid"), std::to_string(started.pid) + "\n");
  }
  // Nothing comes after on_exit(), not even for a terminate of the finished process.
  EXPECT_TRUE(terminate_returns(started.id, 0ms));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(recorder.exits(), 1);
  EXPECT_EQ(recorder.breach(), "");
}

TEST_P(BackgroundConformance, WorkDirIsConfinedAndARefusalRunsNothing) {
  fs::create_symlink(outside_, workspace_ / "escape");
  const fs::path marker = workspace_ / "ran";
  const std::vector<std::string> refused = {"..",     outside_.string(),   "/",
                                            "escape", "escape/../outside", "no/such/dir"};
  std::vector<std::unique_ptr<BackgroundRecorder>> recorders;
  for (const auto& dir : refused) {
    recorders.push_back(std::make_unique<BackgroundRecorder>());
    const auto started = start(*recorders.back(), "touch '" + marker.string() + "'", dir);
    EXPECT_NE(started.error, "") << "work_dir " << dir << " was accepted";
    EXPECT_EQ(started.id, 0u) << "work_dir " << dir;
  }
  std::this_thread::sleep_for(300ms);
  for (std::size_t i = 0; i < refused.size(); ++i) {
    EXPECT_EQ(recorders[i]->exits(), 0) << "an observer call for refused work_dir " << refused[i];
    EXPECT_EQ(recorders[i]->bytes(), 0u) << "output for refused work_dir " << refused[i];
  }
  EXPECT_FALSE(fs::exists(marker)) << "a refused start ran its command";
  // A context path is an allowed place to run in, as for execute().
  BackgroundRecorder context;
  const auto started = start(context, "pwd -P", context_.string());
  ASSERT_EQ(started.error, "");
  EXPECT_EQ(started.work_dir, context_.string());
  ASSERT_TRUE(context.wait_exit(slack()));
  EXPECT_EQ(context.out(), context_.string() + "\n");
}

TEST_P(BackgroundConformance, TerminateEndsTheWholeTreeAndReportsKilled) {
  // The shell, a child that ignores TERM and (with setsid) an escapee in its own session that
  // ignores it too: all must be gone once terminate returns, the last two by the KILL.
  std::vector<std::string> pid_files = {"shell.pid", "child.pid"};
  std::string command =
      "echo $$ > shell.pid; sh -c 'trap \"\" TERM; echo $$ > child.pid; exec sleep 1000' & ";
  std::string ready = "[ -s child.pid ]";
  if (have_setsid()) {
    command += "setsid sh -c 'trap \"\" TERM; echo $$ > escapee.pid; exec sleep 1000' & ";
    ready += " && [ -s escapee.pid ]";
    pid_files.push_back("escapee.pid");
  }
  command += "until " + ready + "; do sleep 0.01; done; echo ready; wait";
  BackgroundRecorder recorder;
  const auto started = start(recorder, command);
  ASSERT_EQ(started.error, "");
  ASSERT_TRUE(recorder.wait_output("ready", slack())) << recorder.err();
  const std::string before = alive(pid_files);
  ASSERT_EQ(std::count(before.begin(), before.end(), '\n'), static_cast<long>(pid_files.size()))
      << "the liveness check does not see the processes running: '" << before << "'";

  ASSERT_TRUE(terminate_returns(started.id, 300ms)) << "terminate_background() did not return";
  EXPECT_EQ(recorder.exits(), 1) << "terminate returned before on_exit()";
  const auto exit = recorder.exit();
  EXPECT_TRUE(exit.killed);
  EXPECT_EQ(exit.exit_code, -1);
  EXPECT_EQ(exit.signal, SIGTERM) << "the shell honours TERM; the others need the KILL";
  EXPECT_EQ(wait_gone(pid_files), "") << "processes of the tree still run";
  EXPECT_EQ(recorder.breach(), "");
}

TEST_P(BackgroundConformance, TerminateOfAnUnknownOrFinishedIdReturnsAtOnce) {
  // A grace longer than the wait: returning within it shows nothing waited for the grace.
  const auto grace = std::chrono::duration_cast<std::chrono::milliseconds>(3 * slack());
  EXPECT_TRUE(terminate_returns(0, grace));
  EXPECT_TRUE(terminate_returns(0x7fffffffffffULL, grace));
  BackgroundRecorder recorder;
  const auto started = start(recorder, "exit 0");
  ASSERT_EQ(started.error, "");
  ASSERT_TRUE(recorder.wait_exit(slack()));
  EXPECT_TRUE(terminate_returns(started.id, grace));
  EXPECT_TRUE(terminate_returns(started.id + 1000, grace));
  EXPECT_EQ(recorder.exits(), 1);
  EXPECT_FALSE(recorder.exit().killed);
  EXPECT_EQ(recorder.breach(), "");
}

// A printer, a TERM ignorer and (with setsid) an escapee, each with a heartbeat.
TEST_P(BackgroundConformance, StopEndsEveryProcessAndStartDoesNotReviveThem) {
  std::vector<std::string> commands = {
      "while :; do echo tick; echo x >> '" + workspace_path("hb0") + "'; sleep 0.1; done",
      "trap '' TERM; (" + heartbeat("hb1") + ") & wait"};
  if (have_setsid()) commands.push_back("setsid sh -c \"" + heartbeat("hb2") + "\" & sleep 1000");
  std::vector<std::unique_ptr<BackgroundRecorder>> recorders;
  for (const auto& command : commands) {
    recorders.push_back(std::make_unique<BackgroundRecorder>());
    ASSERT_EQ(start(*recorders.back(), command).error, "") << command;
  }
  for (std::size_t i = 0; i < commands.size(); ++i) wait_for_heartbeat("hb" + std::to_string(i));
  ASSERT_TRUE(recorders[0]->wait_output("tick", slack()));

  auto stopped = std::async(std::launch::async, [this] { backend_->stop(); });
  ASSERT_EQ(stopped.wait_for(slack()), std::future_status::ready) << "stop() did not return";
  for (std::size_t i = 0; i < commands.size(); ++i) {
    EXPECT_EQ(recorders[i]->exits(), 1) << "stop() returned before on_exit() of: " << commands[i];
    EXPECT_TRUE(recorders[i]->exit().killed) << commands[i];
  }
  std::vector<std::string> beats;
  for (std::size_t i = 0; i < commands.size(); ++i) beats.push_back("hb" + std::to_string(i));
  expect_heartbeats_dead(beats, "a process still runs after stop() returned");

  // start() again serves new processes and brings none of the old ones back.
  ASSERT_EQ(backend_->start(), "");
  BackgroundRecorder again;
  ASSERT_EQ(start(again, "echo again").error, "");
  ASSERT_TRUE(again.wait_exit(slack()));
  EXPECT_EQ(again.out(), "again\n");
  expect_heartbeats_dead(beats, "start() again revived a process");
  for (std::size_t i = 0; i < commands.size(); ++i) {
    EXPECT_EQ(recorders[i]->exits(), 1);
    EXPECT_EQ(recorders[i]->breach(), "") << commands[i];
  }
}

TEST_P(BackgroundConformance, CleanupEndsEveryProcessAndReportsEachOnce) {
  std::vector<std::string> commands = {"echo ready; (" + heartbeat("hb0") + ") & sleep 1000",
                                       "trap '' TERM; echo ready; " + heartbeat("hb1")};
  std::vector<std::unique_ptr<BackgroundRecorder>> recorders;
  for (const auto& command : commands) {
    recorders.push_back(std::make_unique<BackgroundRecorder>());
    ASSERT_EQ(start(*recorders.back(), command).error, "") << command;
  }
  for (std::size_t i = 0; i < commands.size(); ++i) {
    ASSERT_TRUE(recorders[i]->wait_output("ready", slack()));
    wait_for_heartbeat("hb" + std::to_string(i));
  }
  auto cleaned = std::async(std::launch::async, [this] { backend_->cleanup(); });
  ASSERT_EQ(cleaned.wait_for(slack()), std::future_status::ready) << "cleanup() did not return";
  for (std::size_t i = 0; i < commands.size(); ++i) {
    EXPECT_EQ(recorders[i]->exits(), 1)
        << "cleanup() returned before on_exit() of: " << commands[i];
    EXPECT_TRUE(recorders[i]->exit().killed) << commands[i];
    EXPECT_EQ(recorders[i]->exit().signal, SIGKILL) << "cleanup() ends them at once";
  }
  expect_heartbeats_dead({"hb0", "hb1"}, "a process still runs after cleanup() returned");
  for (auto& recorder : recorders) EXPECT_EQ(recorder->breach(), "");
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Backends, BackgroundConformance, ::testing::ValuesIn(detail::registry()),
                         detail::test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BackgroundConformance);

}  // namespace execmcp::conformance
