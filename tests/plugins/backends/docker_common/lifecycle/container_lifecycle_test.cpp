// Tests of ContainerLifecycle's decisions against FakeEngine: what is created, started, recovered
// and removed, and what is never touched (attach mode, live owners' containers).
#include "docker_common/lifecycle/container_lifecycle.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "container_test_fixture.hpp"
#include "docker_common/commands/container_probe.hpp"
#include "fake_engine.hpp"
#include "lifecycle_test_support.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using test_support::dead_pid;
using test_support::has;
using test_support::host_name;

// Counts the containers created under the lifecycle's name (a new one has an empty runner volume),
// as the runner's delivery does.
struct CreatedCount final : ContainerPart {
  void on_container_start(bool created) override { count += created ? 1 : 0; }
  unsigned count = 0;
};

// A probe that answers every script with `stdout`.
struct CannedProbe final : ContainerProbe {
  explicit CannedProbe(std::string out) : stdout_data(std::move(out)) {}
  sdk::ExecResult run(const std::string&, std::chrono::milliseconds, const std::string&,
                      const std::vector<std::string>&) override {
    sdk::ExecResult r;
    r.stdout_data = stdout_data;
    return r;
  }
  void kill_marked(const std::string&) override {}
  std::string stdout_data;
};

class ContainerLifecycleTest : public test_support::ContainerTest {
 protected:
  void SetUp() override {
    test_support::ContainerTest::SetUp();
    if (HasFatalFailure()) return;
    engine_.images.insert(settings_.image);
  }
  ContainerLifecycle make() { return ContainerLifecycle(init_, "docker-test", settings_, engine_); }
  // A container of another execmcp process on this host (owner `pid`), or of another host.
  void add_managed(const std::string& name, long pid, const std::string& host) {
    engine_.add_container(
        name, true,
        {{kLabelManaged, "true"}, {kLabelOwnerHost, host}, {kLabelOwnerPid, std::to_string(pid)}});
  }
};

TEST_F(ContainerLifecycleTest, StartCreatesAndStartsAMissingContainer) {
  auto lifecycle = make();
  CreatedCount created;
  lifecycle.parts().add(created);
  ASSERT_EQ(lifecycle.start(), "");
  const std::string name = lifecycle.name();
  EXPECT_EQ(engine_.count("create " + name), 1u);
  EXPECT_EQ(engine_.count("start " + name), 1u);
  ASSERT_TRUE(engine_.containers.contains(name));
  EXPECT_TRUE(engine_.containers[name].state.running);
  EXPECT_EQ(engine_.last_spec.user, "1000:1000");
  EXPECT_EQ(lifecycle.user(), "1000:1000");
  EXPECT_EQ(created.count, 1u);
}

TEST_F(ContainerLifecycleTest, AMissingImageIsAnErrorThatSaysHowToBuildIt) {
  engine_.images.clear();
  auto lifecycle = make();
  const auto err = lifecycle.start();
  EXPECT_TRUE(has(err, "image '" + settings_.image + "' not found")) << err;
  EXPECT_TRUE(has(err, "docker/build.sh")) << err;
  EXPECT_TRUE(engine_.calls.empty());
}

TEST_F(ContainerLifecycleTest, AnUnreachableEngineIsNamedInTheError) {
  engine_.reachable = false;
  auto lifecycle = make();
  const auto err = lifecycle.start();
  EXPECT_EQ(err, "cannot reach the engine at fake://engine");
  EXPECT_TRUE(engine_.calls.empty());
}

TEST_F(ContainerLifecycleTest, ARegisteredRuntimeIsGivenToTheContainer) {
  engine_.runtime_list = {{"runc", {"runc", {}}},
                          {"runsc", {"/usr/bin/runsc", {"--network=none"}}}};
  settings_.runtime = "runsc";
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  EXPECT_EQ(engine_.last_spec.runtime, "runsc");
  EXPECT_EQ(engine_.runtimes_calls, 1);
}

TEST_F(ContainerLifecycleTest, NoRuntimeSettingAsksTheEngineNothing) {
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  EXPECT_EQ(engine_.last_spec.runtime, "");
  EXPECT_EQ(engine_.runtimes_calls, 0);
}

