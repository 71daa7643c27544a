// Tests of the local-backend refusal.
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

TEST(LocalAgentsRefusal, LocalAgentsAreRefusedUnlessAllowed) {
  Config config = two_agents("local");
  const std::string refusal = local_agents_refusal(config, {});
  EXPECT_THAT(refusal, HasSubstr("/cfg/shared.yaml: agent(s) 'agent_b' use the local backend"));
  EXPECT_THAT(refusal, HasSubstr("server.allow_local_agents: true"));
  EXPECT_EQ(local_agents_refusal(config, {"agent_a"}), "") << "agent_b is not served";
  EXPECT_NE(local_agents_refusal(config, {"agent_b"}), "");

  config.server = ServerConfig{};
  EXPECT_NE(local_agents_refusal(config, {}), "") << "the default is to refuse";
  config.server->allow_local_agents = true;
  EXPECT_EQ(local_agents_refusal(config, {}), "");

  EXPECT_EQ(local_agents_refusal(two_agents("docker-api"), {}), "");
}

}  // namespace
}  // namespace execmcp::host::auth
