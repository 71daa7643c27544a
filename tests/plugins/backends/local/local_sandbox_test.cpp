// `isolation: sandbox` through the `local` plugin, loaded as the host loads it: what a command in
// the sandbox cannot reach (a canary in /root, the server's process), who it runs as, that a
// runner killed under a call brings a new sandbox, the settings' refusals, and what one `true`
// costs against `isolation: none`. The generic contract (timeouts, tree kills, caps, background
// shells, file tools) is the conformance kit's, registered with the sandbox in
// local_conformance_test.cpp. Skipped with the layer and the fix where this machine cannot give a
// sandbox, unless EXECMCP_REQUIRE_SANDBOX=1 (CI).
#include <sys/stat.h>
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
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "execmcp/conformance/backend_conformance.hpp"
#include "execmcp/sdk/network_events.hpp"
#include "sandbox/egress_test_support.hpp"
#include "sandbox/sandbox_test_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using execmcp::sdk::ExecRequest;
using execmcp::sdk::ExecResult;
using execmcp::sdk::ExecutorBackend;

constexpr const char* kSandbox = R"({"isolation": "sandbox", "sandbox": {"landlock_max_abi": 2}})";

class LocalSandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "execmcp-sandbox-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = fs::canonical(pattern);
    fs::permissions(root_, fs::perms::owner_all | fs::perms::others_exec);  // reachable, unlisted
    workspace_ = root_ / "ws";
    fs::create_directories(workspace_);
  }
  void TearDown() override {
    for (auto& b : backends_) b->cleanup();
    backends_.clear();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  std::unique_ptr<ExecutorBackend> create(const std::string& settings) {
    execmcp::sdk::BackendInit init;
    init.agent_id = "sandbox-test";
    init.cwd = workspace_.string();
    init.paths = {{workspace_.string(), true}};
    init.settings_json = settings;
    return factory_(init);
  }
  ExecutorBackend& make(const std::string& settings = kSandbox) {
    backends_.push_back(create(settings));
    EXPECT_EQ(backends_.back()->start(), "");
    return *backends_.back();
  }
  std::string refusal(const std::string& settings) {
    try {
      create(settings);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }
  static ExecResult run(ExecutorBackend& backend, const std::string& command) {
    ExecRequest request;
    request.command = command;
    request.timeout = 60s;
    return backend.execute(request);
  }

  execmcp::conformance::BackendFactory factory_ =
      execmcp::conformance::plugin_backend_factory(EXECMCP_LOCAL_PLUGIN_PATH);
  fs::path root_, workspace_;
  std::vector<std::unique_ptr<ExecutorBackend>> backends_;
};

// A canary the server can read, outside every grant: invisible to a command and to read_file.
TEST_F(LocalSandboxTest, ACanaryInRootCannotBeReadOrListed) {
  EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to put a canary in /root";
  const fs::path canary = "/root/execmcp-canary-" + std::to_string(::getpid());
  std::ofstream(canary) << "secret-canary";
  auto& backend = make();
  const auto cat = run(backend, "cat " + canary.string() + "; ls /root; echo done");
  fs::remove(canary);
  EXPECT_EQ(cat.error, "");
  EXPECT_EQ(cat.stdout_data.find("secret-canary"), std::string::npos) << cat.stdout_data;
  EXPECT_EQ(cat.stdout_data.find("execmcp-canary"), std::string::npos) << cat.stdout_data;
  EXPECT_NE(cat.stdout_data.find("done"), std::string::npos);
  EXPECT_NE(backend.read_file({canary.string()}).error, "");
}

// sandbox.max_processes bounds the sandbox uid's processes on the host (RLIMIT_NPROC, which the
// kernel applies to the uid at every user namespace level): a fork loop gets EAGAIN at the bound
// instead of at the host's pid_max, and the agent serves on. A uid of its own, so that other
// processes of uid 1000 (other tests, containers) do not count.
TEST_F(LocalSandboxTest, AForkLoopStopsAtMaxProcessesAndTheAgentServesOn) {
  EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the sandbox as a uid of its own";
  auto& backend =
      make(R"({"isolation": "sandbox", "sandbox": {"user": 61917, "max_processes": 24, )"
           R"("landlock_max_abi": 2}})");
  const auto r = run(backend,
                     "python3 -c \"\nimport errno, os, time\nkids = []\nerr = 0\n"
                     "for _ in range(200):\n    try:\n        pid = os.fork()\n"
                     "    except OSError as e:\n        err = e.errno\n        break\n"
                     "    if pid == 0:\n        time.sleep(1)\n        os._exit(0)\n"
                     "    kids.append(pid)\nprint(len(kids), errno.errorcode.get(err, err))\n"
                     "for pid in kids:\n    os.waitpid(pid, 0)\n\"");
  ASSERT_EQ(r.error, "");
  int forked = -1;
  char name[32] = {};
  ASSERT_EQ(std::sscanf(r.stdout_data.c_str(), "%d %31s", &forked, name), 2) << r.stdout_data;
  EXPECT_STREQ(name, "EAGAIN") << r.stdout_data;
  EXPECT_GT(forked, 0);
  EXPECT_LT(forked, 24);
  const auto after = run(backend, "echo serves-on; id -u");
  EXPECT_EQ(after.error, "");
  EXPECT_EQ(after.stdout_data, "serves-on\n61917\n");
  EXPECT_NE(refusal(R"({"isolation": "sandbox", "sandbox": {"max_processes": 8}})")
                .find("'sandbox.max_processes' must be 0 (no limit) or a number of processes"),
            std::string::npos);
}

// The sandbox has its own pid namespace: the server (this test) is not there, and neither is
// anything but the sandbox's own processes; and it runs as an unprivileged uid.
TEST_F(LocalSandboxTest, TheServersProcessIsInvisibleAndTheUidIsNotRoot) {
  EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
  auto& backend = make();
  const auto self = std::to_string(::getpid());
  const auto r = run(backend,
                     "ls /proc | grep -x '[0-9]*' | sort -n | tr '\\n' ' '; echo; id -u; "
                     "kill -0 " +
                         self + " 2>&1; echo kill=$?");
  ASSERT_EQ(r.error, "");
  std::vector<std::string> lines;
  std::string line;
  for (char c : r.stdout_data) {
    if (c == '\n') {
      lines.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  ASSERT_GE(lines.size(), 3u) << r.stdout_data;
  // A handful of processes at most: the sandbox's init, the runner, its pool, this shell.
  const auto pids = std::count(lines[0].begin(), lines[0].end(), ' ');
  EXPECT_LT(pids, 12) << lines[0];
  EXPECT_NE(lines[1], "0") << "the command ran as root";
  if (::geteuid() != 0) {
    EXPECT_EQ(lines[1], std::to_string(::geteuid()));
  }
  EXPECT_NE(r.stdout_data.find("kill=1"), std::string::npos)
      << "the server's pid " << self << " was reachable: " << r.stdout_data;
  // The server's environment is not the command's.
  ::setenv("EXECMCP_SERVER_ONLY", "server-secret", 1);
  auto& fresh = make();
  EXPECT_EQ(run(fresh, "echo \"[$EXECMCP_SERVER_ONLY]\"; echo $HOME").stdout_data,
            "[]\n/home/agent\n");
  ::unsetenv("EXECMCP_SERVER_ONLY");
}

// A command that kills the runner loses its own call (said in a notice); the next call gets a new
// sandbox.
TEST_F(LocalSandboxTest, ARunnerKilledUnderACallBringsANewSandbox) {
  EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
  auto& backend = make();
  // The runner is the process whose command line starts with its channel argument.
  const auto killed = run(backend,
                          "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null | "
                          "grep -q '^/.execmcp/execmcp-runner --execmcp-runner-channel' && "
                          "kill -9 ${p#/proc/}; done; sleep 5");
  EXPECT_EQ(killed.exit_code, -1);
  EXPECT_FALSE(killed.notices.empty());
  const auto after = run(backend, "echo back");
  EXPECT_EQ(after.error, "");
  EXPECT_EQ(after.stdout_data, "back\n");
}

// The workspace is at its host path inside, so a `.venv` there is found and activated as on the
// host (its python a link to the system's, which the sandbox shows read-only; a venv made from a
// Python under a home directory, pyenv's say, would point where the sandbox does not see).
TEST_F(LocalSandboxTest, AVenvInTheWorkspaceIsActive) {
  EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
  const std::string venv = (workspace_ / ".venv").string();
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  ASSERT_EQ(std::system(("/usr/bin/python3 -m venv --without-pip '" + venv + "'").c_str()), 0);
  auto& backend = make();
  const auto r = run(backend, "echo $VIRTUAL_ENV; python -c 'import sys; print(sys.prefix)'");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.stdout_data, venv + "\n" + venv + "\n") << "stderr: " << r.stderr_data;
}

// A protected path inside the workspace: read-only for commands (the mount) and for write_file
// (refused before the runner is asked), readable by both.
TEST_F(LocalSandboxTest, AProtectedPathIsReadOnlyForCommandsAndTheFileTools) {
  EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
  std::ofstream(workspace_ / "keep.txt") << "original";
  execmcp::sdk::BackendInit init;
  init.agent_id = "sandbox-test";
  init.cwd = workspace_.string();
  init.paths = {{workspace_.string(), true, {(workspace_ / "keep.txt").string()}}};
  init.settings_json = kSandbox;
  backends_.push_back(factory_(init));
  ASSERT_EQ(backends_.back()->start(), "");
  auto& backend = *backends_.back();
  const auto r =
      run(backend, "cat keep.txt; echo changed > keep.txt; echo rc=$?; echo ok > new.txt");
  EXPECT_NE(r.stdout_data.find("original"), std::string::npos) << r.stdout_data;
  EXPECT_EQ(r.stdout_data.find("rc=0"), std::string::npos) << r.stdout_data << r.stderr_data;
  EXPECT_NE(r.stdout_data.find("rc="), std::string::npos) << r.stdout_data << r.stderr_data;
  EXPECT_NE(backend.write_file({"keep.txt", "changed"}).error, "");
  EXPECT_EQ(backend.read_file({"keep.txt"}).data, "original");
  EXPECT_EQ(backend.read_file({"new.txt"}).data, "ok\n");
  std::ifstream in(workspace_ / "keep.txt");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "original");
}

// A context path that does not exist grants nothing, and a protected path written through a
// symlink is protected by its real path: neither keeps the sandbox from starting.
TEST_F(LocalSandboxTest, AMissingGrantAndAProtectedPathThroughASymlinkStillStart) {
  EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
  fs::create_directories(workspace_ / "real");
  std::ofstream(workspace_ / "real" / "p.txt") << "original";
  fs::create_directory_symlink(workspace_ / "real", workspace_ / "alias");
  execmcp::sdk::BackendInit init;
  init.agent_id = "sandbox-test";
  init.cwd = workspace_.string();
  init.paths = {{workspace_.string(), true, {(workspace_ / "alias" / "p.txt").string()}},
                {(root_ / "missing").string(), false}};
  init.settings_json = kSandbox;
  backends_.push_back(factory_(init));
  ASSERT_EQ(backends_.back()->start(), "");
  const auto r = run(*backends_.back(), "echo x > real/p.txt; echo rc=$?");
  EXPECT_EQ(r.stdout_data.find("rc=0"), std::string::npos) << r.stdout_data;
  std::ifstream in(workspace_ / "real" / "p.txt");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "original");
}

