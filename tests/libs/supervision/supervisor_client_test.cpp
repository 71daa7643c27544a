// run_supervised() on its own, with execmcp-runner as the spare pool (it is one when started with
// the pool's argument): graceful termination (SIGTERM, grace, SIGKILL) of the whole tree, output
// that is streamed and never kept, and the shell's pid announced as soon as it is known.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "supervision/supervisor_client.hpp"

namespace execmcp::plugins::supervision {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool gone(long pid) {
  // The spare (a subreaper) reaps what it kills, so a killed process disappears entirely.
  for (int i = 0; i < 500; ++i) {
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Cancels the command once its stdout has shown `marker`, and remembers when.
class CancelOnMarker : public sdk::OutputSink {
 public:
  explicit CancelOnMarker(std::string marker) : marker_(std::move(marker)) {}
  void on_output(sdk::StreamKind stream, std::string_view chunk) noexcept override {
    if (stream != sdk::StreamKind::Stdout) return;
    seen_.append(chunk);
    if (!token.cancel_requested() && seen_.find(marker_) != std::string::npos) {
      cancelled_at = Clock::now();
      token.request_cancel();
    }
  }
  sdk::CancelToken token;
  Clock::time_point cancelled_at;

 private:
  std::string marker_;
  std::string seen_;
};

class ProcessSupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("execmcp-supervisor-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    dir_fd_ = ::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(dir_fd_, 0);
  }
  void TearDown() override {
    ::close(dir_fd_);
    fs::remove_all(dir_);
  }

  SpawnSpec spec(const std::string& command) const {
    SpawnSpec s;
    s.shell = "/bin/sh";
    s.command = command;
    s.work_dir = dir_.string();
    s.work_dir_fd = dir_fd_;
    s.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "DIR=" + dir_.string()};
    return s;
  }

