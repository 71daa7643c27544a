// execmcp-runner, the docker-api backend's agent inside the container, against the real engine:
// commands that attack it, a 100 MB output, 16 calls at once, output imitating its protocol, both
// ways of delivering it (bind mount; archive copy through a tcp engine), and the fallback to one
// exec per call when it cannot start. Every test here sets exec_mode itself.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "docker_test_support.hpp"
#include "tcp_forwarder.hpp"

namespace {

using namespace execmcp::docker_test;  // NOLINT(google-build-using-namespace)
using namespace std::chrono_literals;

BackendInit init_for(const std::string& agent, const TempDir& ws, const std::string& settings) {
  BackendInit init;
  init.agent_id = agent;
  init.cwd = ws.path();
  init.paths = {{ws.path(), true}};
  init.settings_json = settings;
  return init;
}

constexpr const char* kFallback = "could not start";

// The runner's mount as the container sees it: "bind" (the file), "copy" (the volume) or "".
std::string delivery_seen(ExecutorBackend& b) {
  auto r = run(b, "grep -o ' /[.]execmcp[^ ]*' /proc/self/mountinfo");
  if (r.stdout_data.find("/.execmcp/execmcp-runner") != std::string::npos) return "bind";
  if (r.stdout_data.find("/.execmcp") != std::string::npos) return "copy";
  return "";
}

class DockerRunner : public SharedBackendTest<DockerRunner> {
 public:
  static constexpr const char* kAgent = "runner";
  static constexpr const char* kSettings = R"({"exec_mode": "agent", "pids_limit": 256})";

 protected:
  ExecutorBackend& b() { return *backend_; }
  // A call that must have gone through the runner, not the fallback.
  ExecResult agent_run(const std::string& command, std::chrono::milliseconds timeout = 60s) {
    auto r = run(*backend_, command, timeout);
    EXPECT_FALSE(has_notice(r, kFallback)) << notices_of(r);
    return r;
  }
};

TEST_F(DockerRunner, RunsThroughTheRunnerBindMountedOnALocalEngine) {
  auto r = agent_run("ps -eo args | grep -c '^/[.]execmcp/execmcp-runner --execmcp-runner'");
  EXPECT_EQ(r.stdout_data, "1\n") << r.stderr_data;
  EXPECT_EQ(delivery_seen(b()), "bind");
}

TEST_F(DockerRunner, CommandsThatAttackTheRunnerAreReportedAndTheNextCallWorks) {
  for (const std::string attack :
       {"pkill -9 -f execmcp-runner; sleep 2", "kill -9 -1; sleep 2",
        "exec 0<&- 1>&- 2>&-; sleep 0.2", "for f in /proc/self/fd/*; do :; done; exec 3>&-"}) {
    SCOPED_TRACE(attack);
    auto r = run(b(), attack, 30s);
    EXPECT_LT(r.duration_seconds, 25.0);
    auto next = agent_run("echo back");
    EXPECT_EQ(next.error, "") << notices_of(next);
    EXPECT_EQ(next.stdout_data, "back\n") << next.stderr_data;
  }
  // A runner killed by a command says so on that call: the command ran, how it ended is unknown.
  auto killed = run(b(), "pkill -9 -f execmcp-runner; sleep 5", 30s);
  EXPECT_EQ(killed.error, "");
  EXPECT_EQ(killed.exit_code, -1);
  EXPECT_TRUE(has_notice(killed, "execmcp-runner, the agent in the container, ended during"))
      << notices_of(killed);
}

TEST_F(DockerRunner, ACommandThatKillsTheRunnerAtOnceRunsOnlyOnce) {
  // Lost calls the runner never started are sent again; one it started never is, however fast
  // its command takes the runner down.
  for (const std::string killer : {"kill -9 -1", "pkill -9 -f execmcp-runner"}) {
    SCOPED_TRACE(killer);
    const std::string file = workspace_->path() + "/ran.txt";
    std::remove(file.c_str());
    run(b(), "echo once >> ran.txt; " + killer + "; sleep 2", 30s);
    if (killer == "kill -9 -1") wait_until_stopped("execmcp-runner-" + instance_tag());
    EXPECT_EQ(read_host_file(file), "once\n");
    EXPECT_EQ(agent_run("echo back").stdout_data, "back\n");
  }
}

TEST_F(DockerRunner, ARunnerStoppedByACommandIsReplacedAfterTheKillGrace) {
  // The whole runner stops (SIGSTOP cannot be caught): the timeout's kill request goes
  // unanswered, so after the grace the backend kills the command from outside and moves on.
  auto r = run(b(), "pkill -STOP -f 'execmcp-runner --execmcp-runner-channel'; sleep 100", 1s);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.duration_seconds, 40.0);
  EXPECT_TRUE(has_notice(r, "did not answer the kill request")) << notices_of(r);
  auto next = agent_run("echo back");
  EXPECT_EQ(next.error, "");
  EXPECT_EQ(next.stdout_data, "back\n");
  // The command's sleep is gone (killed by its call id).
  auto left = agent_run("ps -eo args | grep -c '^sleep 100'; true");
  EXPECT_EQ(left.stdout_data, "0\n");
}

