// Chaos tests against the real engine: dockerd restarted during a call, the server SIGKILLed
// during a call, the workspace's filesystem full. They restart the shared engine, so ctest runs
// them alone (RUN_SERIAL); on an engine scripts/docker-engine.sh did not start (a systemd docker,
// a dev machine) the restart test skips and says why, as it may not stop someone else's engine.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "docker_test_support.hpp"

namespace {

using namespace execmcp::docker_test;  // NOLINT(google-build-using-namespace)
using Clock = std::chrono::steady_clock;

const std::string kEngineScript = std::string(EXECMCP_SOURCE_DIR) + "/scripts/docker-engine.sh";

// Starts the engine again when it goes out of scope, whatever the test did in between.
class EngineRestorer {
 public:
  EngineRestorer() = default;
  ~EngineRestorer() {
    int status = 0;
    sh(kEngineScript + " start", &status);
    if (status != 0) std::fprintf(stderr, "EngineRestorer: could not start the engine again\n");
  }
  EngineRestorer(const EngineRestorer&) = delete;
  EngineRestorer& operator=(const EngineRestorer&) = delete;
};

// Empty when the engine may be stopped and started again by scripts/docker-engine.sh (it started
// it); otherwise why not. Asks no engine, so the answer comes at once.
std::string why_engine_cannot_restart() {
  int status = 0;
  const std::string answer = trim(sh(kEngineScript + " owns", &status));
  if (status == 0) return {};
  return answer.empty() ? "scripts/docker-engine.sh owns failed" : answer;
}

// Polls `check` every 100 ms until it is true or `limit` passes.
template <typename Check>
bool eventually(Check check, std::chrono::seconds limit) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (check()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return check();
}

class DockerChaos : public ::testing::Test {
 protected:
  void SetUp() override { REQUIRE_ENGINE(); }
  static BackendInit init_for(const std::string& agent, const std::string& ws) {
    BackendInit init;
    init.agent_id = agent;
    init.cwd = ws;
    init.paths = {{ws, true}};
    init.settings_json = "{}";
    return init;
  }
};

TEST_F(DockerChaos, EngineRestartedDuringACallFailsItClearlyAndLaterCallsWork) {
  if (const std::string why = why_engine_cannot_restart(); !why.empty()) {
    GTEST_SKIP() << "this test restarts the engine, and may not: " << why
                 << ". Run it on an engine scripts/docker-engine.sh started.";
  }
  TempDir ws("enginerestart");
  auto b = make_backend(init_for("enginerestart", ws.path()));
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  const std::string name = "execmcp-enginerestart-" + instance_tag();
  ExecResult during;
  std::thread call([&] { during = run(*b, "sleep 120; echo late", std::chrono::seconds(300)); });
  const bool running = eventually(
      [&] { return sh(outside_cli() + " top " + name).find("sleep 120") != std::string::npos; },
      std::chrono::seconds(30));
  {
    EngineRestorer restore;
    int status = 0;
    sh(kEngineScript + " stop --force", &status);
    EXPECT_EQ(status, 0) << "scripts/docker-engine.sh stop --force failed";
  }
  call.join();
  ASSERT_TRUE(running) << "the call never started";
  // Clear either way: the engine went away under the call, or (when dockerd stopped the container
  // before closing its connections) the container stopped under it.
  bool stopped_notice = false;
  for (const auto& n : during.notices)
    stopped_notice |= n.find("the container stopped during the command") != std::string::npos;
  EXPECT_TRUE(during.error.find("lost Docker during the command") != std::string::npos ||
              (during.error.empty() && during.exit_code != 0 && stopped_notice))
      << "error: " << during.error << " exit: " << during.exit_code;
  EXPECT_EQ(during.stdout_data.find("late"), std::string::npos);

  auto next = run(*b, "echo back");
  EXPECT_EQ(next.error, "");
  EXPECT_EQ(next.stdout_data, "back\n") << next.stderr_data;
  EXPECT_EQ(run(*b, "echo again").stdout_data, "again\n");
  b->cleanup();
}

// A real `execmcp serve` speaking MCP over its stdin and stdout.
class ServeProcess {
 public:
  ServeProcess(const std::string& config, const std::string& agent) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::setenv("EXECMCP_PLUGIN_PATH", EXECMCP_PLUGIN_DIR, 1);
      ::execl(EXECMCP_BINARY, EXECMCP_BINARY, "serve", "--config", config.c_str(), "--agent",
              agent.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~ServeProcess() {
    if (to_ >= 0) ::close(to_);
    if (pid_ > 0 && !reaped_) {
      // Closing stdin ends the server, which removes its container; wait for that.
      if (!wait_exit(std::chrono::seconds(60))) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
      }
    }
    if (from_ >= 0) ::close(from_);
  }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  void send(const std::string& line) {
    const std::string data = line + "\n";
    (void)!::write(to_, data.data(), data.size());
  }
  // The response line carrying `"id":<id>`, or "" after `limit`.
  std::string response(int id, std::chrono::seconds limit) {
    const std::string key = "\"id\":" + std::to_string(id);
    const auto end = Clock::now() + limit;
    for (;;) {
      for (std::size_t nl; (nl = buffer_.find('\n')) != std::string::npos;) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        if (line.find(key + ",") != std::string::npos || line.find(key + "}") != std::string::npos)
          return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
      if (left.count() <= 0) return {};
      pollfd p{from_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::read(from_, buf, sizeof buf);
      if (n <= 0) return {};
      buffer_.append(buf, static_cast<std::size_t>(n));
    }
  }
  std::string initialize() {
    send(
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"chaos","version":"1"}}})");
    auto r = response(1, std::chrono::seconds(120));
    send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    return r;
  }
  void call(int id, const std::string& command) {
    send(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"execute_command","arguments":{"command":")" +
         command + R"("}}})");
  }
  void kill_hard() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    reaped_ = true;
  }

 private:
  bool wait_exit(std::chrono::seconds limit) {
    const auto end = Clock::now() + limit;
    while (Clock::now() < end) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return reaped_ = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  bool reaped_ = false;
  std::string buffer_;
};

