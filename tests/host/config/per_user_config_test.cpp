// Tests of a per-user agent's `per_user:` block: values, defaults, and the combinations refused
// with their lines.
#include <chrono>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.hpp"
#include "test_support.hpp"

namespace execmcp::host {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::string load_error(const std::string& text) {
  try {
    load_config_text(text, "/cfg/x.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

constexpr const char* kHead = R"(execmcp: 1
agents:
  - id: py
)";

TEST(PerUserConfig, ReadsEveryKey) {
  const auto config = load_config_text(std::string(kHead) + R"(    per_user:
      workspace_root: users
      max_users: 200
      idle_stop: 600
      idle_remove: 86400
      warm: 2
      max_calls_per_user: 8
    backend: {plugin: docker-api, settings: {memory: 1g}}
    filters: [{plugin: sanitize}]
)",
                                       "/cfg/x.yaml");
  const AgentConfig& agent = config->agents.at(0);
  ASSERT_TRUE(agent.per_user);
  EXPECT_EQ(agent.per_user->workspace_root, "/cfg/users");
  EXPECT_EQ(agent.per_user->max_users, 200u);
  EXPECT_EQ(agent.per_user->idle_stop, 600s);
  EXPECT_EQ(agent.per_user->idle_remove, 86400s);
  EXPECT_EQ(agent.per_user->warm, 2u);
  EXPECT_EQ(agent.per_user->max_calls_per_user, 8u);
  EXPECT_EQ(agent.per_user->location.line, 5);
  EXPECT_TRUE(agent.cwd.empty());
  // No tools directory under workspace_root, where a user named "tools" would be.
  EXPECT_TRUE(agent.tools_dir.empty());
}

TEST(PerUserConfig, DefaultsAreBounded) {
  const auto config =
      load_config_text(std::string(kHead) + R"(    per_user: {workspace_root: /srv/u}
    backend: {plugin: docker-cli}
)",
                       "/cfg/x.yaml");
  const PerUserConfig& per_user = *config->agents.at(0).per_user;
  EXPECT_EQ(per_user.max_users, 100u);
  EXPECT_EQ(per_user.idle_stop, 600s);
  EXPECT_EQ(per_user.idle_remove, 86400s);
  EXPECT_EQ(per_user.warm, 0u);
  EXPECT_EQ(per_user.max_calls_per_user, 0u);  // the server's default share (McpService)
}

TEST(PerUserConfig, RefusesWhatCannotWorkWithItsLine) {
  EXPECT_THAT(load_error(std::string(kHead) + R"(    cwd: /w
    per_user: {workspace_root: /srv/u}
    backend: {plugin: docker-api}
)"),
              HasSubstr("x.yaml:4: agents[0].cwd: a per-user agent has no cwd"));
  EXPECT_THAT(load_error(std::string(kHead) + R"(    per_user: {max_users: 3}
    backend: {plugin: docker-api}
)"),
              HasSubstr("agents[0].per_user.workspace_root: required key is missing"));
  EXPECT_THAT(load_error(std::string(kHead) +
                         R"(    per_user: {workspace_root: /srv/u, max_users: 2, warm: 3}
    backend: {plugin: docker-api}
)"),
              HasSubstr("agents[0].per_user.warm: warm (3) is larger than max_users (2)"));
  EXPECT_THAT(
      load_error(std::string(kHead) + R"(    per_user: {workspace_root: /srv/u, max_users: 0}
    backend: {plugin: docker-api}
)"),
      HasSubstr("agents[0].per_user.max_users: expected an integer from 1"));
  EXPECT_THAT(load_error(std::string(kHead) +
                         R"(    per_user: {workspace_root: /srv/u, max_calls_per_user: 0}
    backend: {plugin: docker-api}
)"),
              HasSubstr("agents[0].per_user.max_calls_per_user: expected an integer from 1 to "
                        "4096, found '0'"));
  EXPECT_THAT(
      load_error(std::string(kHead) + R"(    per_user: {workspace_root: /srv/u, idle_stop: 0}
    backend: {plugin: docker-api}
)"),
      HasSubstr("agents[0].per_user.idle_stop: expected a number of seconds > 0"));
  EXPECT_THAT(load_error(std::string(kHead) + R"(    per_user: {workspace_root: /, warm: 1}
    backend: {plugin: docker-api}
)"),
              HasSubstr("'/' cannot hold the users' workspaces"));
  EXPECT_THAT(load_error(std::string(kHead) + R"(    per_user: {workspace_root: /srv/u, idle: 3}
    backend: {plugin: docker-api}
)"),
              HasSubstr("agents[0].per_user.idle"));
}

TEST(PerUserConfig, ATokenMayNotTakeTheNameOfAJwtUsersKey) {
  EXPECT_THAT(load_error(std::string(kHead) + R"(    per_user: {workspace_root: /srv/u}
    backend: {plugin: docker-api}
server:
  tokens:
    - name: jwt-0123456789abcdef0123456789abcdef
      sha256: 0000000000000000000000000000000000000000000000000000000000000000
      agents: [py]
)"),
              HasSubstr("is reserved: 'jwt-' and 32 hex digits is the user key of a JWT"));
}

}  // namespace
}  // namespace execmcp::host