TEST_F(DockerRunner, AHundredMegabyteOutputKeepsTheCapAndStreamsWhatItKeeps) {
  struct Sink final : execmcp::sdk::OutputSink {
    std::atomic<std::size_t> bytes{0};
    void on_output(execmcp::sdk::StreamKind, std::string_view d) noexcept override {
      bytes += d.size();
    }
  } capped_sink, full_sink;
  ExecRequest capped;
  capped.command = "head -c 100000000 /dev/zero | tr '\\0' x; echo done >&2";
  capped.timeout = 120s;
  capped.sink = &capped_sink;
  auto c = b().execute(capped);
  EXPECT_EQ(c.error, "");
  EXPECT_EQ(c.exit_code, 0);
  EXPECT_EQ(c.stdout_data.size(), execmcp::sdk::kDefaultOutputCap);
  EXPECT_TRUE(c.stdout_truncated);
  EXPECT_EQ(capped_sink.bytes.load(), execmcp::sdk::kDefaultOutputCap + c.stderr_data.size());
  EXPECT_EQ(c.stderr_data, "done\n");

  ExecRequest full = capped;
  full.output_cap = 128u * 1024 * 1024;
  full.sink = &full_sink;
  auto f = b().execute(full);
  EXPECT_EQ(f.error, "");
  ASSERT_EQ(f.stdout_data.size(), 100000000u);
  EXPECT_FALSE(f.stdout_truncated);
  EXPECT_EQ(f.stdout_data.find_first_not_of('x'), std::string::npos);
  EXPECT_EQ(full_sink.bytes.load(), 100000000u + f.stderr_data.size());
}

TEST_F(DockerRunner, SixteenConcurrentCallsEachGetOnlyTheirOwnBytes) {
  std::vector<ExecResult> results(16);
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&, i] {
      results[i] = run(b(), "i=0; while [ $i -lt 200 ]; do echo call-" + std::to_string(i) +
                                "-$i; [ $((i % 50)) = 0 ] && sleep 0.01; i=$((i+1)); done");
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 16; ++i) {
    std::string expected;
    for (int n = 0; n < 200; ++n)
      expected += "call-" + std::to_string(i) + "-" + std::to_string(n) + "\n";
    EXPECT_EQ(results[i].stdout_data, expected) << "call " << i << " " << results[i].error;
    EXPECT_FALSE(has_notice(results[i], kFallback));
  }
}

TEST_F(DockerRunner, OutputThatImitatesTheProtocolChangesNothing) {
  // A Docker multiplexing header, then a runner frame header claiming a huge payload, then a
  // whole runner "done" frame: all of it is just the command's output.
  const std::string fake =
      "\\001\\000\\000\\000\\000\\000\\000\\011"
      "\\177\\377\\377\\377\\000\\000\\000\\001\\010"
      "\\000\\000\\000\\004\\000\\000\\000\\001\\0100\\000\\000\\000";
  auto r = agent_run("printf '" + fake + "'; printf '" + fake + "' >&2; exit 4");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.stdout_data.size(), 30u);
  EXPECT_EQ(r.stderr_data.size(), 30u);
  auto next = agent_run("echo fine");
  EXPECT_EQ(next.stdout_data, "fine\n");
}

TEST_F(DockerRunner, FileToolsGoThroughTheRunner) {
  execmcp::sdk::FileWriteRequest w;
  w.path = "sub/data.bin";
  for (int i = 0; i < 3 * 1024 * 1024; ++i) w.data.push_back(static_cast<char>(i % 251));
  auto wr = b().write_file(w);
  ASSERT_EQ(wr.error, "");
  execmcp::sdk::FileReadRequest rq;
  rq.path = "sub/data.bin";
  auto rd = b().read_file(rq);
  ASSERT_EQ(rd.error, "");
  EXPECT_EQ(rd.data, w.data);
  // No exec was created for them: the engine's exec list of the container stays as it was.
  const std::string name = "execmcp-runner-" + instance_tag();
  const auto before = sh(outside_cli() + " inspect -f '{{len .ExecIDs}}' " + name);
  ASSERT_EQ(b().read_file(rq).error, "");
  ASSERT_EQ(b().write_file(w).error, "");
  EXPECT_EQ(sh(outside_cli() + " inspect -f '{{len .ExecIDs}}' " + name), before);
}