  SupervisorProgram pool_{EXECMCP_RUNNER_PATH};
  fs::path dir_;
  int dir_fd_ = -1;
};

TEST_F(ProcessSupervisorTest, TermIgnoringCommandIsKilledAfterTheGrace) {
  CancelOnMarker sink("ready");
  RunControl control;
  control.sink = &sink;
  control.cancel = &sink.token;
  control.term_grace = 700ms;
  int wait_status = 0;
  const auto result = run_supervised(
      pool_, spec("trap '' TERM; echo ready; while :; do sleep 0.05; done"), control, &wait_status);
  const auto after_cancel = Clock::now() - sink.cancelled_at;
  EXPECT_TRUE(result.error.empty()) << result.error;
  EXPECT_TRUE(result.cancelled);
  ASSERT_TRUE(WIFSIGNALED(wait_status)) << wait_status;
  EXPECT_EQ(WTERMSIG(wait_status), SIGKILL);
  EXPECT_EQ(result.exit_code, 128 + SIGKILL);
  // It ignored SIGTERM, so only the kill at the end of the grace ended it.
  EXPECT_GE(after_cancel, 700ms);
}

TEST_F(ProcessSupervisorTest, TermHonouringTreeEndsByItsTrapWithinTheGrace) {
  CancelOnMarker sink("ready");
  RunControl control;
  control.sink = &sink;
  control.cancel = &sink.token;
  control.term_grace = 60s;
  int wait_status = 0;
  // The child traps too: SIGTERM reaches every process, and the command waits for all of them.
  const auto result =
      run_supervised(pool_,
                     spec("trap 'echo trapped; exit 3' TERM; "
                          "sh -c 'trap \"echo child-trapped > $DIR/child; exit 0\" TERM; "
                          "touch $DIR/child.ready; while :; do sleep 0.05; done' & "
                          "while [ ! -e $DIR/child.ready ]; do sleep 0.01; done; "
                          "echo ready; while :; do sleep 0.05; done"),
                     control, &wait_status);
  EXPECT_TRUE(result.error.empty()) << result.error;
  EXPECT_TRUE(result.cancelled);
  ASSERT_TRUE(WIFEXITED(wait_status)) << wait_status;  // its own exit, not our SIGKILL
  EXPECT_EQ(WEXITSTATUS(wait_status), 3);
  EXPECT_NE(result.stdout_data.find("trapped"), std::string::npos) << result.stdout_data;
  EXPECT_EQ(read_text(dir_ / "child"), "child-trapped\n");
}

TEST_F(ProcessSupervisorTest, SetsidEscapeeGetsTermAndNothingOutlivesTheGrace) {
  CancelOnMarker sink("ready");
  RunControl control;
  control.sink = &sink;
  control.cancel = &sink.token;
  control.term_grace = 1500ms;
  // Two escapees in sessions of their own, out of reach of the shell's group: one honours TERM
  // (and says so in a file), one ignores it. The shell waits on them, so they are its children
  // (found through the ppid links), not yet re-parented to the spare.
  const auto result = run_supervised(
      pool_,
      spec("setsid sh -c 'trap \"echo got-term > $DIR/honours.term; exit 0\" TERM; "
           "echo $$ > $DIR/honours.pid; while :; do sleep 0.05; done' & "
           "setsid sh -c 'trap \"\" TERM; echo $$ > $DIR/ignores.pid; "
           "while :; do sleep 0.05; done' & "
           "while [ ! -s $DIR/honours.pid ] || [ ! -s $DIR/ignores.pid ]; do sleep 0.01; done; "
           "echo ready; wait"),
      control);
  EXPECT_TRUE(result.error.empty()) << result.error;
  EXPECT_TRUE(result.cancelled);
  EXPECT_EQ(read_text(dir_ / "honours.term"), "got-term\n");
  for (const char* name : {"honours.pid", "ignores.pid"}) {
    const long pid = std::stol(read_text(dir_ / name));
    EXPECT_TRUE(gone(pid)) << name << " " << pid << " is still alive";
  }
}

TEST_F(ProcessSupervisorTest, StopDuringTheGraceOfACancelKillsAtOnce) {
  CancelOnMarker sink("ready");
  RunControl control;
  control.sink = &sink;
  control.cancel = &sink.token;
  control.term_grace = 60s;
  std::atomic<bool> stop{false};
  control.stop = &stop;
  int wait_status = 0;
  std::jthread stopper([&] {
    while (!sink.token.cancel_requested()) std::this_thread::sleep_for(5ms);
    std::this_thread::sleep_for(200ms);  // well into the grace
    stop.store(true, std::memory_order_release);
  });
  const auto result = run_supervised(
      pool_, spec("trap '' TERM; echo ready; while :; do sleep 0.05; done"), control, &wait_status);
  // Not the 60 s grace: the stop cut it short.
  EXPECT_LT(Clock::now() - sink.cancelled_at, 30s);
  EXPECT_TRUE(result.cancelled);
  ASSERT_TRUE(WIFSIGNALED(wait_status)) << wait_status;
  EXPECT_EQ(WTERMSIG(wait_status), SIGKILL);
}

TEST_F(ProcessSupervisorTest, ZeroGraceStillKillsAtOnce) {
  // The default: a TERM-trapping shell gets no chance to run its trap.
  CancelOnMarker sink("ready");
  RunControl control;
  control.sink = &sink;
  control.cancel = &sink.token;
  int wait_status = 0;
  const auto result = run_supervised(
      pool_, spec("trap 'echo trapped; exit 3' TERM; echo ready; while :; do sleep 0.05; done"),
      control, &wait_status);
  EXPECT_TRUE(result.cancelled);
  ASSERT_TRUE(WIFSIGNALED(wait_status)) << wait_status;
  EXPECT_EQ(WTERMSIG(wait_status), SIGKILL);
  EXPECT_EQ(result.stdout_data, "ready\n");
}

class CountingSink : public sdk::OutputSink {
 public:
  void on_output(sdk::StreamKind stream, std::string_view chunk) noexcept override {
    (stream == sdk::StreamKind::Stdout ? out : err) += chunk.size();
    for (char c : chunk) all_zero = all_zero && c == '\0';
  }
  std::size_t out = 0, err = 0;
  bool all_zero = true;
};

TEST_F(ProcessSupervisorTest, UnretainedOutputGoesWholeToTheSinkAndIsNotKept) {
  CountingSink sink;
  RunControl control;
  control.sink = &sink;
  control.retain_output = false;
  control.output_cap = 1024;  // does not apply
  constexpr std::size_t kBytes = 50u * 1024 * 1024;
  const auto result = run_supervised(
      pool_, spec("head -c " + std::to_string(kBytes) + " /dev/zero; head -c 3000 /dev/zero >&2"),
      control);
  EXPECT_TRUE(result.error.empty()) << result.error;
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(sink.out, kBytes);
  EXPECT_EQ(sink.err, 3000u);
  EXPECT_TRUE(sink.all_zero);
  EXPECT_TRUE(result.stdout_data.empty());
  EXPECT_TRUE(result.stderr_data.empty());
  EXPECT_FALSE(result.stdout_truncated);
  EXPECT_FALSE(result.stderr_truncated);
}

// Records the order of on_started() and output.
class OrderSink : public sdk::OutputSink {
 public:
  void on_output(sdk::StreamKind, std::string_view chunk) noexcept override {
    events.push_back("output");
    text.append(chunk);
  }
  std::vector<std::string> events;
  std::string text;
};

TEST_F(ProcessSupervisorTest, OnStartedGetsTheShellsPidOnceBeforeAnyOutput) {
  OrderSink sink;
  RunControl control;
  control.sink = &sink;
  long announced = 0;
  int calls = 0;
  bool alive_then = false;
  control.on_started = [&](long pid) {
    ++calls;
    announced = pid;
    sink.events.push_back("started");
    alive_then = ::kill(static_cast<pid_t>(pid), 0) == 0 &&
                 fs::exists("/proc/" + std::to_string(pid) + "/stat");
  };
  // Output at once: it must still come after the announcement.
  const auto result = run_supervised(pool_, spec("echo $$; sleep 0.2; echo done"), control);
  EXPECT_TRUE(result.error.empty()) << result.error;
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(alive_then);
  EXPECT_EQ(result.stdout_data, std::to_string(announced) + "\ndone\n");
  ASSERT_FALSE(sink.events.empty());
  EXPECT_EQ(sink.events.front(), "started");
}

TEST_F(ProcessSupervisorTest, OnStartedIsNotCalledWhenNoShellStarts) {
  RunControl control;
  int calls = 0;
  control.on_started = [&](long) { ++calls; };
  auto s = spec("true");
  s.shell = (dir_ / "no-such-shell").string();
  const auto result = run_supervised(pool_, s, control);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(result.exit_code, 127);
  EXPECT_NE(result.stderr_data.find("cannot run shell"), std::string::npos) << result.stderr_data;
}

}  // namespace
}  // namespace execmcp::plugins::supervision
