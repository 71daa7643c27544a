// What an agent id resolves to, tested alone: the ordinary agent's target, the per-user target,
// and the forwarding combinator every decorator of an Agent is written with.
#include "agent/agent_target.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "agent/agent_decorator.hpp"
#include "agent/gated_backend.hpp"
#include "agent/per_user_target.hpp"
#include "agent/single_agent_target.hpp"
#include "agent/user_sandboxes.hpp"
#include "mcp/fake_agent.hpp"
#include "test_support.hpp"

namespace execmcp::host {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::make_gated_agent;
using testing::StartGate;

TEST(SingleAgentTarget, EveryUserResolvesToTheOneAgentWhichStartsOnItsFirstCall) {
  auto gate = std::make_shared<StartGate>();
  gate->open();
  SingleAgentTarget target(make_gated_agent("solo", gate), /*isolated=*/true);
  EXPECT_EQ(target.id(), "solo");
  EXPECT_TRUE(target.traits().isolated);
  EXPECT_FALSE(target.traits().per_user);
  const Resolution alice = target.resolve("alice");
  const Resolution bob = target.resolve("bob");
  ASSERT_TRUE(alice.agent && bob.agent);
  EXPECT_EQ(alice.agent.get(), bob.agent.get());
  EXPECT_EQ(target.state(), AgentState::kNotStarted);
  EXPECT_EQ(target.report().backend, AgentState::kNotStarted);
  EXPECT_EQ(target.report().containers_owned, 0u);
  EXPECT_FALSE(target.report().sandboxes);

  const auto outcome = alice.agent->execute({"hi", std::nullopt, "", "alice"}, nullptr, nullptr);
  EXPECT_TRUE(outcome.result.error.empty()) << outcome.result.error;
  EXPECT_EQ(gate->starts, 1);
  EXPECT_EQ(target.state(), AgentState::kStarted);
  EXPECT_EQ(target.report().containers_owned, 1u);  // isolated and started: it owns one
}

TEST(SingleAgentTarget, ABackendThatIsolatesNothingOwnsNoContainerWhenStarted) {
  auto gate = std::make_shared<StartGate>();
  gate->open();
  SingleAgentTarget target(make_gated_agent("local", gate), /*isolated=*/false);
  target.start();
  EXPECT_EQ(target.state(), AgentState::kStarted);
  EXPECT_EQ(target.report().containers_owned, 0u);
}

TEST(PerUserTarget, EachUserResolvesToTheirOwnSandboxAndTheTargetIsReadyAsAWhole) {
  tests::TempDir dir;
  PerUserConfig config;
  config.workspace_root = (dir.path() / "users").string();
  std::filesystem::create_directories(config.workspace_root);
  config.max_users = 1;
  auto gate = std::make_shared<StartGate>();
  int built = 0;
  SandboxBuilder build = [&](const std::string&, const std::string& name) {
    ++built;
    return make_gated_agent("py-" + name, gate);
  };
  sdk::BackendTraits traits;
  traits.isolated = true;
  auto shape = build("", "template");
  auto sandboxes =
      std::make_unique<UserSandboxes>("py", config, std::move(build), AgentCapabilities{}, traits);
  PerUserTarget target(std::move(shape), std::move(sandboxes));
  EXPECT_EQ(target.id(), "py");
  EXPECT_TRUE(target.traits().isolated);
  EXPECT_TRUE(target.traits().per_user);
  EXPECT_EQ(target.state(), AgentState::kStarted);

  const Resolution alice = target.resolve("alice");
  ASSERT_TRUE(alice.agent);
  EXPECT_EQ(target.resolve("alice").agent.get(), alice.agent.get());
  EXPECT_EQ(alice.agent->cwd(), kUserSandboxCwd);
  EXPECT_EQ(built, 1);  // resolving made a record, no sandbox: that is the first call's
  EXPECT_EQ(gate->starts, 0);

  const Resolution bob = target.resolve("bob");  // past max_users
  EXPECT_FALSE(bob.agent);
  EXPECT_TRUE(bob.at_limit);
  EXPECT_THAT(bob.refusal, HasSubstr("per_user.max_users"));
  const Resolution odd = target.resolve("../x");  // cannot name a directory: no limit
  EXPECT_FALSE(odd.agent);
  EXPECT_FALSE(odd.at_limit);

  const TargetReport report = target.report();
  EXPECT_FALSE(report.backend);  // each user has their own
  ASSERT_TRUE(report.sandboxes && report.sandbox_events);
  EXPECT_EQ(report.sandbox_events->refusals, 1u);
  EXPECT_EQ(report.containers_owned, 0u);
  target.stop();
}

// A decorator that writes only its way in: a notice, or a refusal, and counts what it saw.
class NoticingDecorator final : public AgentDecorator {
 public:
  explicit NoticingDecorator(Agent& inner) : inner_(inner) {}
  [[nodiscard]] const std::string& id() const override { return inner_.id(); }
  [[nodiscard]] const std::string& cwd() const override { return inner_.cwd(); }
  [[nodiscard]] sdk::BackendTraits traits() const override { return inner_.traits(); }