TEST_F(ContainerLifecycleTest, AnUnknownRuntimeIsAStartErrorListingTheEnginesRuntimes) {
  engine_.runtime_list = {{"runc", {"runc", {}}}, {"kata", {"kata-runtime", {}}}};
  settings_.runtime = "runsc";
  auto lifecycle = make();
  const auto err = lifecycle.start();
  EXPECT_TRUE(has(err, "runtime 'runsc' is not registered with the engine at fake://engine"))
      << err;
  EXPECT_TRUE(has(err, "(its runtimes: kata, runc)")) << err;
  EXPECT_TRUE(has(err, "docs/deployment.md")) << err;
  EXPECT_EQ(engine_.count("create " + lifecycle.name()), 0u);
}

TEST_F(ContainerLifecycleTest, ARuntimeWithoutNetworkIsRefusedWithANetwork) {
  engine_.runtime_list = {{"runsc", {"/usr/bin/runsc", {"--network=none"}}}};
  settings_.runtime = "runsc";
  settings_.network = "bridge";
  auto lifecycle = make();
  const auto err = lifecycle.start();
  EXPECT_TRUE(has(err, "runtime 'runsc' runs with --network=none")) << err;
  EXPECT_TRUE(has(err, "'network: bridge' cannot apply")) << err;
  EXPECT_EQ(engine_.count("create " + lifecycle.name()), 0u);
  // The same runtime with its own network on is left to its operator.
  engine_.runtime_list["runsc"].args = {"--network=host"};
  EXPECT_EQ(make().start(), "");
}

TEST_F(ContainerLifecycleTest, GvisorRefusesARootOwnedWorkspaceAndIsWatchedForStops) {
  engine_.runtime_list = {{"runsc", {"/usr/bin/runsc", {"--network=none"}}},
                          {"runc", {"runc", {}}}};
  settings_.runtime = "runc";
  auto runc = make();
  EXPECT_EQ(runc.start(), "");
  EXPECT_FALSE(runc.execs_outlive_container());  // runc ends an exec with its container
  EXPECT_EQ(engine_.last_spec.pids_limit, settings_.pids_limit);
  EXPECT_EQ(engine_.last_spec.nproc_limit, 0);  // Linux counts it per user, host-wide
  settings_.runtime = "runsc";
  settings_.exec_mode = ExecMode::Agent;
  auto agent = make();
  EXPECT_EQ(agent.start(), "");  // execmcp-runner marks its commands where it cannot reap them
  EXPECT_TRUE(agent.execs_outlive_container());
  EXPECT_EQ(engine_.last_spec.pids_limit, engine_pids_limit(settings_.pids_limit, true));
  EXPECT_EQ(engine_.last_spec.nproc_limit, settings_.pids_limit);  // counted inside the sandbox
  // The workspace (a root-owned temp dir) would need an ACL for uid 1000, which gVisor ignores.
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: a root-owned workspace, then a chown";
  settings_.exec_mode = ExecMode::Exec;
  settings_.user = "";
  auto lifecycle = make();
  const auto creates = engine_.count("create " + lifecycle.name());
  const auto err = lifecycle.start();
  EXPECT_TRUE(has(err, "does not honour POSIX ACLs")) << err;
  EXPECT_TRUE(has(err, workspace_)) << err;
  EXPECT_EQ(engine_.count("create " + lifecycle.name()), creates);
  // Owned by a non-root user, it is that user's container: no ACL, no refusal.
  ASSERT_EQ(::chown(workspace_.c_str(), 1000, 1000), 0);
  EXPECT_EQ(make().start(), "");
  EXPECT_EQ(engine_.last_spec.user, "1000:1000");
}

TEST_F(ContainerLifecycleTest, AnEngineThatCannotListRuntimesLeavesTheCheckToCreate) {
  // A socket proxy refuses GET /info: with network none only create can tell, in its own words.
  engine_.runtimes_error = EngineError::of(EngineError::Kind::kOther, "403 denied by the proxy");
  settings_.runtime = "nosuch";
  auto lifecycle = make();
  const auto err = lifecycle.start();
  EXPECT_TRUE(has(err, "Unknown runtime specified nosuch")) << err;
  EXPECT_TRUE(lifecycle.execs_outlive_container());  // it may be gVisor: watched
  // With a network the list is needed: refused, saying why.
  settings_.network = "bridge";
  const auto networked = make().start();
  EXPECT_TRUE(has(networked, "listing the engine's runtimes")) << networked;
  EXPECT_TRUE(has(networked, "403 denied by the proxy")) << networked;
}

