// `isolation: sandbox`'s resource limits through the `local` plugin: each sandbox (an agent's, a
// per-user agent's user's) in a cgroup of its own with `sandbox.memory`, `sandbox.pids_limit` and
// `sandbox.cpus`. A command past the memory limit is killed and its result names the limit, and
// the agent serves on; a fork loop stops at pids_limit; one user's fork loop and memory hog do
// not stop another user's commands (both users' sandboxes run as one uid, whose RLIMIT_NPROC
// alone would let the first take every process); nothing is left in the cgroup tree after stop;
// without cgroups a limit given in the config stops the agent and missing defaults are said.
// Skipped with the reason where this machine cannot give a sandbox or make cgroups (not root, no
// delegated cgroup); under EXECMCP_REQUIRE_SANDBOX=1 a missing sandbox layer fails, and so do
// cgroups on a machine that should give them (root, a writable /sys/fs/cgroup).
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cgroup_limits.hpp"
#include "execmcp/conformance/backend_conformance.hpp"
#include "sandbox/sandbox_test_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using execmcp::sdk::ExecRequest;
using execmcp::sdk::ExecResult;
using execmcp::sdk::ExecutorBackend;
namespace sb = execmcp::plugins::local::sandbox;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

#define EXECMCP_SANDBOX_CGROUPS_OR_SKIP()                                                          \
  do {                                                                                             \
    EXECMCP_REQUIRE_SANDBOX_OR_SKIP();                                                             \
    const auto execmcp_available = sb::probe_cgroups();                                            \
    std::string execmcp_why;                                                                       \
    for (auto c : {sb::CgroupController::kMemory, sb::CgroupController::kPids})                    \
      if (!execmcp_available.problem(c).empty())                                                   \
        execmcp_why +=                                                                             \
            std::string(sb::controller_name(c)) + ": " + execmcp_available.problem(c) + "; ";      \
    if (!execmcp_why.empty()) {                                                                    \
      struct statvfs execmcp_st {};                                                                \
      const char* execmcp_require = std::getenv("EXECMCP_REQUIRE_SANDBOX");                        \
      if (execmcp_require != nullptr && std::string(execmcp_require) == "1" && ::geteuid() == 0 && \
          ::statvfs("/sys/fs/cgroup", &execmcp_st) == 0 && (execmcp_st.f_flag & ST_RDONLY) == 0)   \
        FAIL() << "this machine should give cgroups: " << execmcp_why;                             \
      GTEST_SKIP() << execmcp_why;                                                                 \
    }                                                                                              \
  } while (0)

// The server's (this test's) directory in each hierarchy a sandbox's cgroup is made in.
std::vector<std::string> server_cgroup_dirs() {
  namespace d = sb::cgroup_detail;
  const auto mounts = d::parse_cgroup_mounts(read_text("/proc/self/mountinfo"));
  const auto self = d::parse_proc_cgroup(read_text("/proc/self/cgroup"));
  std::string v2;
  for (const auto& m : mounts)
    if (m.v2) v2 = read_text(m.mount_point + "/cgroup.controllers");
  std::vector<std::string> dirs;
  for (const char* name : {"memory", "pids", "cpu"})
    if (auto place = d::place_of(name, mounts, self, v2)) {
      std::string dir = place->dir;
      if (fs::path(dir).filename() == "execmcp-server-" + std::to_string(::getpid()))
        dir = fs::path(dir).parent_path().string();
      if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
    }
  return dirs;
}

// The cgroups named `prefix`* in the server's hierarchies.
std::vector<std::string> cgroups_named(const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& dir : server_cgroup_dirs()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().filename().string().rfind(prefix, 0) == 0)
        found.push_back(entry.path().string());
  }
  return found;
}

// Forks until EAGAIN (each child sleeps `hold` seconds), prints "<forked> <errno name>".
std::string fork_loop(int most, double hold) {
  return "python3 -c \"\nimport errno, os, time\nkids = []\nerr = 0\n"
         "for _ in range(" +
         std::to_string(most) +
         "):\n    try:\n        pid = os.fork()\n"
         "    except OSError as e:\n        err = e.errno\n        break\n"
         "    if pid == 0:\n        time.sleep(" +
         std::to_string(hold) +
         ")\n        os._exit(0)\n"
         "    kids.append(pid)\nprint(len(kids), errno.errorcode.get(err, err))\n"
         "for pid in kids:\n    os.waitpid(pid, 0)\n\"";
}

