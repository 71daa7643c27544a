// Integration tests of the docker-api backend plugin against the real Docker engine, loaded the
// way the host loads it (Boost.DLL).
#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include "execmcp/sdk/plugin.hpp"

#include "docker_test_support.hpp"
#include "tcp_forwarder.hpp"

namespace {

using namespace execmcp::docker_test;  // NOLINT(google-build-using-namespace)

// ---- one shared container for the behaviour tests ----------------------------------------------

class DockerShared : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (docker_tests_disabled()) return;
    workspace_ = std::make_unique<TempDir>("ws");
    ctx_ro_ = std::make_unique<TempDir>("ctxro");
    ctx_rw_ = std::make_unique<TempDir>("ctxrw");
    std::ofstream(ctx_ro_->path() + "/keep.txt") << "original";
    BackendInit init;
    init.agent_id = "shared";
    init.cwd = workspace_->path();
    init.paths = {{workspace_->path(), true}, {ctx_ro_->path(), false}, {ctx_rw_->path(), true}};
    init.log_dir = workspace_->path() + "/.logs";
    init.settings_json = R"({"pids_limit": 256})";
    backend_ = make_backend(init, &create_error_);
    if (backend_) start_error_ = backend_->start();
  }
  static void TearDownTestSuite() {
    if (backend_) backend_->cleanup();
    backend_.reset();
    workspace_.reset();
    ctx_ro_.reset();
    ctx_rw_.reset();
  }
  void SetUp() override {
    REQUIRE_ENGINE();
    ASSERT_TRUE(backend_) << create_error_;
    ASSERT_EQ(start_error_, "");
  }
  ExecutorBackend& b() { return *backend_; }
  static std::string name() { return "execmcp-shared-" + instance_tag(); }

  static inline std::unique_ptr<TempDir> workspace_, ctx_ro_, ctx_rw_;
  static inline std::unique_ptr<ExecutorBackend> backend_;
  static inline std::string create_error_, start_error_;
};

TEST_F(DockerShared, RunsAsUid1000NeverRoot) {
  // Policy (docs/docker-backend.md): a root-owned workspace -> the image user 1000 plus an ACL.
  auto r = run(b(), "id -u; id -g; cat /proc/self/status | grep CapEff");
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(r.stdout_data.substr(0, 10), "1000\n1000\n");
  EXPECT_NE(r.stdout_data.find("CapEff:\t0000000000000000"), std::string::npos) << r.stdout_data;
  // no-new-privileges: even a setuid binary cannot become root. Asked of the kernel
  // (PR_GET_NO_NEW_PRIVS): gVisor's /proc/self/status has no NoNewPrivs line.
  auto su = run(b(), "python3 -c 'import ctypes; print(ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))'");
  EXPECT_EQ(su.stdout_data, "1\n") << su.stderr_data;
}

TEST_F(DockerShared, OutputExitCodeAndStderr) {
  auto r = run(b(), "echo out; echo err >&2; exit 3");
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.stdout_data, "out\n");
  EXPECT_EQ(r.stderr_data, "err\n");
  EXPECT_FALSE(r.timed_out);
  EXPECT_GT(r.duration_seconds, 0.0);
}

TEST_F(DockerShared, StatePersistsAcrossCalls) {
  ASSERT_EQ(run(b(), "echo remembered > /tmp/state.txt").exit_code, 0);
  auto r = run(b(), "cat /tmp/state.txt");
  EXPECT_EQ(r.stdout_data, "remembered\n");
}

TEST_F(DockerShared, WorkspaceIsSharedBothWaysAtTheHostPath) {
  const std::string ws = workspace_->path();
  auto pwd = run(b(), "pwd");
  EXPECT_EQ(trim(pwd.stdout_data), ws);
  std::ofstream(ws + "/from_host.txt") << "hello from host";
  auto r = run(b(), "cat " + ws + "/from_host.txt && echo -n container-made > made.txt");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "hello from host");
  EXPECT_EQ(read_host_file(ws + "/made.txt"), "container-made");
}

TEST_F(DockerShared, NetworkNoneLeavesOnlyLoopback) {
  // A glob, not ls: under gVisor coreutils' ls fails on a directory (statx with AT_NO_AUTOMOUNT
  // is EINVAL there).
  auto r = run(b(), "for i in /sys/class/net/*; do echo \"${i##*/}\"; done");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "lo\n");
}

TEST_F(DockerShared, ReadOnlyContextCannotBeWritten) {
  const std::string file = ctx_ro_->path() + "/keep.txt";
  auto r = run(b(), "cat " + file + " && echo changed > " + file);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.stdout_data.find("original"), std::string::npos);
  EXPECT_EQ(read_host_file(file), "original");
  auto w = b().write_file({file, "changed"});
  // gVisor checks permissions before the mount's read-only flag: EACCES there, not EROFS.
  EXPECT_NE(w.error.find(under_gvisor() ? "Permission denied" : "Read-only file system"),
            std::string::npos)
      << w.error;
  EXPECT_EQ(read_host_file(file), "original");
  // The writable context works.
  auto ok = run(b(), "echo yes > " + ctx_rw_->path() + "/new.txt");
  EXPECT_EQ(ok.exit_code, 0) << ok.stderr_data;
  EXPECT_EQ(read_host_file(ctx_rw_->path() + "/new.txt"), "yes\n");
}

TEST_F(DockerShared, TimeoutKillsTheWholeTreeIncludingSetsidEscapees) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run(b(), "setsid sleep 1001 >/dev/null 2>&1 & sleep 1002 & sleep 1003",
               std::chrono::seconds(2));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.cancelled);
  EXPECT_LT(secs, 20.0);
  auto ps = run(b(), "ps -eo args");
  ASSERT_EQ(ps.exit_code, 0) << ps.stderr_data;
  EXPECT_EQ(ps.stdout_data.find("sleep 100"), std::string::npos) << ps.stdout_data;
}