TEST_F(LocalSandboxTest, SettingsErrorsSayWhatIsExpected) {
  EXPECT_NE(refusal(R"({"isolation": "vm"})").find(R"('isolation' must be "none" or "sandbox")"),
            std::string::npos)
      << refusal(R"({"isolation": "vm"})");
  EXPECT_NE(refusal(R"({"network": "none"})").find("applies only with"), std::string::npos);
  EXPECT_NE(refusal(R"({"isolation": "sandbox", "network": "bridge"})").find("'network' must be"),
            std::string::npos);
  // network: egress takes the Docker backends' allow list, and only what the local proxy offers.
  EXPECT_NE(refusal(R"({"isolation": "sandbox", "network": "egress"})").find("needs 'egress'"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"isolation": "sandbox", "egress": {"allow": ["pypi.org"]}})")
                .find("applies only with \"network\": \"egress\""),
            std::string::npos);
  const std::string bad_entry =
      refusal(R"({"isolation": "sandbox", "network": "egress", "egress": {"allow": ["a b"]}})");
  EXPECT_NE(bad_entry.find("'egress.allow.0'"), std::string::npos) << bad_entry;
  EXPECT_NE(refusal(R"({"isolation": "sandbox", "network": "egress",
                        "egress": {"allow": ["pypi.org"], "upstream_ca": "/x.pem"}})")
                .find("'egress.upstream_ca' is not offered by the local sandbox"),
            std::string::npos);
  EXPECT_NE(
      refusal(R"({"isolation": "sandbox", "sandbox": {"user": 0}})").find("never runs as root"),
      std::string::npos);
  EXPECT_NE(refusal(R"({"isolation": "sandbox", "sandbox": {"user": "bob"}})").find("numeric uid"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"isolation": "sandbox", "sandbox": {"pids": 3}})")
                .find("unknown setting 'sandbox.pids'"),
            std::string::npos);
  EXPECT_EQ(refusal(R"({"isolation": "none"})"), "");
}