constexpr const char* kHog = "python3 -c \"b = b'x' * (200 << 20); print('survived')\"";

class LocalSandboxLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "execmcp-limits-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = fs::canonical(pattern);
    fs::permissions(root_, fs::perms::owner_all | fs::perms::others_exec);
    instance_ = std::to_string(::getpid()) + "-lt";
  }
  void TearDown() override {
    for (auto& b : backends_) b->cleanup();
    backends_.clear();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // An agent's sandbox, or with `user` a per-user agent's sandbox of that user (its workspace
  // <root>/users/<user>, 0700 as the server makes it, at /workspace).
  ExecutorBackend& make(const std::string& sandbox_settings, const std::string& user = "") {
    execmcp::sdk::BackendInit init;
    init.agent_id = "limits-test";
    init.instance_id = user.empty() ? instance_ : instance_ + "-u-" + user;
    const fs::path workspace = user.empty() ? root_ / "ws" : root_ / "users" / user;
    fs::create_directories(workspace);
    if (!user.empty()) {
      ::chmod((root_ / "users").c_str(), 0700);
      ::chmod(workspace.c_str(), 0700);
      init.sandbox_cwd = "/workspace";
    }
    init.cwd = workspace.string();
    init.paths = {{workspace.string(), true}};
    init.log = &log_;
    init.settings_json = R"({"isolation": "sandbox", "sandbox": {"landlock_max_abi": 2)" +
                         (sandbox_settings.empty() ? "" : ", " + sandbox_settings) + "}}";
    backends_.push_back(factory_(init));
    EXPECT_EQ(backends_.back()->start(), "");
    return *backends_.back();
  }
  static ExecResult run(ExecutorBackend& backend, const std::string& command) {
    ExecRequest request;
    request.command = command;
    request.timeout = 60s;
    return backend.execute(request);
  }
  static bool has_notice(const ExecResult& r, const std::string& text) {
    for (const auto& n : r.notices)
      if (n.find(text) != std::string::npos) return true;
    return false;
  }

  // The backend's log: the start log says what each sandbox's cgroup got.
  struct Log final : execmcp::sdk::LogSink {
    void log(execmcp::sdk::LogLevel, std::string_view message) noexcept override {
      std::lock_guard lock(mutex);
      lines.emplace_back(message);
    }
    bool has(const std::string& text) {
      std::lock_guard lock(mutex);
      return std::any_of(lines.begin(), lines.end(),
                         [&](const std::string& l) { return l.find(text) != std::string::npos; });
    }
    std::mutex mutex;
    std::vector<std::string> lines;
  } log_;
  execmcp::conformance::BackendFactory factory_ =
      execmcp::conformance::plugin_backend_factory(EXECMCP_LOCAL_PLUGIN_PATH);
  fs::path root_;
  std::string instance_;
  std::vector<std::unique_ptr<ExecutorBackend>> backends_;
};

// 200 MB against sandbox.memory 64m: the kernel's OOM killer ends the command in the sandbox's
// cgroup, the result says it was the memory limit (as the Docker backends word it), and the same
// sandbox serves the next call.
TEST_F(LocalSandboxLimitsTest, AMemoryHogIsKilledWithTheMemoryNoticeAndTheAgentServesOn) {
  EXECMCP_SANDBOX_CGROUPS_OR_SKIP();
  auto& backend = make(R"("memory": "64m")");
  EXPECT_TRUE(
      log_.has("limits: memory 64 MiB, pids 512, CPU shared with other sandboxes (no "
               "quota) (a cgroup v"));
  const auto hog = run(backend, kHog);
  EXPECT_EQ(hog.error, "");
  EXPECT_EQ(hog.exit_code, 137);
  EXPECT_EQ(hog.stdout_data.find("survived"), std::string::npos);
  EXPECT_TRUE(has_notice(hog,
                         "killed by the kernel's out-of-memory killer (exit 137): the "
                         "sandbox reached its memory limit (sandbox.memory, 64 MiB)"))
      << (hog.notices.empty() ? std::string("no notice") : hog.notices.front());
  const auto after = run(backend, "echo serves-on; python3 -c \"b = b'x' * (8 << 20)\"; echo $?");
  EXPECT_EQ(after.error, "");
  EXPECT_EQ(after.stdout_data, "serves-on\n0\n");
  EXPECT_TRUE(after.notices.empty());
  // A SIGKILL that is not the memory limit's says nothing of memory.
  const auto killed = run(backend, "sh -c 'kill -9 $$'");
  EXPECT_EQ(killed.exit_code, 137);
  EXPECT_FALSE(has_notice(killed, "out-of-memory"));
}