TEST_F(DockerShared, NothingOutlivesANormalCall) {
  // Like the local backend: background jobs and setsid escapees die when the command returns.
  auto r = run(b(), "sleep 1006 & setsid sleep 1007 >/dev/null 2>&1 & echo started",
               std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data, "started\n");
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(r.duration_seconds, 20.0);
  auto ps = run(b(), "ps -eo args");
  EXPECT_EQ(ps.stdout_data.find("sleep 100"), std::string::npos) << ps.stdout_data;
}

TEST_F(DockerShared, CancelKillsTheTree) {
  execmcp::sdk::CancelToken token;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    token.request_cancel();
  });
  ExecRequest req;
  req.command = "sleep 1004 & sleep 1005";
  req.timeout = std::chrono::seconds(120);
  req.cancel = &token;
  auto r = b().execute(req);
  canceller.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(r.duration_seconds, 30.0);
  auto ps = run(b(), "ps -eo args");
  EXPECT_EQ(ps.stdout_data.find("sleep 100"), std::string::npos) << ps.stdout_data;
}

TEST_F(DockerShared, OutputIsCappedAndDrained) {
  ExecRequest req;
  req.command = "head -c 300000 /dev/zero; echo done >&2";
  req.output_cap = 1000;
  auto r = b().execute(req);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data.size(), 1000u);
  EXPECT_TRUE(r.stdout_truncated);
  EXPECT_FALSE(r.stderr_truncated);
  EXPECT_EQ(r.stderr_data, "done\n");
}

TEST_F(DockerShared, SinkReceivesOutputWhileItRuns) {
  struct Sink : execmcp::sdk::OutputSink {
    std::string out, err;
    void on_output(execmcp::sdk::StreamKind k, std::string_view c) noexcept override {
      (k == execmcp::sdk::StreamKind::Stdout ? out : err).append(c);
    }
  } sink;
  ExecRequest req;
  req.command = "echo a; echo b >&2; echo c";
  req.sink = &sink;
  auto r = b().execute(req);
  EXPECT_EQ(sink.out, "a\nc\n");
  EXPECT_EQ(sink.err, "b\n");
  EXPECT_EQ(r.stdout_data, sink.out);
}

TEST_F(DockerShared, EnvAndWorkDir) {
  fs::create_directories(workspace_->path() + "/sub");
  ExecRequest req;
  req.command = "pwd; echo $GREETING";
  req.work_dir = "sub";
  req.env = {{"GREETING", "hi there"}};
  auto r = b().execute(req);
  EXPECT_EQ(r.stdout_data, workspace_->path() + "/sub\nhi there\n");
  req.work_dir = "/etc";
  auto refused = b().execute(req);
  EXPECT_EQ(refused.error,
            "work_dir refused: '/etc' is not a directory in this agent's workspace or granted "
            "paths");
  req.work_dir = ctx_ro_->path();  // readable grants are valid work dirs
  EXPECT_EQ(b().execute(req).exit_code, 0);
}

TEST_F(DockerShared, FileRoundTripKeepsAll256ByteValues) {
  std::string data;
  for (int round = 0; round < 4; ++round)
    for (int i = 0; i < 256; ++i) data.push_back(static_cast<char>(i));
  auto w = b().write_file({"bytes/all.bin", data});
  ASSERT_EQ(w.error, "");
  EXPECT_EQ(w.bytes_written, data.size());
  EXPECT_EQ(read_host_file(workspace_->path() + "/bytes/all.bin"), data);
  auto r = b().read_file({"bytes/all.bin"});
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.data, data);
  EXPECT_FALSE(r.truncated);
  // A larger payload goes through stdin in many frames.
  std::string big(3 * 1024 * 1024 + 17, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 7919) & 0xFF);
  ASSERT_EQ(b().write_file({workspace_->path() + "/big.bin", big}).error, "");
  EXPECT_EQ(b().read_file({"big.bin"}).data, big);
}

TEST_F(DockerShared, ReadsAFileTheContainerWroteToTmp) {
  ASSERT_EQ(run(b(), "printf 'abcdef' > /tmp/made-inside.txt").exit_code, 0);
  auto r = b().read_file({"/tmp/made-inside.txt"});
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.data, "abcdef");
  execmcp::sdk::FileReadRequest small{"/tmp/made-inside.txt", 4};
  auto t = b().read_file(small);
  EXPECT_EQ(t.data, "abcd");
  EXPECT_TRUE(t.truncated);
  auto missing = b().read_file({"/tmp/nope.txt"});
  EXPECT_NE(missing.error, "");
}

TEST_F(DockerShared, ParallelCallsAllSucceed) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      auto r = run(b(), "echo " + std::to_string(i));
      if (r.exit_code == 0 && r.stdout_data == std::to_string(i) + "\n") ++ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 4);
}

TEST_F(DockerShared, TraitsDescribeTheSandbox) {
  auto t = b().traits();
  EXPECT_TRUE(t.isolated);
  EXPECT_EQ(t.python, "python3");
  EXPECT_EQ(t.tools_dir, "");  // no tools_dir configured
}

TEST_F(DockerShared, LatencyOfTrivialCalls) {
  // Not a timing target (those live in bench/): prints what one call costs, for the report.
  constexpr int kCalls = 20;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) ASSERT_EQ(run(b(), "true").exit_code, 0);
  const double ours =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
      kCalls;
  const auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i)
    ASSERT_EQ(trim(sh(outside_cli() + " exec " + name() + " true; echo $?")), "0");
  const double cli =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count() /
      kCalls;
  std::printf(
      "[latency] docker-api execute(true): %.1f ms/call; `docker exec %s true`: %.1f ms/call\n",
      ours, name().c_str(), cli);
}

