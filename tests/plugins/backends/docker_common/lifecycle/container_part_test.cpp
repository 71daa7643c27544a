// Tests of the container lifecycle's parts (container_part.hpp) against FakeEngine: which hooks
// run at each step and in what order, a step a part ends early or fails, and what parts add to a
// command's environment and result.
#include "docker_common/lifecycle/container_part.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "container_test_fixture.hpp"
#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "fake_engine.hpp"
#include "lifecycle_test_support.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using test_support::has;

// Writes down each hook as it runs; `fail_at` names a hook that fails (or, for on_start, ends the
// step as done).
struct RecordingPart final : ContainerPart {
  explicit RecordingPart(std::string tag) : tag(std::move(tag)) {}
  PartStep on_start() override {
    add("on_start");
    return fail_at == "on_start" ? PartStep::done() : PartStep::next();
  }
  std::string prepare_start() override { return add("prepare_start"); }
  std::string before_create() override { return add("before_create"); }
  void on_start_failed() noexcept override { add("on_start_failed"); }
  PartStep before_recover(sdk::LogLevel) override {
    add("before_recover");
    return PartStep::next();
  }
  std::string prepare_spec(ContainerSpec& spec) override {
    spec.env.push_back("PART=" + tag);
    return add("prepare_spec");
  }
  void on_container_start(bool created) override {
    add(created ? "on_container_start(created)" : "on_container_start(again)");
  }
  std::string on_stop(std::chrono::seconds) override { return add("on_stop"); }
  void on_remove() noexcept override { add("on_remove"); }
  void add_call_env(std::vector<std::string>& env) const override { env.push_back("BY=" + tag); }
  std::uint64_t begin_call() override { return ++calls; }
  void decorate_result(std::uint64_t mark, sdk::ExecResult& result) override {
    result.notices.push_back(tag + " saw call " + std::to_string(mark));
  }

  std::string add(const std::string& hook) {
    seen.push_back(hook);
    return hook == fail_at ? tag + " refuses at " + hook : std::string();
  }
  std::string tag;
  std::string fail_at;
  std::vector<std::string> seen;
  std::uint64_t calls = 0;
};

class ContainerPartTest : public test_support::ContainerTest {
 protected:
  void SetUp() override {
    test_support::ContainerTest::SetUp();
    if (HasFatalFailure()) return;
    lifecycle_ = make_lifecycle();
  }
  std::unique_ptr<ContainerLifecycle> lifecycle_;
};

TEST_F(ContainerPartTest, EachStepAsksThePartsAtItsPoints) {
  RecordingPart part("a");
  lifecycle_->parts().add(part);
  ASSERT_EQ(lifecycle_->start(), "");
  // The spec is prepared (and checked) once before anything is made, then for the create.
  const std::vector<std::string> start = {"on_start",      "prepare_spec",
                                          "prepare_start", "before_create",
                                          "prepare_spec",  "on_container_start(created)"};
  EXPECT_EQ(part.seen, start);
  const auto& env = engine_.last_spec.env;
  EXPECT_NE(std::find(env.begin(), env.end(), "PART=a"), env.end());

  part.seen.clear();
  engine_.containers[lifecycle_->name()].state.running = false;
  std::vector<std::string> notices;
  ASSERT_EQ(lifecycle_->recover(notices), "");
  const std::vector<std::string> recover = {"before_recover", "prepare_spec",
                                            "on_container_start(again)"};
  EXPECT_EQ(part.seen, recover);

  part.seen.clear();
  ASSERT_EQ(lifecycle_->stop_container(std::chrono::seconds(1)), "");
  lifecycle_->remove_container();
  EXPECT_EQ(part.seen, (std::vector<std::string>{"on_stop", "on_remove"}));
}

TEST_F(ContainerPartTest, APartThatFailsBeforeCreateFailsTheStartAndEveryPartUndoes) {
  RecordingPart first("a"), second("b");
  second.fail_at = "before_create";
  lifecycle_->parts().add(first);
  lifecycle_->parts().add(second);
  EXPECT_EQ(lifecycle_->start(), "b refuses at before_create");
  EXPECT_EQ(engine_.count("create " + lifecycle_->name()), 0u);
  EXPECT_EQ(first.seen.back(), "on_start_failed");
  EXPECT_EQ(second.seen.back(), "on_start_failed");
}