// sandbox.pids_limit bounds the sandbox's processes (with RLIMIT_NPROC off): a fork loop gets
// EAGAIN below it, and the agent serves on.
TEST_F(LocalSandboxLimitsTest, AForkLoopStopsAtPidsLimitAndTheAgentServesOn) {
  EXECMCP_SANDBOX_CGROUPS_OR_SKIP();
  auto& backend = make(R"("pids_limit": 32, "max_processes": 0)");
  const auto r = run(backend, fork_loop(200, 0.5));
  ASSERT_EQ(r.error, "");
  int forked = -1;
  char name[32] = {};
  ASSERT_EQ(std::sscanf(r.stdout_data.c_str(), "%d %31s", &forked, name), 2) << r.stdout_data;
  EXPECT_STREQ(name, "EAGAIN") << r.stdout_data;
  EXPECT_GT(forked, 0);
  EXPECT_LT(forked, 32);
  EXPECT_EQ(run(backend, "echo serves-on").stdout_data, "serves-on\n");
}

// Two users of one per-user agent, whose sandboxes run as one uid: alice holds every process her
// pids_limit gives her while bob forks 50 (the uid's RLIMIT_NPROC, 300, would have let alice take
// them all), and alice's memory hog is killed in her cgroup while bob's 40 MB command runs to its
// end.
TEST_F(LocalSandboxLimitsTest, OneUsersForkLoopAndMemoryHogDoNotStopAnothersCommands) {
  EXECMCP_SANDBOX_CGROUPS_OR_SKIP();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the sandboxes as a uid of their own";
  const std::string settings =
      R"("user": 61919, "max_processes": 300, "pids_limit": 64, "memory": "96m")";
  auto& alice = make(settings, "alice");
  auto& bob = make(settings, "bob");
  ExecResult alice_forks;
  std::thread hold([&] { alice_forks = run(alice, fork_loop(400, 3)); });
  std::this_thread::sleep_for(1500ms);  // her loop reached its bound and holds it
  const auto bob_forks = run(bob, fork_loop(50, 0.2));
  hold.join();
  int forked = -1;
  char name[32] = {};
  ASSERT_EQ(std::sscanf(alice_forks.stdout_data.c_str(), "%d %31s", &forked, name), 2)
      << alice_forks.stdout_data << alice_forks.stderr_data;
  EXPECT_STREQ(name, "EAGAIN");
  EXPECT_LT(forked, 64);
  EXPECT_EQ(bob_forks.stdout_data, "50 0\n") << bob_forks.stderr_data;

  ExecResult alice_hog;
  std::thread hog([&] { alice_hog = run(alice, kHog); });
  const auto bob_mem =
      run(bob, "python3 -c \"b = b'x' * (40 << 20); import time; time.sleep(0.5); print('ok')\"");
  hog.join();
  EXPECT_EQ(alice_hog.exit_code, 137);
  EXPECT_TRUE(has_notice(alice_hog, "sandbox.memory, 96 MiB"));
  EXPECT_EQ(bob_mem.stdout_data, "ok\n") << bob_mem.stderr_data;
  EXPECT_TRUE(bob_mem.notices.empty());
}

// Each sandbox's cgroup is there while it runs, and gone once its agent stops, per-user
// sandboxes' too; a sandbox started again gets a new one.
TEST_F(LocalSandboxLimitsTest, NothingIsLeftInTheCgroupTreeAfterTheAgentStops) {
  EXECMCP_SANDBOX_CGROUPS_OR_SKIP();
  const std::string prefix = "execmcp-limits-test-" + instance_;
  auto& agent = make(R"("memory": "128m", "cpus": 0.5)");
  auto& user = make("", "carol");
  EXPECT_EQ(run(agent, "true").exit_code, 0);
  EXPECT_EQ(run(user, "true").exit_code, 0);
  const auto running = cgroups_named(prefix);
  // Two sandboxes, each in every hierarchy (v1: memory, pids and cpu; v2: the one tree).
  EXPECT_EQ(running.size(), 2 * server_cgroup_dirs().size());
  bool quota = false;
  for (const auto& dir : running) {
    if (fs::exists(dir + "/cpu.cfs_quota_us") && read_text(dir + "/cpu.cfs_quota_us") == "50000\n")
      quota = true;
    if (fs::exists(dir + "/cpu.max") && read_text(dir + "/cpu.max") == "50000 100000\n")
      quota = true;
  }
  EXPECT_TRUE(quota) << "sandbox.cpus 0.5 is not the agent's CPU quota";
  agent.stop();
  user.stop();
  EXPECT_EQ(cgroups_named(prefix), std::vector<std::string>{});
  EXPECT_EQ(run(agent, "true").exit_code, 0);  // a new sandbox, a new cgroup
  EXPECT_FALSE(cgroups_named(prefix).empty());
  for (auto& b : backends_) b->cleanup();
  EXPECT_EQ(cgroups_named(prefix), std::vector<std::string>{});
}