TEST_F(DockerRunner, FileToolsStartNoProcessInTheContainer) {
  // The runner does them itself: the container's last pid moves by what the two commands start,
  // not by one shell per file call, as it did when they were `head` / `cat` scripts.
  const std::string last_pid = "cat /proc/sys/kernel/ns_last_pid";
  auto before = agent_run(last_pid);
  if (before.exit_code != 0 || before.stdout_data.empty())
    GTEST_SKIP() << "no /proc/sys/kernel/ns_last_pid here: " << before.stderr_data;
  constexpr int kCalls = 20;
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_EQ(b().write_file({"pids/f.txt", "call " + std::to_string(i)}).error, "");
    ASSERT_EQ(b().read_file({"pids/f.txt"}).data, "call " + std::to_string(i));
  }
  EXPECT_NE(b().read_file({"pids"}).error.find("'pids' is a directory"), std::string::npos);
  auto after = agent_run(last_pid);
  ASSERT_EQ(after.exit_code, 0) << after.stderr_data;
  const long started = std::stol(after.stdout_data) - std::stol(before.stdout_data);
  EXPECT_LT(started, 10) << "processes started in the container during " << 2 * kCalls
                         << " file calls and one command";
}

TEST(DockerRunnerDelivery, ATcpEngineGetsTheRunnerCopiedAndAgainAfterTheContainerIsRecreated) {
  REQUIRE_ENGINE();
  TempDir ws("runnertcp");
  TcpToUnixForwarder forwarder("/var/run/docker.sock");
  const std::string host = "tcp://127.0.0.1:" + std::to_string(forwarder.port());
  auto b = make_backend(
      init_for("runnertcp", ws, R"({"exec_mode": "agent", "docker_host": ")" + host + "\"}"));
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  auto r = run(*b, "echo via tcp");
  EXPECT_EQ(r.stdout_data, "via tcp\n");
  EXPECT_FALSE(has_notice(r, kFallback)) << notices_of(r);
  EXPECT_EQ(delivery_seen(*b), "copy");
  sh(outside_cli() + " rm -f execmcp-runnertcp-" + instance_tag());
  auto again = run(*b, "echo again");
  EXPECT_EQ(again.error, "") << notices_of(again);
  EXPECT_EQ(again.stdout_data, "again\n");
  EXPECT_TRUE(has_notice(again, "recreated")) << notices_of(again);
  EXPECT_FALSE(has_notice(again, kFallback)) << notices_of(again);
  b->cleanup();
}

TEST(DockerRunnerDelivery, APathThatRefusesUpgradesFallsBackAndWritesFilesInPieces) {
  // Like the HAProxy 2.6 socket proxy: exec streams come back as 200 and carry nothing inward.
  REQUIRE_ENGINE();
  if (test_backend() != "docker-api")
    GTEST_SKIP() << "the Engine API's upgrade path only: the docker CLI does its own hijacking";
  TempDir ws("noupgrade");
  TcpToUnixForwarder forwarder("/var/run/docker.sock", /*refuse_upgrades=*/true);
  const std::string host = "tcp://127.0.0.1:" + std::to_string(forwarder.port());
  auto b = make_backend(
      init_for("noupgrade", ws, R"({"exec_mode": "agent", "docker_host": ")" + host + "\"}"));
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  for (int i = 0; i < 2; ++i) {
    auto r = run(*b, "echo one way");
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.stdout_data, "one way\n");
    EXPECT_TRUE(has_notice(r, "not 101 Switching Protocols")) << notices_of(r);
  }
  // write_file cannot send the bytes as input: they go base64 in the arguments of a few execs,
  // every byte value intact, and no scratch file is left.
  std::string data;
  for (int i = 0; i < 200 * 1024; ++i) data.push_back(static_cast<char>((i * 31) % 256));
  auto w = b->write_file({"sub/big.bin", data});
  EXPECT_EQ(w.error, "");
  EXPECT_EQ(w.bytes_written, data.size());
  EXPECT_EQ(read_host_file(ws.path() + "/sub/big.bin"), data);
  EXPECT_EQ(b->write_file({"empty.txt", ""}).error, "");
  EXPECT_EQ(read_host_file(ws.path() + "/empty.txt"), "");
  auto rd = b->read_file({"sub/big.bin"});
  EXPECT_EQ(rd.error, "");
  EXPECT_EQ(rd.data, data);
  // A glob, not ls: gVisor's statx makes coreutils' ls of a directory fail (docker-backend.md).
  auto left = run(*b, "cd sub && for f in .* *; do echo \"$f\"; done");
  EXPECT_EQ(left.stdout_data, ".\n..\nbig.bin\n");
  b->cleanup();
}

