// Tests of AgentRegistry: every selected agent built through the plugins, none started until asked,
// all stopped together.
#include "agent/agent_registry.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "test_support.hpp"

namespace execmcp::host {
namespace {

// Each agent's backend appends a line to <dir>/<id>.cleanup per cleanup.
std::shared_ptr<const Config> two_agents(const tests::TempDir& dir) {
  std::string text = "execmcp: 1\nagents:\n";
  for (const char* id : {"alpha", "beta"}) {
    text += std::string("  - id: ") + id + "\n    cwd: " + id + "\n    backend:\n" +
            "      plugin: fixture-echo\n      settings: {cleanup_marker: " + dir.str() + "/" + id +
            ".cleanup}\n";
  }
  return load_config_text(text, (dir.path() / "agents.yaml").string());
}

PluginRegistry fixture_plugins() {
  PluginRegistry plugins;
  plugins.scan({EXECMCP_FIXTURE_PLUGIN_DIR});
  return plugins;
}

TEST(AgentRegistry, BuildsEachSelectedAgentWithoutStartingIt) {
  tests::TempDir dir;
  const auto config = two_agents(dir);
  AgentRegistry agents(*config, {&config->agents[1]}, fixture_plugins(), {});
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(agents.ids(), std::vector<std::string>{"beta"});
  EXPECT_EQ(agents.target(0).id(), "beta");
  EXPECT_EQ(agents.target(0).state(), AgentState::kNotStarted);
  EXPECT_FALSE(agents.target(0).traits().isolated);  // the echo fixture runs nothing in a sandbox
  EXPECT_FALSE(agents.target(0).traits().per_user);
}

TEST(AgentRegistry, AnAgentStartsOnItsFirstCall) {
  tests::TempDir dir;
  const auto config = two_agents(dir);
  AgentRegistry agents(*config, {&config->agents[0], &config->agents[1]}, fixture_plugins(), {});
  const Resolution beta = agents.target(1).resolve("t");
  ASSERT_TRUE(beta.agent);
  const auto outcome = beta.agent->execute({"hi", std::nullopt, "", "t"}, nullptr, nullptr);
  EXPECT_EQ(outcome.result.stdout_data, "echo:hi\n");
  EXPECT_EQ(agents.target(0).state(), AgentState::kNotStarted);
  EXPECT_EQ(agents.target(1).state(), AgentState::kStarted);
}

TEST(AgentRegistry, StartAllStopsStartingWhenToldAndStopAllStopsEveryOnce) {
  tests::TempDir dir;
  const auto config = two_agents(dir);
  auto registry = std::make_unique<AgentRegistry>(
      *config, std::vector<const AgentConfig*>{&config->agents[0], &config->agents[1]},
      fixture_plugins(), AgentBuildOptions{});
  AgentRegistry& agents = *registry;
  int asked = 0;
  agents.start_all([&asked] { return ++asked < 2; });  // a signal after the first start
  EXPECT_TRUE(agents.configured(0).started());
  EXPECT_FALSE(agents.configured(1).started());
  agents.start_all([] { return true; });
  EXPECT_TRUE(agents.configured(1).started());
  agents.stop_all();
  EXPECT_FALSE(agents.configured(0).started());
  EXPECT_FALSE(agents.configured(1).started());
  EXPECT_NE(agents.target(0).state(), AgentState::kStarted);
  registry.reset();  // stops again: nothing more to clean up
  EXPECT_EQ(tests::read_text(dir.path() / "alpha.cleanup"), "cleanup\n");
  EXPECT_EQ(tests::read_text(dir.path() / "beta.cleanup"), "cleanup\n");
}

}  // namespace
}  // namespace execmcp::host