// ---- limits: a small container that hogs memory and fork-bombs -------------------------------

class DockerLimits : public SharedBackendTest<DockerLimits> {
 public:
  static constexpr const char* kAgent = "limits";
  static constexpr const char* kSettings = R"({"memory": "64m", "pids_limit": 64, "cpus": 1})";
};

TEST_F(DockerLimits, MemoryHogIsKilledAndReported) {
  auto r = run(*backend_, "python3 -c \"s = b'x' * (200 * 1024 * 1024); print(len(s))\"");
  ASSERT_EQ(r.error, "");
  if (under_gvisor()) {
    // The limit bounds the whole sandbox: the host's OOM killer ends the container, and the call
    // says so (its exit code is unknown); the next call starts it again.
    EXPECT_EQ(r.exit_code, -1) << r.stdout_data << r.stderr_data;
    EXPECT_TRUE(has_notice(r, "the container stopped during the command")) << notices_of(r);
    EXPECT_TRUE(has_notice(r, "OOMKilled=true")) << notices_of(r);
  } else {
    EXPECT_EQ(r.exit_code, 137) << r.stdout_data << r.stderr_data;
    EXPECT_TRUE(has_notice(r, "out-of-memory killer (exit 137)")) << notices_of(r);
  }
  EXPECT_EQ(run(*backend_, "echo alive").stdout_data, "alive\n");
  // A SIGKILL from elsewhere is not blamed on memory.
  auto self = run(*backend_, "kill -9 $$");
  EXPECT_EQ(self.exit_code, 137);
  ASSERT_EQ(self.notices.size(), 1u);
  EXPECT_NE(self.notices[0].find("not by the out-of-memory killer"), std::string::npos)
      << self.notices[0];
}

TEST_F(DockerLimits, ForkBombIsContainedAndTheBackendKeepsServing) {
  ASSERT_EQ(run(*backend_, "true").exit_code, 0);
  const std::string container = "execmcp-" + std::string(kAgent) + "-" + instance_tag();
  const auto identity = [&] { return container_identity(container); };
  const std::string before = identity();
  // The shell stays (sleep), so the bomb keeps forking until the call's timeout kills its tree; a
  // bomb whose shell returns at once mostly dies out by itself within a second.
  auto r = run(*backend_, "bomb() { bomb | bomb & }; bomb; sleep 10", std::chrono::seconds(3));
  EXPECT_EQ(r.error, "");
  EXPECT_LT(r.duration_seconds, 30.0);
  const auto t0 = std::chrono::steady_clock::now();
  auto next =
      run(*backend_,
          // execmcp-runner and its spare pool (agent mode) are the backend's, not the bomb's.
          "echo alive; ps -eo args --no-headers | grep -v '^/[.]execmcp/' | wc -l; "
          "ps -eo pid,ppid,stat,args | grep -v EXECMCP >&2",
          std::chrono::seconds(30));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  ASSERT_EQ(next.error, "");
  ASSERT_EQ(next.stdout_data.substr(0, 6), "alive\n") << next.stdout_data << next.stderr_data;
  // Nothing of the bomb is left.
  EXPECT_EQ(next.stderr_data.find("bomb"), std::string::npos) << next.stderr_data;
  EXPECT_LE(std::atoi(next.stdout_data.c_str() + 6), 8) << next.stdout_data << next.stderr_data;
  const bool restarted = identity() != before;
  std::printf("[fork bomb] %s after %.1f s (exit %d, timed out %d); %s; stderr: %.300s\n",
              restarted ? "the container was restarted" : "it stayed", r.duration_seconds,
              r.exit_code, r.timed_out ? 1 : 0, notices_of(r).c_str(), r.stderr_data.c_str());
  if (under_gvisor() && restarted) {
    // gVisor's ptrace platform: the bomb meets the engine's pids or memory limit before its
    // RLIMIT_NPROC (docs/docker-backend.md, gVisor); the call says which, the next restarts it.
    EXPECT_TRUE(
        has_notice(r, "when the sandbox reaches the engine's pids limit (768 host tasks)") ||
        has_notice(r, "the gVisor sandbox reached its memory limit (64 MiB)"))
        << notices_of(r);
    EXPECT_TRUE(has_notice(next, "container was recreated")) << notices_of(next);
    return;
  }
  // Otherwise the bomb met pids_limit inside (EAGAIN), the same container serves on, and the call
  // timed out, its shell gave up forking `sleep` (CI: exit 2 at once) or gVisor ended it (1.8 s).
  const bool shell_gave_up = r.exit_code == 2 && r.stderr_data.find("fork") != std::string::npos;
  EXPECT_TRUE(r.timed_out || shell_gave_up || under_gvisor()) << notices_of(r) << r.stderr_data;
  EXPECT_FALSE(has_notice(r, "the container stopped during the command")) << notices_of(r);
  EXPECT_FALSE(has_notice(next, "container was recreated")) << notices_of(next);
  EXPECT_FALSE(restarted) << "the container was restarted (id, start time)";
}

// ---- lifecycle ------------------------------------------------------------------------------

class DockerLifecycle : public ::testing::Test {
 protected:
  void SetUp() override { REQUIRE_ENGINE(); }
  BackendInit init_for(const std::string& agent, const TempDir& ws,
                       const std::string& settings = "{}") {
    BackendInit init;
    init.agent_id = agent;
    init.cwd = ws.path();
    init.paths = {{ws.path(), true}};
    init.log_dir = ws.path() + "/.logs";
    init.settings_json = settings;
    return init;
  }
};