TEST_F(ContainerPartTest, AFailingSpecIsNeverCreated) {
  RecordingPart part("a");
  lifecycle_->parts().add(part);
  part.fail_at = "prepare_spec";
  const auto err = lifecycle_->start();
  EXPECT_TRUE(has(err, "a refuses at prepare_spec")) << err;
  EXPECT_EQ(engine_.count("create " + lifecycle_->name()), 0u);
  // ... and the later parts are not asked.
  EXPECT_EQ(std::count(part.seen.begin(), part.seen.end(), "prepare_start"), 0);
}

TEST_F(ContainerPartTest, APartThatEndsTheStartLeavesTheEngineAlone) {
  RecordingPart part("a");
  part.fail_at = "on_start";  // done: as attach mode does once its checks pass
  lifecycle_->parts().add(part);
  EXPECT_EQ(lifecycle_->start(), "");
  EXPECT_TRUE(engine_.calls.empty());
  EXPECT_EQ(part.seen, std::vector<std::string>{"on_start"});
}

TEST_F(ContainerPartTest, APartsEnvAndNoticesGoWithEachCallInPartOrder) {
  RecordingPart first("a"), second("b");
  lifecycle_->parts().add(first);
  lifecycle_->parts().add(second);
  const auto env = lifecycle_->call_env({{"OWN", "1"}, {"BY", "call"}});
  EXPECT_EQ(env, (std::vector<std::string>{"BY=a", "BY=b", "OWN=1", "BY=call"}));
  lifecycle_->parts().begin_calls();
  const auto marks = lifecycle_->parts().begin_calls();
  sdk::ExecResult result;
  lifecycle_->parts().decorate_results(marks, result);
  EXPECT_EQ(result.notices, (std::vector<std::string>{"a saw call 2", "b saw call 2"}));
}

// The credentials part alone: its secret goes with each call, never into the container's config,
// and a value changed in the server's environment is read again at the next start.
TEST_F(ContainerPartTest, TheCredentialsPartGivesEachCallItsSecretsAndTheContainerNone) {
  ::setenv("EXECMCP_PART_TEST_SECRET", "first", 1);
  settings_.credentials.env_vars = {"EXECMCP_PART_TEST_SECRET"};
  ContainerLifecycle lifecycle(init_, "docker-test", settings_, engine_);
  ::setenv("EXECMCP_PART_TEST_SECRET", "second", 1);
  auto env = lifecycle.call_env({});
  EXPECT_NE(std::find(env.begin(), env.end(), "EXECMCP_PART_TEST_SECRET=first"), env.end());
  ASSERT_EQ(lifecycle.start(), "");
  env = lifecycle.call_env({});
  EXPECT_NE(std::find(env.begin(), env.end(), "EXECMCP_PART_TEST_SECRET=second"), env.end());
  for (const auto& e : engine_.last_spec.env) EXPECT_FALSE(has(e, "EXECMCP_PART_TEST_SECRET")) << e;
  ::unsetenv("EXECMCP_PART_TEST_SECRET");
  // A variable that is not set is a config error, found when the settings are read.
  EXPECT_THROW(ContainerLifecycle(init_, "docker-test", settings_, engine_), std::invalid_argument);
}

// The preinstall part alone: without egress the install goes on the `network` setting, and with
// preinstall_on_failure: continue a failed build starts the container from the base image and
// tells the next command, once.
TEST_F(ContainerPartTest, APreinstallThatFailsWithContinueTellsTheNextCommandOnce) {
  settings_.preinstall.python = {"tinypkg"};
  const auto failed = ContainerLifecycle(init_, "docker-test", settings_, engine_).start();
  EXPECT_TRUE(has(failed, "not faked")) << failed;  // the fake builds no image
  EXPECT_EQ(engine_.last_install.network, settings_.network);
  EXPECT_EQ(engine_.count("create " + lifecycle_->name()), 0u);

  settings_.preinstall.continue_on_failure = true;
  ContainerLifecycle lifecycle(init_, "docker-test", settings_, engine_);
  ASSERT_EQ(lifecycle.start(), "");
  EXPECT_EQ(engine_.last_spec.image, agent_image(settings_));
  sdk::ExecResult first, second;
  first.notices = {"the command's own"};
  lifecycle.parts().decorate_results(lifecycle.parts().begin_calls(), first);
  ASSERT_EQ(first.notices.size(), 2u);
  EXPECT_TRUE(has(first.notices[0], "without these packages (preinstall_on_failure: continue)"))
      << first.notices[0];
  lifecycle.parts().decorate_results(lifecycle.parts().begin_calls(), second);
  EXPECT_TRUE(second.notices.empty());
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
