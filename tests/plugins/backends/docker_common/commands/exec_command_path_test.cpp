// Tests of ExecCommandPath against FakeEngine: a call's container brought back once when it is gone
// or stopped, with a notice, and the exec's own form of a call; and of the probes it shares with
// the runner's path (ExecProbe, KillExplainer).
#include "docker_common/commands/exec_command_path.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "container_test_fixture.hpp"
#include "fake_engine.hpp"
#include "lifecycle_test_support.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using test_support::has;

class ExecCommandPathTest : public test_support::ContainerTest {
 protected:
  void SetUp() override {
    test_support::ContainerTest::SetUp();
    if (HasFatalFailure()) return;
    lifecycle_ = make_lifecycle();
    ASSERT_EQ(lifecycle_->start(), "");
    engine_.calls.clear();
    probe_ = std::make_unique<ExecProbe>(*lifecycle_);
    path_ = std::make_unique<ExecCommandPath>(*lifecycle_, *probe_);
  }

  ContainerCommand echo() const {
    ContainerCommand c;
    c.script = "echo hi";
    c.work_dir = workspace_;
    c.marker = "m";
    return c;
  }
  const std::string& name() const { return lifecycle_->name(); }

  std::unique_ptr<ContainerLifecycle> lifecycle_;
  std::unique_ptr<ExecProbe> probe_;
  std::unique_ptr<ExecCommandPath> path_;
};

TEST_F(ExecCommandPathTest, ACallRunsAsOneExec) {
  engine_.exec_results.push_back({"hi\n", "", 0});
  const auto r = path_->run(echo());
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data, "hi\n");
  EXPECT_TRUE(r.notices.empty());
  EXPECT_EQ(engine_.calls, std::vector<std::string>{"exec " + name()});
}

TEST_F(ExecCommandPathTest, AContainerGoneMidCallIsRecreatedOnceWithANotice) {
  engine_.containers.erase(name());
  engine_.exec_results.push_back({"hi\n", "", 0});
  const auto r = path_->run(echo());
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.stdout_data, "hi\n");
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_TRUE(has(r.notices[0], "was gone and a fresh one was created")) << r.notices[0];
  const std::vector<std::string> want = {"exec " + name(), "create " + name(), "start " + name(),
                                         "exec " + name()};
  EXPECT_EQ(engine_.calls, want);
}

TEST_F(ExecCommandPathTest, AStoppedContainerIsStartedAgainWithANotice) {
  engine_.containers[name()].state.running = false;
  engine_.exec_results.push_back({"hi\n", "", 0});
  const auto r = path_->run(echo());
  EXPECT_EQ(r.error, "");
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_TRUE(has(r.notices[0], "had stopped and was started again")) << r.notices[0];
  EXPECT_EQ(engine_.count("create " + name()), 0u);
}

TEST_F(ExecCommandPathTest, AContainerThatKeepsVanishingIsRecoveredOnlyOnce) {
  engine_.vanish_on_exec = true;
  const auto r = path_->run(echo());
  EXPECT_TRUE(has(r.error, "creating the exec")) << r.error;
  EXPECT_EQ(engine_.count("create " + name()), 1u);
  EXPECT_EQ(engine_.count("exec " + name()), 2u);
}

TEST_F(ExecCommandPathTest, AProbeNeverBringsTheContainerBack) {
  engine_.containers.erase(name());
  const auto r = probe_->run("true", std::chrono::seconds(1));
  EXPECT_FALSE(r.error.empty());
  EXPECT_EQ(engine_.count("create " + name()), 0u);
}

// The engine learns of an OOM kill from an event of its own, which can land after the exit it
// reports (seen under gVisor on a loaded machine: "exited with code 137, OOMKilled=false").
TEST_F(ExecCommandPathTest, AnOomKillTheEngineLearnsOfAfterTheExitIsReportedAsOne) {
  auto& state = engine_.containers[name()].state;
  state.running = false;
  state.exit_code = 137;
  state.oom_killed = false;
  int looks = 0;
  engine_.on_inspect = [&looks](ContainerInfo& c) {
    if (++looks == 3) c.state.oom_killed = true;
  };
  sdk::ExecResult r;
  r.exit_code = 137;
  KillExplainer(*lifecycle_, *probe_).explain(r);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_TRUE(has(r.notices[0], "exited with code 137, OOMKilled=true")) << r.notices[0];
  EXPECT_GE(looks, 3);
}

TEST_F(ExecCommandPathTest, AnUnreachableEngineIsTheCallsError) {
  engine_.reachable = false;
  const auto r = path_->run(echo());
  EXPECT_EQ(r.error, "cannot reach the engine at fake://engine");  // complete: said as it is
  EXPECT_TRUE(engine_.calls.empty());
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
