// The local plugin's background processes (execmcp.background/1) beyond the conformance kit's
// background cases (which local_conformance_test.cpp runs): a TERM trap within the grace, many at
// once, instant ones from many threads, stop() during a flood and a graceful terminate, and the
// work_dir a start reports.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <boost/dll/shared_library.hpp>

#include "execmcp/conformance/background_recorder.hpp"
#include "execmcp/sdk/background_processes.hpp"
#include "execmcp/sdk/plugin.hpp"

namespace {

namespace fs = std::filesystem;
namespace sdk = execmcp::sdk;
using namespace std::chrono_literals;

bool gone(long pid) {
  for (int i = 0; i < 500; ++i) {
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// Running: a process that exists and is not a zombie (a killed one may wait to be reaped).
bool running(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

bool stops_running(long pid) {
  for (int i = 0; i < 300; ++i) {
    if (!running(pid)) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

long read_pid(const fs::path& file) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream in(file);
    long pid = 0;
    if (in >> pid && pid > 0) return pid;
    std::this_thread::sleep_for(10ms);
  }
  return 0;
}

using Recorder = execmcp::conformance::BackgroundRecorder;

class LocalBackgroundTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "execmcp-local-bg-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = fs::canonical(pattern);
    workspace_ = root_ / "ws";
    fs::create_directories(workspace_ / "sub");
  }
  void TearDown() override {
    for (auto& b : backends_) b->cleanup();
    backends_.clear();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  sdk::BackgroundProcesses& make() {
    sdk::BackendInit init;
    init.agent_id = "local-bg-test";
    init.cwd = workspace_.string();
    init.paths = {{workspace_.string(), true}};
    init.settings_json = "{}";
    // The plugin's own backend, made as the host makes it (the kit's factory would do as well).
    auto& factory = library_.get_alias<sdk::BackendFactory>(sdk::kBackendFactorySymbol);
    std::string error;
    backends_.emplace_back(factory(init, error));
    if (!backends_.back()) throw std::runtime_error("no backend: " + error);
    EXPECT_EQ(backends_.back()->start(), "");
    auto* processes = sdk::background_processes(*backends_.back());
    if (processes == nullptr) throw std::runtime_error("the local backend offers no background");
    return *processes;
  }
  sdk::ExecutorBackend& backend() { return *backends_.back(); }

  static sdk::BackgroundStarted start(sdk::BackgroundProcesses& processes, Recorder& recorder,
                                      const std::string& command, const std::string& work_dir = "",
                                      sdk::BackgroundRequest request = {}) {
    request.command = command;
    request.work_dir = work_dir;
    return processes.start_background(request, &recorder);
  }

  boost::dll::shared_library library_{
      EXECMCP_LOCAL_PLUGIN_PATH,
      boost::dll::load_mode::rtld_lazy | boost::dll::load_mode::rtld_local};  // outlives backends_
  fs::path root_, workspace_;
  std::vector<std::unique_ptr<sdk::ExecutorBackend>> backends_;
};

TEST_F(LocalBackgroundTest, WorkDirIsConfinedAsForExecute) {
  auto& processes = make();
  fs::create_directories(root_ / "outside");
  fs::create_directory_symlink(root_ / "outside", workspace_ / "link");
  for (const std::string& dir :
       std::vector<std::string>{"..", (root_ / "outside").string(), "link", "missing"}) {
    Recorder recorder;
    const auto started = start(processes, recorder, "touch ran", dir);
    EXPECT_NE(started.error, "") << dir;
    EXPECT_EQ(started.id, 0u) << dir;
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(recorder.exits(), 0) << dir;
    EXPECT_EQ(recorder.bytes(), 0u) << dir;
  }
  EXPECT_FALSE(fs::exists(root_ / "outside" / "ran"));
  EXPECT_FALSE(fs::exists(root_ / "ran"));
  // execute() says where it ran, resolved the same way.
  sdk::ExecRequest request;
  request.command = "true";
  request.work_dir = "sub/.";
  EXPECT_EQ(backend().execute(request).work_dir, (workspace_ / "sub").string());
  // The workspace itself is named as it is, without a trailing '/' (MassGen's resolved path).
  request.work_dir = "";
  EXPECT_EQ(backend().execute(request).work_dir, fs::canonical(workspace_).string());
  Recorder recorder;
  const auto started = start(processes, recorder, "true", "");
  EXPECT_EQ(started.work_dir, fs::canonical(workspace_).string());
  ASSERT_TRUE(recorder.wait_exit());
}

TEST_F(LocalBackgroundTest, TerminateLetsATrapRunWithinTheGrace) {
  auto& processes = make();
  Recorder recorder;
  const auto started =
      start(processes, recorder,
            "trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.05; done");
  ASSERT_EQ(started.error, "");
  ASSERT_TRUE(recorder.wait_output("ready"));
  processes.terminate_background(started.id, 60s);
  EXPECT_EQ(recorder.exits(), 1);
  EXPECT_EQ(recorder.out(), "ready\nbye\n");
  EXPECT_EQ(recorder.exit().exit_code, 0);
  EXPECT_TRUE(recorder.exit().killed);
}

TEST_F(LocalBackgroundTest, ManyAtOnceEachEndsExactlyOnce) {
  auto& processes = make();
  constexpr int kCount = 12;
  std::vector<std::unique_ptr<Recorder>> recorders;
  std::vector<sdk::BackgroundStarted> started;
  for (int i = 0; i < kCount; ++i) {
    recorders.push_back(std::make_unique<Recorder>());
    started.push_back(
        start(processes, *recorders.back(),
              "i=0; while :; do echo " + std::to_string(i) + " $i; i=$((i+1)); sleep 0.01; done"));
    ASSERT_EQ(started.back().error, "");
  }
  for (auto& r : recorders) ASSERT_TRUE(r->wait_output(" 3\n"));
  // Every one terminated twice, from two threads at once, half of them with a grace.
  std::vector<std::jthread> killers;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < kCount; ++i) {
      killers.emplace_back([&, i] {
        processes.terminate_background(started[i].id, i % 2 == 0 ? 0ms : 5s);
        EXPECT_EQ(recorders[i]->exits(), 1);
      });
    }
  }
  killers.clear();
  for (int i = 0; i < kCount; ++i) {
    EXPECT_EQ(recorders[i]->exits(), 1);
    EXPECT_TRUE(recorders[i]->exit().killed);
    EXPECT_FALSE(recorders[i]->broken());
    EXPECT_TRUE(gone(started[i].pid));
  }
}

TEST_F(LocalBackgroundTest, InstantProcessesStartedFromManyThreadsEachReportOnce) {
  // Each ends at once, so one start's reaping meets another's process that already finished.
  auto& processes = make();
  constexpr int kThreads = 4, kEach = 10;
  std::vector<std::unique_ptr<Recorder>> recorders;
  for (int i = 0; i < kThreads * kEach; ++i) recorders.push_back(std::make_unique<Recorder>());
  {
    std::vector<std::jthread> starters;
    for (int t = 0; t < kThreads; ++t) {
      starters.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i) {
          auto& recorder = *recorders[static_cast<std::size_t>(t * kEach + i)];
          const auto started = start(processes, recorder, "echo " + std::to_string(i));
          EXPECT_EQ(started.error, "");
          EXPECT_GT(started.pid, 0);
        }
      });
    }
  }
  for (auto& r : recorders) {
    ASSERT_TRUE(r->wait_exit());
    EXPECT_EQ(r->exit().exit_code, 0);
    EXPECT_FALSE(r->broken());
  }
}

