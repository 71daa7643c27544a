// Attach mode (`container: NAME`) against the real engine: containers made with the outside CLI,
// as MassGen makes them (`docker run -d --name massgen-<agent> -v ws:ws -u 1000 ... sleep
// infinity`); the backend runs commands there and leaves the container as it found it.
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "docker_test_support.hpp"

namespace {

using namespace execmcp::docker_test;  // NOLINT(google-build-using-namespace)
using namespace std::chrono_literals;

// A container made outside execmcp, removed when the test ends.
class OutsideContainer {
 public:
  OutsideContainer(const std::string& tag, const std::string& run_args) {
    name_ = "massgen-" + tag + "-" + instance_tag();
    sh(outside_cli() + " rm -f " + name_);
    int status = 0;
    sh(outside_cli() + " run -d --name " + name_ + " " + run_args + " " + kImage +
           " sleep infinity",
       &status);
    ok_ = status == 0;
  }
  ~OutsideContainer() { sh(outside_cli() + " rm -f " + name_); }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] bool running() const {
    return trim(sh(outside_cli() + " inspect -f '{{.State.Running}}' " + name_)) == "true";
  }
  // Runs `command` in the container from outside (as root, to look around).
  [[nodiscard]] std::string exec(const std::string& command) const {
    return sh(outside_cli() + " exec -u 0 " + name_ + " sh -c '" + command + "'");
  }

 private:
  std::string name_;
  bool ok_ = false;
};

class DockerAttach : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ENGINE();
    // The workspace belongs to the container's user, as MassGen's does.
    ASSERT_EQ(::chown(ws_.path().c_str(), 1000, 1000), 0);
  }
  BackendInit init(const std::string& settings) {
    BackendInit i;
    i.agent_id = "attach";
    i.cwd = ws_.path();
    i.paths = {{ws_.path(), true}};
    i.settings_json = settings;
    return i;
  }
  std::string ws_mount() const { return "-v " + ws_.path() + ":" + ws_.path(); }

  TempDir ws_{"attach"};
};

TEST_F(DockerAttach, RunsInTheContainerAndCleanupLeavesItRunning) {
  OutsideContainer c("a", ws_mount() + " -u 1000");
  ASSERT_TRUE(c.ok());
  std::string error;
  auto b = make_backend(
      init(R"({"container": ")" + c.name() + R"(", "env": {"FROM_SETTING": "y"}})"), &error);
  ASSERT_TRUE(b) << error;
  ASSERT_EQ(b->start(), "");
  auto r = run(*b, "id -u; pwd; echo $FROM_SETTING; echo made > made.txt; cat /etc/hostname");
  EXPECT_EQ(r.error, "") << notices_of(r);
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(r.stdout_data.substr(0, r.stdout_data.find('\n', r.stdout_data.find('\n') + 1) + 1),
            "1000\n" + ws_.path() + "\n");
  EXPECT_NE(r.stdout_data.find("\ny\n"), std::string::npos) << r.stdout_data;
  // In that very container (its hostname is its id), not one of ours.
  const std::string id = trim(sh(outside_cli() + " inspect -f '{{.Id}}' " + c.name()));
  EXPECT_EQ(id.substr(0, 12),
            trim(r.stdout_data.substr(r.stdout_data.rfind('\n', r.stdout_data.size() - 2) + 1)));
  EXPECT_EQ(read_host_file(ws_.path() + "/made.txt"), "made\n");
  EXPECT_FALSE(container_exists("execmcp-attach-" + instance_tag()));
  if (test_exec_mode() != "exec") {
    // Through the runner, delivered into a private directory of the container's /tmp.
    EXPECT_FALSE(has_notice(r, "could not start")) << notices_of(r);
    EXPECT_NE(c.exec("ps -eo args").find("/tmp/.execmcp-" + instance_tag() + "/execmcp-runner"),
              std::string::npos)
        << c.exec("ps -eo args");
  }
  // A command left running in the background by a call is ended with it; the container's own
  // processes are not ours to touch.
  b->stop();
  b->cleanup();
  EXPECT_TRUE(c.running());
  EXPECT_EQ(trim(c.exec("ls -d /tmp/.execmcp-* 2>/dev/null | wc -l")), "0");
  EXPECT_EQ(trim(c.exec("ps -eo args | grep -c \"^sleep infinity\"")), "1");
  // Another backend attaches again, as the next MassGen turn would.
  auto again = make_backend(init(R"({"container": ")" + c.name() + R"("})"));
  ASSERT_TRUE(again);
  ASSERT_EQ(again->start(), "");
  EXPECT_EQ(run(*again, "echo again").stdout_data, "again\n");
  again->cleanup();
  EXPECT_TRUE(c.running());
}

TEST_F(DockerAttach, ACallInFlightIsStoppedButTheContainerIsNot) {
  OutsideContainer c("s", ws_mount() + " -u 1000");
  ASSERT_TRUE(c.ok());
  auto b = make_backend(init(R"({"container": ")" + c.name() + R"("})"));
  ASSERT_TRUE(b);
  ASSERT_EQ(b->start(), "");
  ExecResult slow;
  std::thread t([&] { slow = run(*b, "sleep 300", 120s); });
  for (int i = 0; i < 100 && trim(c.exec("ps -eo args | grep -c \"^sleep 300\"")) != "1"; ++i)
    std::this_thread::sleep_for(100ms);
  b->stop();
  t.join();
  EXPECT_TRUE(slow.cancelled) << slow.error;
  EXPECT_EQ(trim(c.exec("ps -eo args | grep -c \"^sleep 300\"")), "0");
  EXPECT_TRUE(c.running());
  b->cleanup();
  EXPECT_TRUE(c.running());
}