TEST_F(ContainerLifecycleTest, AListedContainerOfOursIsRemovedBeforeTheCreate) {
  auto lifecycle = make();
  add_managed(lifecycle.name(), static_cast<long>(getpid()), host_name());
  engine_.containers[lifecycle.name()].labels[kLabelAgent] = init_.agent_id;
  engine_.containers[lifecycle.name()].labels[kLabelInstance] = init_.instance_id;
  engine_.containers[lifecycle.name()].labels[kLabelRole] = kRoleAgent;
  ASSERT_EQ(lifecycle.start(), "");
  EXPECT_EQ(engine_.count("remove id-" + lifecycle.name()), 1u);
  EXPECT_EQ(engine_.count("create " + lifecycle.name()), 1u);  // no conflict to meet
}

// Issue 28, finding 1: a container under our name was removed as "stale" and the next one under it
// adopted, whoever made it. Now its labels decide: another sandbox's (or no one's) is neither
// removed, started, stopped nor used, and the start, recovery or stop says why.
TEST_F(ContainerLifecycleTest, AContainerOfAnotherSandboxUnderOurNameIsNeverRemovedNorUsed) {
  const std::map<std::string, std::map<std::string, std::string>> others = {
      {"unlabelled", {}},
      {"another user",
       {{kLabelManaged, "true"},
        {kLabelAgent, init_.agent_id},
        {kLabelInstance, init_.instance_id + "-u-bob"}}},
      {"another agent",
       {{kLabelManaged, "true"}, {kLabelAgent, "other"}, {kLabelInstance, init_.instance_id}}},
      {"a proxy",
       {{kLabelManaged, "true"},
        {kLabelAgent, init_.agent_id},
        {kLabelInstance, init_.instance_id},
        {kLabelRole, kRoleEgressProxy}}}};
  for (const auto& [what, labels] : others) {
    SCOPED_TRACE(what);
    engine_.containers.clear();
    auto lifecycle = make();
    engine_.add_container(lifecycle.name(), true, labels);
    engine_.calls.clear();
    const auto started = lifecycle.start();
    EXPECT_TRUE(has(started, "is not this sandbox's")) << started;
    std::vector<std::string> notices;
    const auto recovered = lifecycle.recover(notices);
    EXPECT_TRUE(has(recovered, "is not this sandbox's")) << recovered;
    const auto stopped = lifecycle.stop_container(std::chrono::seconds(1));
    EXPECT_TRUE(has(stopped, "is not this sandbox's")) << stopped;
    lifecycle.remove_container();
    for (const auto& call : engine_.calls)
      EXPECT_FALSE(has(call, "remove") || has(call, "start ") || has(call, "stop ")) << call;
    ASSERT_TRUE(engine_.containers.contains(lifecycle.name()));
    EXPECT_EQ(engine_.containers[lifecycle.name()].labels, labels);
    EXPECT_TRUE(engine_.containers[lifecycle.name()].state.running);
  }
}

TEST_F(ContainerLifecycleTest, ANameConflictRemovesTheHolderOnceAndCreatesAgain) {
  auto lifecycle = make();
  engine_.conflicts_on_create = 1;
  ASSERT_EQ(lifecycle.start(), "");
  EXPECT_EQ(engine_.count("create " + lifecycle.name()), 2u);
  EXPECT_TRUE(engine_.containers[lifecycle.name()].state.running);

  // A name that stays taken is an error after one removal, not a loop.
  auto again = ContainerLifecycle(init_, "docker-test", settings_, engine_);
  engine_.containers.clear();
  engine_.calls.clear();
  engine_.conflicts_on_create = 5;
  const auto err = again.start();
  EXPECT_TRUE(has(err, "creating container '" + again.name() + "'")) << err;
  EXPECT_EQ(engine_.count("create " + again.name()), 2u);
}

TEST_F(ContainerLifecycleTest, OrphansOfADeadOwnerAreRemovedAndLiveOnesKept) {
  const long dead = dead_pid();
  add_managed("orphan", dead, host_name());
  add_managed("alive", static_cast<long>(getpid()), host_name());
  add_managed("elsewhere", dead, "another-host");
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  EXPECT_FALSE(engine_.containers.contains("orphan"));
  EXPECT_EQ(engine_.count("remove id-orphan"), 1u);
  EXPECT_TRUE(engine_.containers.contains("alive"));
  EXPECT_TRUE(engine_.containers.contains("elsewhere"));  // not this host's to judge
}