TEST_F(LocalBackgroundTest, StopDuringOutputEndsAllAndStartDoesNotReviveThem) {
  auto& processes = make();
  constexpr int kCount = 4;
  std::vector<std::unique_ptr<Recorder>> recorders;
  std::vector<sdk::BackgroundStarted> started;
  for (int i = 0; i < kCount; ++i) {
    recorders.push_back(std::make_unique<Recorder>());
    // A flood, a TERM-ignoring one, and quiet ones: stop() kills at once whatever they do.
    const std::string command = i == 0   ? "yes flood"
                                : i == 1 ? "trap '' TERM; echo ready; while :; do sleep 1; done"
                                         : "echo ready; sleep 1000";
    started.push_back(start(processes, *recorders.back(), command));
    ASSERT_EQ(started.back().error, "");
  }
  ASSERT_TRUE(recorders[0]->wait_output("flood"));
  for (int i = 1; i < kCount; ++i) ASSERT_TRUE(recorders[i]->wait_output("ready"));
  // A graceful terminate underway does not hold stop() for its grace.
  std::jthread slow([&] { processes.terminate_background(started[1].id, 60s); });
  std::this_thread::sleep_for(100ms);
  const auto stop_began = std::chrono::steady_clock::now();
  backend().stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_began, 30s);
  for (int i = 0; i < kCount; ++i) {
    EXPECT_EQ(recorders[i]->exits(), 1) << i;
    EXPECT_TRUE(recorders[i]->exit().killed) << i;
    EXPECT_TRUE(gone(started[i].pid)) << i;
  }
  slow.join();
  const std::size_t bytes = recorders[0]->bytes();
  ASSERT_EQ(backend().start(), "");
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(recorders[0]->bytes(), bytes);
  for (auto& r : recorders) {
    EXPECT_EQ(r->exits(), 1);
    EXPECT_FALSE(r->broken());
  }
  // New ones run after start() again.
  Recorder again;
  ASSERT_EQ(start(processes, again, "echo again").error, "");
  ASSERT_TRUE(again.wait_exit());
  EXPECT_EQ(again.out(), "again\n");
}

