// Tests of the Origin rule (loopback and configured origins only) and the local-backend refusal.
#include "auth/http_policy.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace execmcp::host::auth {
namespace {

using ::testing::HasSubstr;

TEST(OriginAllowed, LoopbackAndConfiguredOriginsOnly) {
  ServerConfig server;
  server.allowed_origins = {"https://app.example.com"};
  for (const char* origin :
       {"", "http://localhost", "http://localhost:6274", "https://LOCALHOST:8443",
        "http://127.0.0.1:3000", "http://127.1.2.3", "http://[::1]:8000", "https://app.example.com",
        "HTTPS://App.Example.com"}) {
    EXPECT_TRUE(origin_allowed(origin, &server)) << origin;
  }
  for (const char* origin :
       {"null", "https://evil.example.com", "http://localhost.evil.example.com",
        "http://127.0.0.1.evil.example.com", "http://localhost:80/path", "file://",
        "https://app.example.com:8443", "http://app.example.com", "http://127.0.0.256",
        "http://[::2]"}) {
    EXPECT_FALSE(origin_allowed(origin, &server)) << origin;
  }
  EXPECT_TRUE(origin_allowed("http://localhost:1", nullptr));
  EXPECT_FALSE(origin_allowed("https://app.example.com", nullptr));
}

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