TEST_F(DockerLifecycle, ContainerKilledOrRemovedFromOutsideIsRecreated) {
  TempDir ws("recreate");
  auto b = make_backend(init_for("recreate", ws));
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  const std::string name = "execmcp-recreate-" + instance_tag();
  ASSERT_EQ(run(*b, "true").exit_code, 0);

  sh(outside_cli() + " kill " + name);
  auto r1 = run(*b, "echo back");
  EXPECT_EQ(r1.error, "");
  EXPECT_EQ(r1.stdout_data, "back\n");
  ASSERT_FALSE(r1.notices.empty());
  EXPECT_NE(r1.notices[0].find("container was recreated"), std::string::npos);

  sh(outside_cli() + " rm -f " + name);
  auto r2 = run(*b, "echo again");
  EXPECT_EQ(r2.error, "");
  EXPECT_EQ(r2.stdout_data, "again\n");
  ASSERT_FALSE(r2.notices.empty());
  EXPECT_NE(r2.notices[0].find("container was recreated"), std::string::npos);
  // And the next call is ordinary again.
  EXPECT_TRUE(run(*b, "true").notices.empty());
  b->cleanup();
}

// A stale container of ours (its labels say so) is replaced; one under our name that is not ours
// (issue 28: another sandbox's, or no one's) is neither removed nor used.
TEST_F(DockerLifecycle, StaleContainerWithOurNameIsReplaced) {
  TempDir ws("stale");
  const std::string name = "execmcp-stale-" + instance_tag();
  const auto create = [&](const std::string& labels) {
    sh(outside_cli() + " rm -f " + name);
    return trim(sh(outside_cli() + " create --name " + name + labels + " " + kImage + " sleep 5"));
  };
  const std::string foreign_id = create(" --label stale=yes");
  auto b = make_backend(init_for("stale", ws));
  ASSERT_TRUE(b);
  EXPECT_NE(b->start().find("is not this sandbox's"), std::string::npos);
  EXPECT_EQ(container_identity(name).substr(0, 64), foreign_id);
  const std::string ours = " --label execmcp.managed=true --label execmcp.agent=stale";
  const std::string stale_id = create(ours + " --label execmcp.instance=" + instance_tag());
  ASSERT_FALSE(stale_id.empty());
  ASSERT_EQ(b->start(), "");
  EXPECT_NE(container_identity(name).substr(0, 64), stale_id);
  EXPECT_EQ(run(*b, "echo ok").stdout_data, "ok\n");
  b->cleanup();
}

TEST_F(DockerLifecycle, OrphanOfADeadInstanceIsRemovedAtStartButALiveOneIsKept) {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);  // `child` is now a pid that no longer exists
  const std::string host = trim(sh("hostname"));
  auto labelled = [&](const std::string& name, long pid) {
    sh(outside_cli() + " rm -f " + name);
    return trim(sh(outside_cli() + " create --name " + name +
                   " --label execmcp.managed=true --label execmcp.owner.host=" + host +
                   " --label execmcp.owner.pid=" + std::to_string(pid) + " " + kImage));
  };
  const std::string dead = "execmcp-orphan-dead-" + instance_tag();
  const std::string live = "execmcp-orphan-live-" + instance_tag();
  ASSERT_FALSE(labelled(dead, child).empty());
  ASSERT_FALSE(labelled(live, ::getpid()).empty());

  TempDir ws("orphan");
  auto b = make_backend(init_for("orphan", ws));
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  EXPECT_FALSE(container_exists(dead));
  EXPECT_TRUE(container_exists(live));
  sh(outside_cli() + " rm -f " + live);
  b->cleanup();
}

