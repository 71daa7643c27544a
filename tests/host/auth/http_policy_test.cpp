// Tests of the refusal of agents whose backend runs commands in no sandbox.
#include "auth/http_policy.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace execmcp::host::auth {
namespace {

using ::testing::HasSubstr;

Config two_agents(const std::string& backend_b) {
  Config config;
  config.source_file = "/cfg/shared.yaml";
  AgentConfig a;
  a.id = "agent_a";
  a.backend.plugin = "docker-api";
  AgentConfig b;
  b.id = "agent_b";
  b.backend.plugin = backend_b;
  config.agents = {a, b};
  return config;
}

TEST(UnisolatedAgentsRefusal, AgentsTheirBackendDoesNotIsolateAreRefusedUnlessAllowed) {
  Config config = two_agents("local");
  const std::string refusal = unisolated_agents_refusal(config, {"agent_b"});
  EXPECT_THAT(refusal, HasSubstr("/cfg/shared.yaml: agent(s) 'agent_b' (backend 'local') run "
                                 "commands in no sandbox"));
  EXPECT_THAT(refusal, HasSubstr("server.allow_local_agents: true"));
  EXPECT_EQ(unisolated_agents_refusal(config, {}), "") << "every served backend isolates";

  config.server = ServerConfig{};
  EXPECT_NE(unisolated_agents_refusal(config, {"agent_b"}), "") << "the default is to refuse";
  config.server->allow_local_agents = true;
  EXPECT_EQ(unisolated_agents_refusal(config, {"agent_b"}), "");

  // Issue 28, finding 6: the rule compared the plugin's name with "local", so a third-party
  // backend that isolates nothing passed. The backend's own word decides now, whatever its name.
  EXPECT_THAT(unisolated_agents_refusal(two_agents("acme-shell"), {"agent_b"}),
              HasSubstr("'agent_b' (backend 'acme-shell') run commands in no sandbox"));
  auto disabled = two_agents("acme-shell");
  disabled.agents[1].mcp_enabled = false;  // never served: nothing to refuse
  EXPECT_EQ(unisolated_agents_refusal(disabled, {"agent_b"}), "");
}

}  // namespace
}  // namespace execmcp::host::auth