TEST(DockerRunnerDelivery, ExecModeStartsNoRunner) {
  REQUIRE_ENGINE();
  TempDir ws("execmode");
  auto b = make_backend(init_for("execmode", ws, R"({"exec_mode": "exec"})"));
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  auto r = run(*b, "ps -eo args | grep -c '^/[.]execmcp/' ; true");
  EXPECT_EQ(r.stdout_data, "0\n");
  EXPECT_EQ(delivery_seen(*b), "");
  b->cleanup();
}

}  // namespace

namespace {

TEST(DockerRunnerDelivery, WithoutTheRunnerEveryCallRunsAsOneExecAndSaysSo) {
  REQUIRE_ENGINE();
  // The plugin installed without execmcp-runner beside it (lib/execmcp/plugins/ and no
  // lib/execmcp/execmcp-runner).
  TempDir lib("norunner");
  fs::create_directories(lib.path() + "/execmcp/plugins");
  const std::string copy =
      lib.path() + "/execmcp/plugins/" + fs::path(test_plugin_path()).filename().string();
  fs::copy_file(test_plugin_path(), copy);
  boost::dll::shared_library plugin_copy(copy, boost::dll::load_mode::rtld_now);
  auto& factory = plugin_copy.get_alias<execmcp::sdk::BackendFactory>("execmcp_create_backend");
  TempDir ws("norunnerws");
  auto init = init_for("norunner", ws, R"({"exec_mode": "agent"})");
  init.instance_id = instance_tag();
  init.log = &g_log;
  std::string error;
  std::unique_ptr<ExecutorBackend> b(factory(init, error));
  ASSERT_TRUE(b) << error;
  ASSERT_EQ(b->start(), "");
  for (int i = 0; i < 2; ++i) {
    auto r = run(*b, "echo still works");
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.stdout_data, "still works\n");
    EXPECT_TRUE(has_notice(r, "execmcp-runner is missing")) << notices_of(r);
  }
  b->cleanup();
  b.reset();
}

// Issue 17: a command writes 20 MB of control characters to the runner's own stderr (through
// /proc/<runner pid>/fd/2), which the backend logs. The log gets a bounded, escaped part of it and
// says how much it left out; the host's disk is not the command's to fill.
TEST(DockerRunnerLog, AFloodOnTheRunnersStderrReachesTheLogBoundedAndEscaped) {
  REQUIRE_ENGINE();
  struct CountingLog : execmcp::sdk::LogSink {
    void log(execmcp::sdk::LogLevel, std::string_view message) noexcept override {
      std::lock_guard lock(mutex);
      bytes += message.size() + 1;
      for (unsigned char c : message) control |= c < 0x20 || c == 0x7f;
      if (message.find("the rest is counted, not logged") != std::string_view::npos ||
          message.find("bytes of its stderr were not logged") != std::string_view::npos)
        said.emplace_back(message);
    }
    std::mutex mutex;
    std::size_t bytes = 0;
    bool control = false;
    std::vector<std::string> said;
  } log;
  TempDir ws("runnerlog");
  auto init = init_for("runnerlog", ws, with_test_settings(R"({"exec_mode": "agent"})"));
  init.instance_id = instance_tag();
  init.log = &log;
  auto& factory = plugin().get_alias<execmcp::sdk::BackendFactory>("execmcp_create_backend");
  std::string error;
  std::unique_ptr<ExecutorBackend> b(factory(init, error));
  ASSERT_TRUE(b) << error;
  ASSERT_EQ(b->start(), "");
  std::size_t before = 0;
  {
    std::lock_guard lock(log.mutex);
    before = log.bytes;
  }
  auto r = run(*b,
               "pid=$(pgrep -o -f 'execmcp-runner --execmcp-runner') && "
               "yes \"$(printf '\\033[2J\\r\\001\\033]0;owned\\007 junk')\" | head -c 20000000 "
               "> /proc/$pid/fd/2 && echo wrote");
  EXPECT_EQ(r.stdout_data, "wrote\n") << r.stderr_data << notices_of(r);
  EXPECT_EQ(run(*b, "echo still works").stdout_data, "still works\n");
  b->cleanup();  // the runner's channel ends: the count of what was left out is logged
  b.reset();
  std::lock_guard lock(log.mutex);
  EXPECT_LT(log.bytes - before, 128u << 10);
  EXPECT_FALSE(log.control);
  ASSERT_EQ(log.said.size(), 2u);
  EXPECT_NE(log.said[0].find("the rest is counted, not logged"), std::string::npos) << log.said[0];
  EXPECT_NE(log.said[1].find("bytes of its stderr were not logged"), std::string::npos)
      << log.said[1];
  std::printf("[ measured ] 20000000 bytes on the runner's stderr -> %zu bytes logged; %s\n",
              log.bytes - before, log.said[1].c_str());
}

}  // namespace