TEST_F(DockerChaos, ServerKilledDuringACallLeavesAnOrphanThatTheNextServeRemoves) {
  TempDir root("serve");
  const std::string ws = root.path() + "/ws";
  fs::create_directory(ws);
  const std::string agent = "chaos" + std::to_string(::getpid());
  const std::string config = root.path() + "/execmcp.yaml";
  const std::string mode = test_exec_mode();
  const std::string settings = mode.empty() ? "{}" : "{exec_mode: " + mode + "}";
  std::ofstream(config) << "execmcp: 1\nagents:\n  - id: " << agent << "\n    cwd: " << ws
                        << "\n    backend: {plugin: " << test_backend()
                        << ", settings: " << settings << "}\n    filters: []\n";
  const std::string list = outside_cli() + " ps -aq --filter label=execmcp.agent=" + agent;

  std::string orphan;
  {
    ServeProcess first(config, agent);
    ASSERT_GT(first.pid(), 0);
    ASSERT_NE(first.initialize().find("\"result\""), std::string::npos);
    first.call(2, "sleep 300");
    orphan = trim(sh(list));
    ASSERT_FALSE(orphan.empty()) << "the first server made no container";
    ASSERT_TRUE(eventually(
        [&] { return sh(outside_cli() + " top " + orphan).find("sleep 300") != std::string::npos; },
        std::chrono::seconds(30)));
    first.kill_hard();
  }
  // SIGKILL leaves no chance to clean up: the container outlives its owner.
  ASSERT_TRUE(container_exists(orphan));

  ServeProcess second(config, agent);
  ASSERT_NE(second.initialize().find("\"result\""), std::string::npos);
  EXPECT_FALSE(container_exists(orphan)) << "the orphan " << orphan << " is still there";
  second.call(2, "echo fine");
  const std::string r = second.response(2, std::chrono::seconds(60));
  EXPECT_NE(r.find("fine"), std::string::npos) << r;
  EXPECT_EQ(r.find("\"isError\":true"), std::string::npos) << r;
}

// A workspace on a 1 MiB tmpfs: a write that does not fit fails, says why, and is not reported
// as written; one that fits still works.
TEST_F(DockerChaos, FullWorkspaceFilesystemMakesWriteFileFailClearly) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
  TempDir ws("fullfs");
  ASSERT_EQ(::mount("tmpfs", ws.path().c_str(), "tmpfs", 0, "size=1m,mode=0755,uid=4321,gid=4321"),
            0)
      << std::strerror(errno);
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{ws.path()};
  auto b = make_backend(init_for("fullfs", ws.path()));
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");

  auto small = b->write_file({"small.txt", std::string(1000, 's')});
  EXPECT_EQ(small.error, "");
  EXPECT_EQ(small.bytes_written, 1000u);

  auto big = b->write_file({"big.bin", std::string(3 * 1024 * 1024, 'b')});
  EXPECT_NE(big.error.find("No space left on device"), std::string::npos) << big.error;
  EXPECT_EQ(big.bytes_written, 0u);
  // The call after it is ordinary, and the small file is intact.
  EXPECT_EQ(b->read_file({"small.txt"}).data, std::string(1000, 's'));
  auto rm = run(*b, "rm -f big.bin && echo removed");
  EXPECT_EQ(rm.stdout_data, "removed\n") << rm.stderr_data;
  b->cleanup();
}

}  // namespace