TEST_F(DockerLifecycle, CleanupRemovesTheContainerAndLeavesItsLog) {
  TempDir ws("cleanup");
  auto b = make_backend(init_for("cleanup", ws));
  ASSERT_TRUE(b);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(b->start(), "");
  const auto t1 = std::chrono::steady_clock::now();
  ASSERT_EQ(run(*b, "true").exit_code, 0);
  std::printf(
      "[latency] start() (orphan scan + create + start): %.0f ms; first call: %.0f ms\n",
      std::chrono::duration<double, std::milli>(t1 - t0).count(),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
  const std::string name = "execmcp-cleanup-" + instance_tag();
  EXPECT_TRUE(container_exists(name));
  b->cleanup();
  EXPECT_FALSE(container_exists(name));
  EXPECT_TRUE(fs::exists(ws.path() + "/.logs/" + name + ".log"));
}

TEST_F(DockerLifecycle, MissingImageNamesTheBuildScript) {
  TempDir ws("noimage");
  auto b = make_backend(init_for("noimage", ws, R"({"image": "execmcp/does-not-exist:never"})"));
  ASSERT_TRUE(b);
  const std::string err = b->start();
  EXPECT_NE(err.find("docker/build.sh"), std::string::npos) << err;
  EXPECT_NE(err.find("execmcp/does-not-exist:never"), std::string::npos) << err;
}

TEST_F(DockerLifecycle, BadSettingsAreRefusedAtCreation) {
  TempDir ws("bad");
  std::string error;
  EXPECT_FALSE(make_backend(init_for("bad", ws, R"({"memory": "lots"})"), &error));
  EXPECT_NE(error.find("memory"), std::string::npos) << error;
  EXPECT_FALSE(make_backend(init_for("bad", ws, R"({"user": "root"})"), &error));
  EXPECT_NE(error.find("user"), std::string::npos) << error;
  EXPECT_FALSE(make_backend(init_for("bad", ws, R"({"colour": "red"})"), &error));
  EXPECT_NE(error.find("unknown setting 'colour'"), std::string::npos) << error;
}

TEST_F(DockerLifecycle, EngineUnreachableIsAClearErrorAndRecoveryWorks) {
  TempDir ws("down");
  TempDir sockdir("sock");
  const std::string sock = sockdir.path() + "/docker.sock";
  auto b = make_backend(init_for("down", ws, R"({"docker_host": "unix://)" + sock + "\"}"));
  ASSERT_TRUE(b);
  const std::string err = b->start();
  EXPECT_NE(err.find("cannot reach Docker at unix://" + sock + ": is dockerd running?"),
            std::string::npos)
      << err;
  auto r = run(*b, "echo hi");
  EXPECT_NE(r.error.find("cannot reach Docker"), std::string::npos) << r.error;
  EXPECT_EQ(b->read_file({"x"}).error.empty(), false);

  // The engine "comes back" at that address: the next call works and makes the container.
  fs::create_symlink("/var/run/docker.sock", sock);
  auto back = run(*b, "echo hi");
  EXPECT_EQ(back.error, "");
  EXPECT_EQ(back.stdout_data, "hi\n");
  ASSERT_FALSE(back.notices.empty());
  EXPECT_NE(back.notices[0].find("container was recreated"), std::string::npos);
  b->cleanup();
}

TEST_F(DockerLifecycle, TcpDockerHostRunsCommandsAndSaysWhenUnreachable) {
  TempDir ws("tcp");
  std::optional<TcpToUnixForwarder> forwarder;
  forwarder.emplace("/var/run/docker.sock");
  const std::string host = "tcp://127.0.0.1:" + std::to_string(forwarder->port());
  auto b = make_backend(init_for("tcp", ws, R"({"docker_host": ")" + host + "\"}"));
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  auto r = run(*b, "echo over tcp; echo err >&2; exit 3");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.stdout_data, "over tcp\n");
  EXPECT_EQ(r.stderr_data, "err\n");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_GT(forwarder->connections(), 0) << "the backend did not use the tcp address";
  b->cleanup();
  EXPECT_FALSE(container_exists("execmcp-tcp-" + instance_tag()));

  // Nothing listens on that port once the forwarder is gone: a clear error.
  forwarder.reset();
  TempDir ws2("tcpdown");
  auto down = make_backend(init_for("tcpdown", ws2, R"({"docker_host": ")" + host + "\"}"));
  ASSERT_TRUE(down);
  const std::string err = down->start();
  EXPECT_NE(err.find("cannot reach Docker at " + host), std::string::npos) << err;
}

TEST_F(DockerLifecycle, NoPermissionOnTheSocketSaysSoAndNamesTheDockerGroup) {
  struct stat st {};
  if (::geteuid() != 0 || ::stat("/var/run/docker.sock", &st) != 0 || (st.st_mode & 0006) != 0)
    GTEST_SKIP() << "needs root and a socket closed to others, to try it as uid 1000";
  TempDir ws("eacces");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(1000, 1000, 1000) != 0 ||
        ::setresuid(1000, 1000, 1000) != 0)
      ::_exit(2);
    auto b =
        make_backend(init_for("eacces", ws, R"({"docker_host": "unix:///var/run/docker.sock"})"));
    const std::string err = b ? b->start() : std::string("no backend");
    if (::write(fds[1], err.data(), err.size()) < 0) ::_exit(3);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string err;
  char buf[512];
  ssize_t n = 0;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) err.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(err.find("no permission"), std::string::npos) << err;
  EXPECT_NE(err.find("'docker' group"), std::string::npos) << err;
}

// use_skills: the skills dir read-only at /skills and where skill loaders look in the home.
TEST_F(DockerLifecycle, SkillsAreReadOnlyAtSkillsAndInTheHome) {
  TempDir ws("skills"), skills("skillsdir");
  std::ofstream(skills.path() + "/SKILL.md") << "# a skill\n";
  auto init = init_for("skills", ws);
  init.skills_dir = skills.path();
  auto b = make_backend(init);
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  auto r = run(*b, "cat /skills/SKILL.md ~/.agent/skills/SKILL.md; echo $HOME");
  EXPECT_EQ(r.stdout_data, "# a skill\n# a skill\n/home/execmcp\n") << r.stderr_data;
  EXPECT_NE(run(*b, "touch /skills/x").exit_code, 0);
  EXPECT_NE(run(*b, "touch ~/.agent/skills/x").exit_code, 0);
  b->cleanup();
}

TEST_F(DockerLifecycle, ToolsSkillsAndTempWorkspaceAreMountedReadOnly) {
  TempDir ws("mounts"), tools("tools"), tmpws("tmpws");
  std::ofstream(tools.path() + "/helper.py") << "print('tool')\n";
  std::ofstream(tmpws.path() + "/shared.txt") << "shared";
  auto init = init_for("mounts", ws);
  init.tools_dir = tools.path();
  init.skills_dir = ws.path() + "/no-such-skills";  // missing: left out, not an error
  init.temp_workspace = tmpws.path();
  auto b = make_backend(init);
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  EXPECT_EQ(b->traits().tools_dir, "/tools");
  auto r = run(*b, "python3 /tools/helper.py; cat " + tmpws.path() +
                       "/shared.txt; grep -q ' /skills ' /proc/self/mountinfo || echo no-skills");
  EXPECT_EQ(r.stdout_data, "tool\nsharedno-skills\n") << r.stderr_data;
  EXPECT_NE(run(*b, "touch /tools/x").exit_code, 0);
  EXPECT_NE(run(*b, "touch " + tmpws.path() + "/x").exit_code, 0);
  b->cleanup();
}