TEST_F(DockerAttach, ARootContainerIsRefusedUnlessANonRootUserIsConfigured) {
  OutsideContainer c("root", ws_mount() + " -u 0");
  ASSERT_TRUE(c.ok());
  auto b = make_backend(init(R"({"container": ")" + c.name() + R"("})"));
  ASSERT_TRUE(b);
  const auto error = b->start();
  EXPECT_NE(error.find("runs as root"), std::string::npos) << error;
  // Nothing ran as root meanwhile: a call is refused, not run with the container's user.
  auto r = run(*b, "id -u");
  EXPECT_NE(r.error, "");
  EXPECT_EQ(r.stdout_data, "");
  b->cleanup();
  // A configured non-root user is used; a configured name that is uid 0 in there is refused.
  auto as_user = make_backend(init(R"({"container": ")" + c.name() + R"(", "user": "1000"})"));
  ASSERT_EQ(as_user->start(), "");
  EXPECT_EQ(run(*as_user, "id -u").stdout_data, "1000\n");
  as_user->cleanup();
  (void)c.exec("echo boss:x:0:0::/:/bin/sh >> /etc/passwd");
  auto boss = make_backend(init(R"({"container": ")" + c.name() + R"(", "user": "boss"})"));
  const auto boss_error = boss->start();
  EXPECT_NE(boss_error.find("is root (uid 0)"), std::string::npos) << boss_error;
  boss->cleanup();
  EXPECT_TRUE(c.running());
}

TEST_F(DockerAttach, AStoppedOrMissingContainerIsAClearErrorAndIsNeverStarted) {
  OutsideContainer c("stopped", ws_mount() + " -u 1000");
  ASSERT_TRUE(c.ok());
  auto b = make_backend(init(R"({"container": ")" + c.name() + R"("})"));
  ASSERT_EQ(b->start(), "");
  sh(outside_cli() + " stop -t 0 " + c.name());
  auto r = run(*b, "echo hi");
  EXPECT_NE(r.error.find("container " + c.name() +
                         " is not running; start it — execmcp does not manage attached"),
            std::string::npos)
      << r.error << notices_of(r);
  EXPECT_FALSE(c.running());
  // Started again by its owner: the next call works, through the runner again in agent mode.
  sh(outside_cli() + " start " + c.name());
  auto back = run(*b, "echo back");
  EXPECT_EQ(back.stdout_data, "back\n") << back.error;
  EXPECT_FALSE(has_notice(back, "could not start")) << notices_of(back);
  sh(outside_cli() + " stop -t 0 " + c.name());
  b->cleanup();
  EXPECT_TRUE(container_exists(c.name()));  // not removed either

  auto missing = make_backend(init(R"({"container": "massgen-none-)" + instance_tag() + R"("})"));
  const auto error = missing->start();
  EXPECT_NE(error.find("is not running; start it"), std::string::npos) << error;
}

TEST_F(DockerAttach, GrantsMustBeMountedAtTheirPathsWithTheirAccess) {
  TempDir ctx("attachctx");
  auto with_ctx = [&](const std::string& name, const std::string& extra) {
    BackendInit i = init(R"({"container": ")" + name + "\"" + extra + "}");
    i.paths.push_back({ctx.path(), false});
    return i;
  };
  {  // The workspace is not mounted.
    OutsideContainer c("nomount", "-u 1000");
    ASSERT_TRUE(c.ok());
    auto b = make_backend(init(R"({"container": ")" + c.name() + R"("})"));
    const auto error = b->start();
    EXPECT_NE(error.find("does not show '" + ws_.path() + "' at the same path"), std::string::npos)
        << error;
  }
  {  // A read-only context mounted read-write: refused, unless accepted.
    OutsideContainer c("rwctx", ws_mount() + " -v " + ctx.path() + ":" + ctx.path() + " -u 1000");
    ASSERT_TRUE(c.ok());
    auto b = make_backend(with_ctx(c.name(), ""));
    const auto error = b->start();
    EXPECT_NE(error.find("attach_accept_writable_context"), std::string::npos) << error;
    auto accepted = make_backend(with_ctx(c.name(), R"(, "attach_accept_writable_context": true)"));
    EXPECT_EQ(accepted->start(), "");
    accepted->cleanup();
  }
  {  // Mounted read-only, as MassGen mounts a read context path: fine.
    OutsideContainer c("roctx",
                       ws_mount() + " -v " + ctx.path() + ":" + ctx.path() + ":ro -u 1000");
    ASSERT_TRUE(c.ok());
    auto b = make_backend(with_ctx(c.name(), ""));
    EXPECT_EQ(b->start(), "");
    EXPECT_EQ(run(*b, "ls " + ctx.path()).exit_code, 0);
    b->cleanup();
  }
}

TEST_F(DockerAttach, SettingsForAContainerWeCreateAreRefused) {
  std::string error;
  auto b = make_backend(init(R"({"container": "massgen-x", "memory": "1g", "network": "bridge"})"),
                        &error);
  EXPECT_FALSE(b);
  EXPECT_NE(error.find("'memory', 'network' cannot apply to a container execmcp does not create"),
            std::string::npos)
      << error;
}

}  // namespace