TEST_F(ContainerLifecycleTest, RecoverStartsAStoppedContainerWithANotice) {
  auto lifecycle = make();
  CreatedCount created;
  lifecycle.parts().add(created);
  ASSERT_EQ(lifecycle.start(), "");
  engine_.containers[lifecycle.name()].state.running = false;
  engine_.calls.clear();
  std::vector<std::string> notices;
  ASSERT_EQ(lifecycle.recover(notices), "");
  EXPECT_EQ(engine_.calls, std::vector<std::string>{"start id-" + lifecycle.name()});
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_TRUE(has(notices[0], "had stopped and was started again")) << notices[0];
  EXPECT_EQ(created.count, 1u);  // the same container: its runner volume is kept
}

TEST_F(ContainerLifecycleTest, RecoverCreatesAGoneContainerWithANotice) {
  auto lifecycle = make();
  CreatedCount created;
  lifecycle.parts().add(created);
  ASSERT_EQ(lifecycle.start(), "");
  engine_.containers.erase(lifecycle.name());
  engine_.calls.clear();
  std::vector<std::string> notices;
  ASSERT_EQ(lifecycle.recover(notices), "");
  EXPECT_EQ(engine_.count("create " + lifecycle.name()), 1u);
  EXPECT_TRUE(engine_.containers[lifecycle.name()].state.running);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_TRUE(has(notices[0], "was gone and a fresh one was created")) << notices[0];
  EXPECT_EQ(created.count, 2u);
}

TEST_F(ContainerLifecycleTest, RecoverLeavesARunningContainerAlone) {
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  engine_.calls.clear();
  std::vector<std::string> notices;
  EXPECT_EQ(lifecycle.recover(notices), "");
  EXPECT_TRUE(engine_.calls.empty());
  EXPECT_TRUE(notices.empty());
}

TEST_F(ContainerLifecycleTest, RemoveContainerRemovesOurs) {
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  lifecycle.remove_container();
  EXPECT_FALSE(engine_.containers.contains(lifecycle.name()));
}

class AttachedLifecycleTest : public ContainerLifecycleTest {
 protected:
  void SetUp() override {
    ContainerLifecycleTest::SetUp();
    settings_.container = "theirs";
    settings_.user.clear();
    auto& c = engine_.add_container("theirs", true);
    c.user = "1000:1000";
    c.mounts = {{"bind", workspace_, workspace_, true}};
  }
};

TEST_F(AttachedLifecycleTest, StartChecksTheContainerAndNeverCreatesOrRemoves) {
  auto lifecycle = make();
  EXPECT_TRUE(lifecycle.attached());
  EXPECT_EQ(lifecycle.name(), "theirs");
  ASSERT_EQ(lifecycle.start(), "");
  EXPECT_EQ(lifecycle.user(), "1000:1000");
  CannedProbe probe("uid=1000\n");
  EXPECT_EQ(lifecycle.parts().after_start(probe), "");
  lifecycle.remove_container();
  EXPECT_TRUE(engine_.calls.empty());  // nothing created, started or removed
  EXPECT_TRUE(engine_.containers.contains("theirs"));
}

TEST_F(AttachedLifecycleTest, AUserThatIsRootInsideIsRefused) {
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  CannedProbe probe("uid=0\n");
  const auto err = lifecycle.parts().after_start(probe);
  EXPECT_TRUE(has(err, "is root (uid 0) in container theirs")) << err;
}

TEST_F(AttachedLifecycleTest, AStoppedContainerIsNeverStartedByUs) {
  engine_.containers["theirs"].state.running = false;
  auto lifecycle = make();
  auto err = lifecycle.start();
  EXPECT_TRUE(has(err, "container theirs is not running")) << err;
  std::vector<std::string> notices;
  err = lifecycle.recover(notices);
  EXPECT_TRUE(has(err, "container theirs is not running")) << err;
  engine_.containers.erase("theirs");
  err = lifecycle.recover(notices);
  EXPECT_TRUE(has(err, "container theirs is not running")) << err;
  EXPECT_TRUE(engine_.calls.empty());
  EXPECT_TRUE(notices.empty());
}

TEST_F(AttachedLifecycleTest, AGrantTheContainerDoesNotShowIsRefused) {
  engine_.containers["theirs"].mounts.clear();
  auto lifecycle = make();
  const auto err = lifecycle.start();
  EXPECT_TRUE(has(err, "'" + workspace_ + "'")) << err;
  EXPECT_TRUE(engine_.calls.empty());
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