// Where the server cannot make cgroups (here: a mountinfo without cgroup mounts, the test-only
// EXECMCP_CGROUP_MOUNTINFO): a limit given in the config stops the agent, saying which limit, which
// controller and why; the defaults are left out, the sandbox runs, and its start log says so.
TEST_F(LocalSandboxLimitsTest, WithoutCgroupsAGivenLimitStopsTheAgentAndDefaultsAreSaidMissing) {
  EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
  const fs::path mountinfo = root_ / "mountinfo";
  std::ofstream(mountinfo) << "25 1 0:22 / /sys rw,nosuid - sysfs sysfs rw\n";
  ::setenv("EXECMCP_CGROUP_MOUNTINFO", mountinfo.c_str(), 1);
  struct Unset {
    ~Unset() { ::unsetenv("EXECMCP_CGROUP_MOUNTINFO"); }
  } unset;
  execmcp::sdk::BackendInit init;
  init.agent_id = "limits-test";
  init.instance_id = instance_;
  init.cwd = (root_ / "ws").string();
  init.paths = {{init.cwd, true}};
  init.settings_json =
      R"({"isolation": "sandbox", "sandbox": {"landlock_max_abi": 2, "memory": "64m"}})";
  auto refused = factory_(init);
  const std::string error = refused->start();
  EXPECT_NE(error.find("isolation: sandbox: sandbox.memory (64 MiB) needs a memory cgroup: this "
                       "kernel offers no memory cgroup controller"),
            std::string::npos)
      << error;
  EXPECT_NE(run(*refused, "true").error, "");
  refused->cleanup();

  auto& backend = make("");
  EXPECT_EQ(run(backend, "echo runs").stdout_data, "runs\n");
  EXPECT_TRUE(
      log_.has("the sandbox runs WITHOUT its default limits on memory (2048 MiB), pids "
               "(512), a CPU share of its own: this kernel offers no "));
  EXPECT_TRUE(log_.has("this kernel offers no memory cgroup controller to the server"));
  EXPECT_TRUE(log_.has("limits: none)"));
  EXPECT_EQ(cgroups_named("execmcp-limits-test-" + instance_), std::vector<std::string>{});
}

TEST_F(LocalSandboxLimitsTest, SettingsErrorsSayWhatIsExpected) {
  auto refusal = [&](const std::string& sandbox) -> std::string {
    execmcp::sdk::BackendInit init;
    init.agent_id = "limits-test";
    init.cwd = root_.string();
    init.settings_json = R"({"isolation": "sandbox", "sandbox": {)" + sandbox + "}}";
    try {
      factory_(init);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(refusal(R"("memory": "2x")").find("'sandbox.memory': invalid memory size '2x'"),
            std::string::npos)
      << refusal(R"("memory": "2x")");
  EXPECT_NE(refusal(R"("memory": "1m")").find("at least 16m"), std::string::npos);
  EXPECT_NE(refusal(R"("memory": true)").find("'sandbox.memory' must be"), std::string::npos);
  EXPECT_NE(refusal(R"("cpus": 0)").find("positive number of CPUs"), std::string::npos);
  EXPECT_NE(refusal(R"("pids_limit": 4)").find("at least 16"), std::string::npos);
  EXPECT_NE(refusal(R"("pids_limit": "many")").find("must be an integer"), std::string::npos);
  EXPECT_EQ(refusal(R"("memory": "none", "pids_limit": 0, "cpus": 1.5)"), "");
  EXPECT_EQ(refusal(R"("memory": 1073741824)"), "");
}

}  // namespace