  std::string refuse;  // non-empty: every call that may start is refused with it
  int entered = 0;
  int left = 0;
  std::vector<std::string> kept;

 protected:
  Pass enter(bool may_start) override {
    ++entered;
    Pass pass(this);
    if (may_start && !refuse.empty()) {
      pass.error = refuse;
      return pass;
    }
    if (may_start) pass.notices.push_back("made ready");
    pass.agent = &inner_;
    return pass;
  }
  void leave() noexcept override { ++left; }
  void keep_notices(std::vector<std::string>& notices) override {
    for (auto& notice : notices) kept.push_back(std::move(notice));
    notices.clear();
  }

 private:
  Agent& inner_;
};

TEST(AgentDecorator, EveryCallIsForwardedThroughTheDecoratorsOneWayIn) {
  testing::FakeAgent inner("inner");
  NoticingDecorator decorator(inner);
  const auto outcome = decorator.execute({"echo hi", std::nullopt, "", "t"}, nullptr, nullptr);
  EXPECT_EQ(outcome.result.stdout_data, "hi\n");
  ASSERT_FALSE(outcome.result.notices.empty());
  EXPECT_EQ(outcome.result.notices.front(), "made ready");  // first in the result
  EXPECT_EQ(inner.executions(), 1);

  sdk::FileWriteRequest write;
  write.path = "/ws/a.txt";
  write.data = "x";
  EXPECT_TRUE(decorator.write_file(write, "t").error.empty());
  sdk::FileReadRequest read;
  read.path = "/ws/a.txt";
  EXPECT_EQ(decorator.read_file(read, "t").data, "x");
  // A file's result carries no notices: the decorator decides what becomes of them.
  EXPECT_THAT(decorator.kept, ElementsAre("made ready", "made ready"));
  EXPECT_EQ(decorator.run_internal("echo in", nullptr, "t").stdout_data, "in\n");
  EXPECT_EQ(decorator.entered, 4);
  EXPECT_EQ(decorator.left, 4);  // every pass ended once its call returned
  // No background shells offered: none forwarded.
  EXPECT_EQ(decorator.background_shells(), nullptr);
}

TEST(AgentDecorator, ARefusedWayInIsEachCallsErrorAndNothingReachesTheAgent) {
  testing::FakeAgent inner("inner");
  NoticingDecorator decorator(inner);
  decorator.refuse = "the sandbox cannot be made";
  EXPECT_EQ(decorator.execute({"echo hi", std::nullopt, "", "t"}, nullptr, nullptr).result.error,
            "the sandbox cannot be made");
  EXPECT_EQ(decorator.run_internal("echo in", nullptr, "t").error, "the sandbox cannot be made");
  sdk::FileReadRequest read;
  read.path = "/ws/a.txt";
  EXPECT_EQ(decorator.read_file(read, "t").error, "the sandbox cannot be made");
  EXPECT_EQ(decorator.write_file({}, "t").error, "the sandbox cannot be made");
  EXPECT_EQ(inner.executions(), 0);
  EXPECT_EQ(decorator.left, decorator.entered);
}

}  // namespace
}  // namespace execmcp::host