// Issue 17 item 2: a command kills the spare pool program (and with it every spare it forked
// that was idle); a background shell's setsid child must still end with the shell's kill, and
// the kill is reported only when it did.
TEST_F(LocalBackgroundTest, KillingTheSparePoolLeavesNoBackgroundEscapeeAfterTheKill) {
  auto& processes = make();
  Recorder recorder;
  const auto started = start(processes, recorder,
                             "setsid sleep 1000 & echo $! > escapee.pid; echo ready; sleep 1000");
  ASSERT_EQ(started.error, "");
  ASSERT_TRUE(recorder.wait_output("ready"));
  const long escapee = read_pid(workspace_ / "escapee.pid");
  ASSERT_GT(escapee, 0);
  // The command's shell is a child of its spare, the spare of the pool program: kill that.
  sdk::ExecRequest request;
  request.command = "pool=$(awk '{print $4}' /proc/$PPID/stat); echo $pool; kill -9 $pool";
  const long pool = std::atol(backend().execute(request).stdout_data.c_str());
  ASSERT_GT(pool, 1);
  EXPECT_TRUE(stops_running(pool));  // a zombie of ours: a call no longer reaches it
  request.command = "echo again";
  ASSERT_EQ(backend().execute(request).stdout_data, "again\n");
  processes.terminate_background(started.id, 0ms);
  EXPECT_FALSE(running(escapee)) << "the setsid child outlived the kill";
  ASSERT_EQ(recorder.exits(), 1);
  EXPECT_TRUE(recorder.exit().killed);
  EXPECT_EQ(recorder.exit().error, "");
  if (running(escapee)) ::kill(static_cast<pid_t>(escapee), SIGKILL);
}

// The same with the background shell's own spare killed: its tree is ended anyway, and its end
// is reported as lost (an error), never as a kill.
TEST_F(LocalBackgroundTest, KillingABackgroundShellsSpareEndsItsWholeTree) {
  auto& processes = make();
  Recorder recorder;
  const auto started = start(processes, recorder,
                             "setsid sleep 1000 & echo $! > escapee.pid; echo ready; sleep 1000");
  ASSERT_EQ(started.error, "");
  ASSERT_TRUE(recorder.wait_output("ready"));
  const long escapee = read_pid(workspace_ / "escapee.pid");
  ASSERT_GT(escapee, 0);
  sdk::ExecRequest request;
  request.command = "kill -9 $(awk '{print $4}' /proc/" + std::to_string(started.pid) + "/stat)";
  ASSERT_EQ(backend().execute(request).exit_code, 0);
  ASSERT_TRUE(recorder.wait_exit());
  EXPECT_FALSE(recorder.exit().killed);
  EXPECT_NE(recorder.exit().error, "");
  EXPECT_TRUE(stops_running(escapee)) << "the setsid child outlived its supervisor";
  EXPECT_TRUE(stops_running(started.pid));
  if (running(escapee)) ::kill(static_cast<pid_t>(escapee), SIGKILL);
}

// A spare killed while its background process ends gracefully never reported the tree gone: the
// end is an error, not a kill, and the rest of the tree is ended all the same.
TEST_F(LocalBackgroundTest, ASpareKilledDuringTheGraceReportsAnErrorNotAKill) {
  auto& processes = make();
  Recorder recorder;
  const auto started = start(processes, recorder,
                             "trap '' TERM; setsid sleep 1000 & echo $! > escapee.pid; "
                             "echo ready; while :; do sleep 0.05; done");
  ASSERT_EQ(started.error, "");
  ASSERT_TRUE(recorder.wait_output("ready"));
  const long escapee = read_pid(workspace_ / "escapee.pid");
  ASSERT_GT(escapee, 0);
  std::ifstream stat("/proc/" + std::to_string(started.pid) + "/stat");
  std::string line;
  ASSERT_TRUE(std::getline(stat, line));
  const long spare = std::strtol(line.c_str() + line.rfind(')') + 4, nullptr, 10);
  ASSERT_GT(spare, 1);
  std::jthread terminate([&] { processes.terminate_background(started.id, 60s); });
  std::this_thread::sleep_for(100ms);  // the TERM is ignored; the grace runs
  ASSERT_EQ(::kill(static_cast<pid_t>(spare), SIGKILL), 0);
  terminate.join();
  ASSERT_EQ(recorder.exits(), 1);
  EXPECT_FALSE(recorder.exit().killed);
  EXPECT_NE(recorder.exit().error, "");
  EXPECT_TRUE(stops_running(escapee)) << "the setsid child outlived its supervisor";
  if (running(escapee)) ::kill(static_cast<pid_t>(escapee), SIGKILL);
}

}  // namespace