TEST_F(DockerLifecycle, SecondAgentCannotSeeTheFirstAgentsWorkspace) {
  TempDir ws_a("agenta"), ws_b("agentb");
  std::ofstream(ws_a.path() + "/secret.txt") << "a's secret";
  auto a = make_backend(init_for("agenta", ws_a));
  auto b = make_backend(init_for("agentb", ws_b));
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->start(), "");
  ASSERT_EQ(b->start(), "");
  EXPECT_EQ(run(*a, "cat " + ws_a.path() + "/secret.txt").stdout_data, "a's secret");
  auto r = run(*b, "ls " + ws_a.path() + "; cat " + ws_a.path() + "/secret.txt");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data.find("secret"), std::string::npos);
  EXPECT_NE(b->read_file({ws_a.path() + "/secret.txt"}).error, "");
  a->cleanup();
  b->cleanup();
}

TEST_F(DockerLifecycle, NonRootWorkspaceOwnerIsTheContainerUser) {
  TempDir ws("owner");
  ASSERT_EQ(::chown(ws.path().c_str(), 4321, 4321), 0);
  auto b = make_backend(init_for("owner", ws));
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  auto r = run(*b, "id -u; echo x > mine.txt");
  EXPECT_EQ(r.stdout_data, "4321\n");
  struct stat st {};
  ASSERT_EQ(::stat((ws.path() + "/mine.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 4321u);
  b->cleanup();
}

// ---- mount sources an agent can change (issue 7, item 1) ---------------------------------------
// The engine follows symlinks in a bind source at every container start, so a source the agent can
// replace by a symlink would hand it any host directory. Each test plants a secret outside every
// grant and checks that no path into it ever appears in the container.

class DockerMountSources : public DockerLifecycle {
 protected:
  void SetUp() override {
    DockerLifecycle::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    secret_ = std::make_unique<TempDir>("secret");
    std::ofstream(secret_->path() + "/secret.txt") << "host secret";
  }
  // Runs `cat` on every candidate path the secret could show up at; retries a stopped container.
  std::string probe(ExecutorBackend& b, const std::vector<std::string>& dirs) {
    std::string command;
    for (const auto& d : dirs) command += "cat " + d + "/secret.txt 2>/dev/null; ";
    command += "cat /tools/secret.txt /skills/secret.txt 2>/dev/null; true";
    std::string seen;
    for (int i = 0; i < 3; ++i) {
      auto r = run(b, command);
      seen += r.stdout_data + r.stderr_data;
    }
    return seen;
  }
  std::unique_ptr<TempDir> secret_;
};

TEST_F(DockerMountSources, DefaultToolsDirSwappedForASymlinkInsideTheContainer) {
  TempDir ws("toolsswap");
  fs::create_directory(ws.path() + "/tools");
  std::ofstream(ws.path() + "/tools/helper.py") << "print('tool')\n";
  auto init = init_for("toolsswap", ws);
  init.tools_dir = ws.path() + "/tools";  // the config loader's default: <cwd>/tools
  auto b = make_backend(init);
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  // The tools stay usable where the traits say they are.
  const std::string tools = b->traits().tools_dir;
  ASSERT_FALSE(tools.empty());
  EXPECT_EQ(run(*b, "python3 " + tools + "/helper.py").stdout_data, "tool\n");
  // The attack: replace tools by a symlink to a host directory and make the container restart.
  run(*b, "mv tools tools.old && ln -s " + secret_->path() + " tools && kill -TERM 1");
  EXPECT_EQ(probe(*b, {tools, ws.path() + "/tools"}).find("host secret"), std::string::npos);
  b->cleanup();
  // And the next server start, with the symlink already in place.
  auto again = make_backend(init);
  ASSERT_TRUE(again);
  again->start();
  EXPECT_EQ(probe(*again, {again->traits().tools_dir, ws.path() + "/tools"}).find("host secret"),
            std::string::npos);
  again->cleanup();
}

// Every kind of mount the container spec makes, each with its source (or a component of it)
// replaced by a symlink to the secret: refused at start, and never mounted.
TEST_F(DockerMountSources, EveryMountKindRefusesASymlinkedSource) {
  struct Case {
    std::string kind;
    std::function<void(BackendInit&, const std::string& link, const std::string& ws)> set;
  };
  const std::vector<Case> cases = {
      {"workspace",
       [](BackendInit& i, const std::string& link, const std::string&) {
         i.cwd = link;
         i.paths = {{link, true}};
       }},
      {"context ro",
       [](BackendInit& i, const std::string& link, const std::string&) {
         i.paths.push_back({link, false});
       }},
      {"context rw",
       [](BackendInit& i, const std::string& link, const std::string&) {
         i.paths.push_back({link, true});
       }},
      {"tools dir",
       [](BackendInit& i, const std::string& link, const std::string&) { i.tools_dir = link; }},
      {"skills dir",
       [](BackendInit& i, const std::string& link, const std::string&) {
         i.skills_dir = link;
         i.paths.push_back({link, false});
       }},
      {"temp workspace",
       [](BackendInit& i, const std::string& link, const std::string&) {
         i.temp_workspace = link;
         i.paths.push_back({link, false});
       }},
      {"extra mount",
       [](BackendInit& i, const std::string& link, const std::string&) {
         i.settings_json =
             R"({"extra_mounts": [{"source": ")" + link + R"(", "target": "/data"}]})";
       }},
  };
  for (const auto& c : cases) {
    for (const bool component : {false, true}) {
      SCOPED_TRACE(c.kind + (component ? " (a component is the symlink)" : " (the source is)"));
      TempDir ws("kinds"), links("links");
      // Either the source itself is the symlink, or its parent directory is.
      std::string link;
      if (component) {
        fs::create_symlink(fs::path(secret_->path()).parent_path(), links.path() + "/up");
        link = links.path() + "/up/" + fs::path(secret_->path()).filename().string();
      } else {
        link = links.path() + "/link";
        fs::create_symlink(secret_->path(), link);
      }
      auto init = init_for("kinds", ws);
      c.set(init, link, ws.path());
      auto b = make_backend(init);
      ASSERT_TRUE(b);
      const std::string err = b->start();
      EXPECT_NE(err.find("symlink"), std::string::npos) << err;
      EXPECT_EQ(probe(*b, {link, "/data", secret_->path()}).find("host secret"), std::string::npos);
      b->cleanup();
    }
  }
}

// The engine mounts a stopped container's sources again when it restarts it: a source swapped
// after the container was created must be caught then too, not only at the first start.
TEST_F(DockerMountSources, RestartAfterTheSourceWasSwappedIsRefused) {
  TempDir ws("restart"), outside("tools");
  const std::string tools = outside.path() + "/tools";
  fs::create_directory(tools);
  auto init = init_for("restart", ws);
  init.tools_dir = tools;
  auto b = make_backend(init);
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  ASSERT_EQ(b->traits().tools_dir, "/tools");
  fs::rename(tools, tools + ".old");
  fs::create_directory_symlink(secret_->path(), tools);
  run(*b, "kill -TERM 1");
  wait_until_stopped("execmcp-restart-" + instance_tag());
  auto r = run(*b, "cat /tools/secret.txt");
  EXPECT_EQ((r.stdout_data + r.stderr_data).find("host secret"), std::string::npos);
  EXPECT_NE(r.error.find("is a symlink"), std::string::npos) << r.error;
  b->cleanup();
}

// A grant nested in a writable grant: its name lives in a directory the agent can change.
TEST_F(DockerMountSources, ReadOnlyContextInsideTheWorkspaceIsRefused) {
  TempDir ws("nested");
  fs::create_directory(ws.path() + "/ref");
  auto init = init_for("nested", ws);
  init.paths.push_back({ws.path() + "/ref", false});
  auto b = make_backend(init);
  ASSERT_TRUE(b);
  const std::string err = b->start();
  EXPECT_NE(err.find("inside"), std::string::npos) << err;
  b->cleanup();
}

// Another agent's workspace: a context path inside it is a name that agent can change.
TEST_F(DockerMountSources, ContextInsideAnotherAgentsWorkspaceIsRefusedWhileItRuns) {
  TempDir ws_a("owner"), ws_b("reader");
  fs::create_directory(ws_a.path() + "/shared");
  auto a = make_backend(init_for("ownera", ws_a));
  ASSERT_TRUE(a);
  ASSERT_EQ(a->start(), "");
  auto init_b = init_for("readerb", ws_b);
  init_b.paths.push_back({ws_a.path() + "/shared", false});
  auto b = make_backend(init_b);
  ASSERT_TRUE(b);
  const std::string err = b->start();
  // Agent a swaps its directory for a symlink; b's container restarts.
  run(*a, "mv shared shared.old && ln -s " + secret_->path() + " shared");
  run(*b, "kill -TERM 1");
  wait_until_stopped("execmcp-readerb-" + instance_tag());
  EXPECT_EQ(probe(*b, {ws_a.path() + "/shared"}).find("host secret"), std::string::npos);
  EXPECT_NE(err.find("inside"), std::string::npos) << err;
  a->cleanup();
  b->cleanup();
}

// ---- the container dies from inside (issue 7, item 7) ------------------------------------------

TEST_F(DockerLifecycle, ContainerKilledFromInsideIsReportedAndTheNextCallWorks) {
  TempDir ws("diesinside");
  auto b = make_backend(init_for("diesinside", ws, R"({"memory": "256m"})"));
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  // The sleep outlives the container: under runc the kernel ends it with the container's PID 1;
  // under gVisor the engine never ends the exec, and the backend must notice the stop itself
  // (StopCheck) rather than wait for the call's timeout.
  for (const std::string killer :
       {"kill -9 -1; sleep 50", "kill -TERM 1; sleep 50", "kill -TERM 1"}) {
    SCOPED_TRACE(killer);
    auto dying = run(*b, killer, std::chrono::seconds(60));
    EXPECT_LT(dying.duration_seconds, 30) << "the call waited for the command's sleep or timeout";
    EXPECT_FALSE(dying.timed_out);
    if (killer != "kill -TERM 1") {
      // The call that killed it says so, and does not blame the memory limit.
      EXPECT_TRUE(has_notice(dying, "the container stopped during the command"))
          << notices_of(dying) << " error: " << dying.error << " exit: " << dying.exit_code
          << " after " << dying.duration_seconds << " s";
      // Said once (issue 28, finding 7: the runner's path said it a second time).
      EXPECT_EQ(count_notices(dying, "the container stopped during the command"), 1u)
          << notices_of(dying);
      EXPECT_TRUE(has_notice(dying, "OOMKilled=false")) << notices_of(dying);
      EXPECT_FALSE(has_notice(dying, "memory limit")) << notices_of(dying);
    }
    // The next call works, once the container is gone.
    wait_until_stopped("execmcp-diesinside-" + instance_tag());
    auto next = run(*b, "echo back");
    EXPECT_EQ(next.error, "");
    EXPECT_EQ(next.exit_code, 0) << next.stdout_data << next.stderr_data;
    EXPECT_EQ(next.stdout_data, "back\n") << next.stderr_data;
  }
  b->cleanup();
}

// ---- host disk and memory bounds (issue 7, item 10) --------------------------------------------

TEST_F(DockerLifecycle, ContainerLogIsBoundedAndMemoryHasADefaultLimit) {
  TempDir ws("bounds");
  auto b = make_backend(init_for("bounds", ws));
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  const std::string name = "execmcp-bounds-" + instance_tag();
  EXPECT_GT(
      std::atoll(
          trim(sh(outside_cli() + " inspect --format '{{.HostConfig.Memory}}' " + name)).c_str()),
      0);
  // PID 1's stdout is the container log: 30 MB written there must not land on the host's disk.
  auto r = run(*b, "head -c 30000000 /dev/zero | tr '\\0' x | fold -w 100 > /proc/1/fd/1");
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  const std::string log_path = trim(sh(outside_cli() + " inspect --format '{{.LogPath}}' " + name));
  ASSERT_FALSE(log_path.empty());
  std::uintmax_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(log_path).parent_path(), ec))
    if (e.path().filename().string().find("-json.log") != std::string::npos)
      total += fs::file_size(e.path(), ec);
  EXPECT_LT(total, 8u * 1024 * 1024) << log_path;
  b->cleanup();
}

// The writable layer can be bounded only where the engine supports it: elsewhere, start says so.
TEST_F(DockerLifecycle, DiskBoundIsAppliedOrRefusedClearly) {
  TempDir ws("disk");
  auto b = make_backend(init_for("disk", ws, R"({"disk": "1g"})"));
  ASSERT_TRUE(b);
  const std::string err = b->start();
  const std::string name = "execmcp-disk-" + instance_tag();
  if (err.empty()) {
    EXPECT_EQ(trim(sh(outside_cli() +
                      " inspect --format '{{index .HostConfig.StorageOpt \"size\"}}' " + name)),
              "1073741824");
  } else {
    EXPECT_NE(err.find("'disk'"), std::string::npos) << err;
    EXPECT_NE(err.find("xfs"), std::string::npos) << err;
  }
  b->cleanup();
}

// The image's filesystem is read-only; what programs write outside the mounts lands in tmpfs
// bounded by tmpfs_size (and the memory limit), never on the host's disk.
TEST_F(DockerLifecycle, WritesOutsideTheMountsGoToBoundedTmpfs) {
  TempDir ws("scratch");
  auto b = make_backend(init_for("scratch", ws, R"({"tmpfs_size": "16m"})"));
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  // /workspace belongs to the image user: only a read-only image filesystem refuses this.
  auto rootfs = run(*b, "touch /workspace/x");
  EXPECT_NE(rootfs.exit_code, 0);
  EXPECT_NE(rootfs.stderr_data.find("Read-only file system"), std::string::npos)
      << rootfs.stderr_data;
  for (const std::string dir : {"/tmp", "/var/tmp", "$HOME"}) {
    SCOPED_TRACE(dir);
    auto small = run(*b, "echo ok > " + dir + "/small && cat " + dir + "/small");
    EXPECT_EQ(small.stdout_data, "ok\n") << small.stderr_data;
    auto big = run(*b, "head -c 32000000 /dev/zero > " + dir + "/big");
    EXPECT_NE(big.exit_code, 0);
    EXPECT_NE(big.stderr_data.find("No space left on device"), std::string::npos)
        << big.stderr_data;
  }
  // The workspace is still written where it is, and the file tools still work.
  EXPECT_EQ(b->write_file({"w.txt", "w"}).error, "");
  EXPECT_EQ(read_host_file(ws.path() + "/w.txt"), "w");
  b->cleanup();
}
// ---- an image without Python and without any C library (issue 9) -------------------------------
// A static busybox with its applets' symlinks in an otherwise empty image, built offline by
// tests/docker/fixtures/build-busybox-image.sh: commands and file tools must not need anything the
// user's image may lack.

class DockerBusybox : public DockerLifecycle {
 protected:
  void SetUp() override {
    DockerLifecycle::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(build_busybox_image(), "");
    // Owned by root here: the image user 1000 with an ACL, as with the runtime image.
    ws_ = std::make_unique<TempDir>("busybox");
    backend_ = make_backend(
        init_for("busybox", *ws_, std::string(R"({"image": ")") + kBusyboxImage + "\"}"));
    ASSERT_TRUE(backend_);
    ASSERT_EQ(backend_->start(), "");
  }
  void TearDown() override {
    if (backend_) backend_->cleanup();
  }
  std::unique_ptr<TempDir> ws_;
  std::unique_ptr<ExecutorBackend> backend_;
};

TEST_F(DockerBusybox, RunsCommandsAndFileTools) {
  auto& b = *backend_;
  // The fixture is what it claims: no Python, no dynamic loader, no C library anywhere.
  auto bare =
      run(b, "command -v python3 python; ls -d /lib* /usr/lib* /usr/local/lib* 2>/dev/null");
  EXPECT_EQ(bare.stdout_data, "");
  auto r = run(b, "echo hi; cat /etc/hostname >/dev/null; exit 3");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.exit_code, 3) << head_of(r.stderr_data);  // (stderr: see the next test)
  EXPECT_EQ(r.stdout_data, "hi\n");
  EXPECT_FALSE(r.timed_out);
  // The file tools too, as the container user in the workspace.
  EXPECT_EQ(b.write_file({"made.txt", "from busybox"}).error, "");
  EXPECT_EQ(read_host_file(ws_->path() + "/made.txt"), "from busybox");
  const auto read = b.read_file({ws_->path() + "/made.txt"});
  EXPECT_EQ(read.error, "");
  EXPECT_EQ(read.data, "from busybox");
}

// What runs around the command (the exec wrapper's clean-up sweep, or the agent) must use only
// what busybox has: nothing of it may reach the command's stderr or notices.
TEST_F(DockerBusybox, NothingButTheCommandWritesToStderr) {
  auto r = run(*backend_, "echo out; echo err >&2");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data, "out\n");
  // Not EXPECT_EQ: a wrapper that fails in a loop writes megabytes, which the diff would repeat.
  EXPECT_TRUE(r.stderr_data == "err\n") << head_of(r.stderr_data);
  EXPECT_TRUE(r.notices.empty()) << r.notices.front();
}

}  // namespace
