// Background processes (sdk::BackgroundProcesses) of the Docker backends against the real engine:
// output in order, a kill that ends the whole tree (setsid escapees, TERM ignorers), stop() ending
// them all, and a long printer that the runner streams without keeping.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "execmcp/sdk/background_processes.hpp"

#include "docker_test_support.hpp"

namespace {

using namespace execmcp::docker_test;  // NOLINT(google-build-using-namespace)
using namespace std::chrono_literals;
namespace sdk = execmcp::sdk;

// What the host would be told about one process.
class Watcher final : public sdk::BackgroundObserver {
 public:
  void on_output(sdk::StreamKind kind, std::string_view bytes) noexcept override {
    std::lock_guard lock(mutex_);
    bytes_ += bytes.size();
    if (keep_) (kind == sdk::StreamKind::Stdout ? out_ : err_).append(bytes);
  }
  void on_exit(const sdk::BackgroundExit& exit) noexcept override {
    std::lock_guard lock(mutex_);
    exit_ = exit;
    ++exits_;
    cv_.notify_all();
  }
  bool wait_exit(std::chrono::seconds wait) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, wait, [&] { return exits_ > 0; });
  }
  void keep(bool keep) { keep_ = keep; }
  int exits() {
    std::lock_guard lock(mutex_);
    return exits_;
  }
  sdk::BackgroundExit exit() {
    std::lock_guard lock(mutex_);
    return exit_;
  }
  std::string out() {
    std::lock_guard lock(mutex_);
    return out_;
  }
  std::string err() {
    std::lock_guard lock(mutex_);
    return err_;
  }
  std::size_t bytes() {
    std::lock_guard lock(mutex_);
    return bytes_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::string out_, err_;
  std::size_t bytes_ = 0;
  bool keep_ = true;
  int exits_ = 0;
  sdk::BackgroundExit exit_;
};

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
  std::string count(const std::string& pattern) {
    return trim(run(*backend_, "ps -eo args | grep -c '" + pattern + "'; true").stdout_data);
  }
};

TEST_F(DockerBackground, APrintingLoopDeliversEveryLineInOrderAndItsExit) {
  Watcher w;
  sdk::BackgroundRequest req;
  req.command =
      "i=0; while [ $i -lt 300 ]; do echo line-$i; i=$((i+1)); done; echo $WHO >&2; exit 3";
  req.env = {{"WHO", "bg"}};
  const auto started = bg().start_background(req, &w);
  ASSERT_EQ(started.error, "");
  EXPECT_NE(started.id, 0u);
  EXPECT_EQ(started.work_dir, workspace_->path());
  if (test_exec_mode() != "exec") {
    EXPECT_GT(started.pid, 0);
  }
  ASSERT_TRUE(w.wait_exit(60s));
  std::string expected;
  for (int i = 0; i < 300; ++i) expected += "line-" + std::to_string(i) + "\n";
  EXPECT_EQ(w.out(), expected);
  EXPECT_EQ(w.err(), "bg\n");
  EXPECT_EQ(w.exit().exit_code, 3);
  EXPECT_FALSE(w.exit().killed);
  EXPECT_EQ(w.exit().error, "");
  bg().terminate_background(started.id, 0ms);  // finished: returns at once, no second exit
  EXPECT_EQ(w.exits(), 1);
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

TEST_F(DockerBackground, TerminateEndsTheWholeTreeSetsidEscapeesAndTermIgnorersIncluded) {
  Watcher w;
  sdk::BackgroundRequest req;
  req.command =
      "setsid sleep 1001 & setsid sh -c 'trap \"\" TERM; sleep 1002; sleep 1002' & "
      "trap 'echo got-term; exit 143' TERM; while :; do sleep 1; done";
  const auto started = bg().start_background(req, &w);
  ASSERT_EQ(started.error, "");
  for (int i = 0; i < 100 && count("^sleep 100[12]") != "2"; ++i)
    std::this_thread::sleep_for(100ms);
  ASSERT_EQ(count("^sleep 100[12]"), "2");
  bg().terminate_background(started.id, 2s);
  // Its on_exit() came before terminate returned.
  EXPECT_EQ(w.exits(), 1);
  EXPECT_TRUE(w.exit().killed);
  EXPECT_EQ(count("^sleep 100[12]"), "0");
  EXPECT_EQ(count("^sleep 1$"), "0");
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

TEST_F(DockerBackground, AFiftyMegabytePrinterIsStreamedAndKeptNowhere) {
  Watcher w;
  w.keep(false);
  sdk::BackgroundRequest req;
  req.command = "head -c 50000000 /dev/zero | tr '\\0' x";
  const auto started = bg().start_background(req, &w);
  ASSERT_EQ(started.error, "");
  ASSERT_TRUE(w.wait_exit(120s));
  EXPECT_EQ(w.exit().exit_code, 0);
  EXPECT_EQ(w.bytes(), 50000000u);  // every byte, no cap
  if (test_exec_mode() == "exec") return;
  // The runner's peak memory stays far below what went through it.
  const auto hwm = run(*backend_,
                       "for p in $(pgrep -f 'execmcp-runner --execmcp-runner-channel'); do "
                       "grep VmHWM /proc/$p/status; done");
  ASSERT_NE(hwm.stdout_data.find("VmHWM"), std::string::npos) << hwm.stderr_data;
  const long kb = std::stol(hwm.stdout_data.substr(hwm.stdout_data.find(':') + 1));
  std::fprintf(stderr, "  execmcp-runner VmHWM after a 50 MB printer: %ld kB\n", kb);
  EXPECT_LT(kb, 30 * 1024);
}

}  // namespace