// network: egress through the plugin: the agent's commands reach the allowed host through its
// proxy (a local HTTP server named by the proxy's hosts file), a refused host gets 403 and the
// result's notice, and without the proxy nothing gets out.
TEST_F(LocalSandboxTest, EgressReachesOnlyTheAllowListThroughTheProxy) {
  EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
  if (!fs::exists("/usr/sbin/squid")) GTEST_SKIP() << "squid not found: scripts/install-deps.sh";
  execmcp_egress_test::LocalInternet net((root_ / "net").string());
  if (net.address().empty()) GTEST_SKIP() << net.error();
  ASSERT_EQ(net.error(), "");
  ::setenv("EXECMCP_TEST_EGRESS_HOSTS_FILE", net.hosts_file().c_str(), 1);
  const std::string port = std::to_string(net.port());
  struct Sink final : execmcp::sdk::NetworkEventSink {
    void on_network_event(const execmcp::sdk::NetworkEvent& event) noexcept override {
      std::lock_guard lock(mutex);
      events.push_back(event);
    }
    std::mutex mutex;
    std::vector<execmcp::sdk::NetworkEvent> events;
  } sink;
  backends_.push_back(create(R"({"isolation": "sandbox", "sandbox": {"landlock_max_abi": 2},
                                 "network": "egress",
                                 "egress": {"allow": ["allowed.execmcp.test"], "ports": [)" +
                             port + "]}}"));
  auto& backend = *backends_.back();
  auto* events = execmcp::sdk::network_events(backend);
  ASSERT_NE(events, nullptr) << "network: egress offers execmcp.network_events/1";
  events->subscribe(&sink);
  struct Unsubscribe {
    execmcp::sdk::NetworkEvents* events;
    ~Unsubscribe() { events->subscribe(nullptr); }
  } unsubscribe{events};  // before the sink goes, whatever happens
  ASSERT_EQ(backend.start(), "");
  const std::string url = "allowed.execmcp.test:" + port + "/hello.txt";
  const auto allowed = run(backend, "curl -s -m 5 -w ' %{http_code}' http://" + url);
  EXPECT_EQ(allowed.stdout_data, "HELLO-FROM-THE-LOCAL-INTERNET\n 200") << allowed.stderr_data;
  const auto denied = run(backend,
                          "curl -s -m 5 -o /dev/null -w '%{http_code}' "
                          "http://denied.execmcp.test:" +
                              port + "/hello.txt");
  EXPECT_EQ(denied.stdout_data, "403");
  // The result says it was the boundary (curl hid the 403 page here, as pip would), as on Docker;
  // the allowed request's did not.
  EXPECT_TRUE(allowed.notices.empty());
  EXPECT_EQ(denied.notices.size(), 1U);
  EXPECT_EQ(denied.notices.empty() ? std::string() : denied.notices[0],
            "the egress proxy refused a request: denied.execmcp.test:" + port +
                " (not in this agent's egress allow list; allow: allowed.execmcp.test)");
  const auto bypass = run(backend,
                          "curl -s -m 5 -o /dev/null -w '%{http_code}' --noproxy '*' "
                          "http://" +
                              net.address() + ":" + port + "/hello.txt");
  EXPECT_EQ(bypass.stdout_data, "000");
  EXPECT_TRUE(bypass.notices.empty());  // the proxy never saw it
  // The refusal reached the subscribed sink (the host's audit), the allowed request did not.
  const auto refused_seen = [&sink] {
    std::lock_guard lock(sink.mutex);
    return std::any_of(sink.events.begin(), sink.events.end(), [](const auto& e) {
      return e.refused && e.host == "denied.execmcp.test" && e.method == "GET";
    });
  };
  for (int i = 0; i < 200 && !refused_seen(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(refused_seen());
  // Squid (this process's child: the plugin forks it) runs in the sandbox's cgroup of its own
  // where there is one, so its memory and CPU count toward the sandbox's limits.
  const auto memory_cgroup_of = [](const std::string& pid) {
    std::ifstream in("/proc/" + pid + "/cgroup");
    for (std::string line; std::getline(in, line);)
      if (line.find(":memory:") != std::string::npos || line.starts_with("0::"))
        if (line.find("/execmcp-") != std::string::npos) return line;
    return std::string();
  };
  std::string squid_cgroup = "no squid child found";
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    std::ifstream stat(entry.path() / "stat");
    std::string text;
    if (pid.find_first_not_of("0123456789") != std::string::npos || !std::getline(stat, text))
      continue;
    const auto paren = text.rfind(')');
    if (text.find("(squid)") == std::string::npos || paren == std::string::npos) continue;
    if (std::stol(text.substr(paren + 4)) != ::getpid()) continue;
    squid_cgroup = memory_cgroup_of(pid);
  }
  if (::geteuid() == 0) {
    EXPECT_NE(squid_cgroup, "") << "Squid is not in the sandbox's cgroup";
  }
  backend.cleanup();
  {
    std::lock_guard lock(sink.mutex);
    for (const auto& e : sink.events) EXPECT_NE(e.host, "allowed.execmcp.test");
  }
  ::unsetenv("EXECMCP_TEST_EGRESS_HOSTS_FILE");
}

// Fail closed: without bubblewrap the agent does not start (no fallback to the host), and the
// error names the layer.
TEST_F(LocalSandboxTest, WithoutBubblewrapTheAgentDoesNotStart) {
  ::setenv("EXECMCP_BWRAP", "/nonexistent/bwrap", 1);
  auto backend = create(kSandbox);
  const std::string error = backend->start();
  ::unsetenv("EXECMCP_BWRAP");
  EXPECT_NE(error.find("bubblewrap"), std::string::npos) << error;
  EXPECT_NE(run(*backend, "true").error, "");
  backend->cleanup();
}

// Not a benchmark (bench/ is): the per-call cost of `true` in the sandbox and on the host, side by
// side, printed for the record; asserts only that the sandbox is not wildly slower.
TEST_F(LocalSandboxTest, ACallCostsAboutWhatItCostsOnTheHost) {
  EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
  auto& sandboxed = make();
  auto& host = make("{}");
  auto p50 = [](ExecutorBackend& backend) {
    std::vector<double> ms;
    for (int i = 0; i < 60; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      EXPECT_EQ(run(backend, "true").exit_code, 0);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  p50(sandboxed);  // warm both
  p50(host);
  const double s = p50(sandboxed), h = p50(host);
  std::printf("`true` p50: sandbox %.3f ms, none %.3f ms, ratio %.2f\n", s, h, s / h);
  EXPECT_LT(s, h * 5 + 20);
}

}  // namespace
