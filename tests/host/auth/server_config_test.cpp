// Tests of the config's `server:` section: values, token sources, and each error with its line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.hpp"
#include "test_support.hpp"

namespace execmcp::host {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Two agents, then whatever `server:` text a test gives (starting at line 6).
std::string with_server(const std::string& server) {
  return "execmcp: 1\n"
         "agents:\n"
         "  - {id: agent_a, cwd: /tmp/a}\n"
         "  - {id: agent_b, cwd: /tmp/b}\n"
         "server:\n" +
         server;
}

std::string load_error(const std::string& text, const std::string& path = "/cfg/x.yaml") {
  try {
    load_config_text(text, path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string hex(const TokenDigest& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char byte : digest) {
    out.push_back(kDigits[byte >> 4]);
    out.push_back(kDigits[byte & 0xF]);
  }
  return out;
}

TEST(ServerConfig, Sha256OfAKnownString) {
  // printf test | sha256sum
  EXPECT_EQ(hex(sha256_digest("test")),
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
}

TEST(ServerConfig, AbsentSectionLeavesNoServer) {
  const auto config =
      load_config_text("execmcp: 1\nagents:\n  - {id: agent_a, cwd: /tmp/a}\n", "/cfg/x.yaml");
  EXPECT_FALSE(config->server.has_value());
}

TEST(ServerConfig, ReadsEveryKey) {
  tests::TempDir dir;
  const std::string digest = hex(sha256_digest("a-long-enough-secret-token"));
  const auto config = load_config_text(
      with_server(R"(  allowed_origins: [https://App.Example.com, http://localhost:3000]
  allow_local_agents: true
  public_url: https://mcp.example.com/
  tokens:
    - name: ci-bot
      sha256: )" + digest +
                  R"(
      agents: [agent_a]
    - name: admin
      sha256: )" + hex(sha256_digest("another-long-secret-token")) +
                  R"(
      agents: ["*"]
  oauth:
    issuer: https://auth.example.com
    keys: keys/jwks.json
    agents_claim: allowed_agents
)"),
      (dir.path() / "x.yaml").string());
  ASSERT_TRUE(config->server.has_value());
  const auto& server = *config->server;
  EXPECT_EQ(server.allowed_origins,
            (std::vector<std::string>{"https://app.example.com", "http://localhost:3000"}));
  EXPECT_TRUE(server.allow_local_agents);
  EXPECT_EQ(server.public_url, "https://mcp.example.com");
  ASSERT_EQ(server.tokens.size(), 2u);
  EXPECT_EQ(server.tokens[0].name, "ci-bot");
  EXPECT_EQ(hex(server.tokens[0].sha256), digest);
  EXPECT_EQ(server.tokens[0].agents, std::vector<std::string>{"agent_a"});
  EXPECT_EQ(server.tokens[1].agents, std::vector<std::string>{"*"});
  ASSERT_TRUE(server.oauth.has_value());
  EXPECT_EQ(server.oauth->issuer, "https://auth.example.com");
  EXPECT_EQ(server.oauth->audience, "https://mcp.example.com") << "defaults to public_url";
  EXPECT_EQ(server.oauth->keys_file, dir.str() + "/keys/jwks.json");
  EXPECT_EQ(server.oauth->agents_claim, "allowed_agents");
  EXPECT_EQ(server.oauth->authorization_servers,
            std::vector<std::string>{"https://auth.example.com"})
      << "defaults to the issuer";
}

TEST(ServerConfig, ReadsAllowedHostsLowerCase) {
  const auto config = load_config_text(
      with_server("  allowed_hosts: [MCP.example.com, 'other.example:8443', '[2001:db8::1]']\n"),
      "/cfg/x.yaml");
  ASSERT_TRUE(config->server.has_value());
  EXPECT_EQ(config->server->allowed_hosts,
            (std::vector<std::string>{"mcp.example.com", "other.example:8443", "[2001:db8::1]"}));
}

TEST(ServerConfig, DefaultsAreClosed) {
  const auto config =
      load_config_text(with_server("  public_url: https://x.example\n"), "/cfg/x.yaml");
  ASSERT_TRUE(config->server.has_value());
  EXPECT_FALSE(config->server->allow_local_agents);
  EXPECT_TRUE(config->server->allowed_origins.empty());
  EXPECT_TRUE(config->server->tokens.empty());
  EXPECT_FALSE(config->server->oauth.has_value());
}

TEST(ServerConfig, EnvTokenIsKeptOnlyAsItsDigest) {
  tests::ScopedEnv env("EXECMCP_TEST_TOKEN_CI", "env-secret-0123456789abcdef\n");
  const auto config = load_config_text(with_server(R"(  tokens:
    - name: ci
      env: EXECMCP_TEST_TOKEN_CI
      agents: [agent_b]
)"),
                                       "/cfg/x.yaml");
  ASSERT_EQ(config->server->tokens.size(), 1u);
  EXPECT_EQ(config->server->tokens[0].sha256, sha256_digest("env-secret-0123456789abcdef"))
      << "a trailing newline is not part of the token";
  EXPECT_EQ(config->server->secret_env, std::vector<std::string>{"EXECMCP_TEST_TOKEN_CI"});
}

TEST(ServerConfig, FileTokenIsKeptOnlyAsItsDigest) {
  tests::TempDir dir;
  tests::write_text(dir.path() / "secrets" / "ci", "file-secret-0123456789abcdef\r\n");
  const auto config = load_config_text(with_server(R"(  tokens:
    - name: ci
      file: secrets/ci
      agents: [agent_a, agent_b]
)"),
                                       (dir.path() / "x.yaml").string());
  ASSERT_EQ(config->server->tokens.size(), 1u);
  EXPECT_EQ(config->server->tokens[0].sha256, sha256_digest("file-secret-0123456789abcdef"));
  for (const auto& warning : config->warnings) EXPECT_THAT(warning, Not(HasSubstr("shorter")));
}

TEST(ServerConfig, ShortSecretIsAWarningThatDoesNotShowIt) {
  tests::ScopedEnv env("EXECMCP_TEST_TOKEN_SHORT", "hunter2");
  const auto config = load_config_text(
      with_server(
          "  tokens:\n    - {name: weak, env: EXECMCP_TEST_TOKEN_SHORT, agents: [agent_a]}\n"),
      "/cfg/x.yaml");
  std::string warnings;
  for (const auto& warning : config->warnings) warnings += warning + "\n";
  EXPECT_THAT(warnings, HasSubstr("token 'weak' (environment variable EXECMCP_TEST_TOKEN_SHORT) is "
                                  "shorter than 16 characters"));
  EXPECT_THAT(warnings, Not(HasSubstr("hunter2")));
}

TEST(ServerConfig, MissingEnvVariableNamesTheVariable) {
  tests::ScopedEnv env("EXECMCP_TEST_TOKEN_UNSET", std::nullopt);
  EXPECT_THAT(load_error(with_server(R"(  tokens:
    - name: ci
      env: EXECMCP_TEST_TOKEN_UNSET
      agents: [agent_a]
)")),
              HasSubstr("/cfg/x.yaml:8: server.tokens[0].env: environment variable "
                        "EXECMCP_TEST_TOKEN_UNSET is not set"));
}

TEST(ServerConfig, UnreadableFileNamesTheFileNotItsContent) {
  tests::TempDir dir;
  EXPECT_THAT(load_error(with_server("  tokens:\n    - name: ci\n      file: " + dir.str() +
                                     "/nope\n      agents: [agent_a]\n")),
              HasSubstr("/cfg/x.yaml:8: server.tokens[0].file: cannot read token file " +
                        dir.str() + "/nope"));
  tests::write_text(dir.path() / "empty", "\n");
  EXPECT_THAT(load_error(with_server("  tokens:\n    - name: ci\n      file: " + dir.str() +
                                     "/empty\n      agents: [agent_a]\n")),
              HasSubstr(":8: server.tokens[0].file: token file " + dir.str() + "/empty is empty"));
}

TEST(ServerConfig, EachErrorHasItsLine) {
  struct Case {
    std::string server;
    std::string expected;
  };
  const std::string digest = hex(sha256_digest("x"));
  tests::ScopedEnv env("EXECMCP_TEST_TOKEN_SET", "set-secret-0123456789abcdef");
  const std::vector<Case> cases = {
      {"  colour: blue\n", ":6: server.colour: unknown key 'colour'"},
      {"  - a\n", ":6: server: expected a map, found a list"},
      {"  allowed_origins: [https://a.example/path]\n",
       ":6: server.allowed_origins[0]: expected an origin like https://app.example.com"},
      {"  allowed_origins: https://a.example\n",
       ":6: server.allowed_origins: expected a list, found 'https://a.example'"},
      {"  allowed_hosts: [https://mcp.example.com]\n",
       ":6: server.allowed_hosts[0]: expected a host name like mcp.example.com or "
       "mcp.example.com:8443"},
      {"  allow_local_agents: sure\n",
       ":6: server.allow_local_agents: expected true or false, found 'sure'"},
      {"  public_url: mcp.example.com\n",
       ":6: server.public_url: expected an http:// or https:// URL"},
      {"  tokens:\n    - {name: a, agents: [agent_a]}\n",
       ":7: server.tokens[0]: the token is missing: give one of sha256:, env: or file:"},
      {"  tokens:\n    - name: a\n      sha256: " + digest +
           "\n      env: EXECMCP_TEST_TOKEN_SET\n      agents: [agent_a]\n",
       ":7: server.tokens[0]: give only one of sha256:, env: or file:"},
      {"  tokens:\n    - name: a\n      sha256: not-a-digest\n      agents: [agent_a]\n",
       ":8: server.tokens[0].sha256: expected 64 hex digits"},
      {"  tokens:\n    - name: a\n      sha256: " + digest + "\n      agents: [agent_c]\n",
       ":9: server.tokens[0].agents[0]: no agent 'agent_c' in this config (agents: agent_a, "
       "agent_b)"},
      {"  tokens:\n    - name: a\n      sha256: " + digest + "\n      agents: [agent_a, '*']\n",
       ":9: server.tokens[0].agents[1]: \"*\" (every agent) must stand alone"},
      {"  tokens:\n    - name: a\n      sha256: " + digest + "\n      agents: []\n",
       ":9: server.tokens[0].agents: the list is empty"},
      {"  tokens:\n    - name: a\n      sha256: " + digest + "\n",
       ":7: server.tokens[0].agents: required key is missing"},
      {"  tokens:\n    - {sha256: " + digest + ", agents: [agent_a]}\n",
       ":7: server.tokens[0].name: required key is missing"},
      {"  tokens:\n    - {name: 'a b', sha256: " + digest + ", agents: [agent_a]}\n",
       ":7: server.tokens[0].name: token name 'a b' must start with a letter or digit"},
      // No ':' in a token name: it could not be told from a JWT's principal (jwt:<sub>).
      {"  tokens:\n    - {name: 'jwt:alice', sha256: " + digest + ", agents: [agent_a]}\n",
       ":7: server.tokens[0].name: token name 'jwt:alice' must start with a letter or digit"},
      {"  tokens:\n    - {name: a, sha256: " + digest + ", agents: [agent_a]}\n" +
           "    - {name: a, env: EXECMCP_TEST_TOKEN_SET, agents: [agent_b]}\n",
       ":8: server.tokens[1].name: duplicate token name 'a'"},
      {"  tokens:\n    - {name: a, sha256: " + digest + ", agents: [agent_a]}\n" +
           "    - {name: b, sha256: " + digest + ", agents: [agent_b]}\n",
       ":8: server.tokens: tokens 'a' and 'b' are the same secret"},
      {"  tokens:\n    - {name: a, sha256: " + digest + ", agents: [agent_a], scope: x}\n",
       ":7: server.tokens[0].scope: unknown key 'scope'"},
      {"  public_url: https://mcp.example.com\n  oauth:\n    keys: /k.json\n",
       ":8: server.oauth.issuer: required key is missing"},
      {"  public_url: https://mcp.example.com\n  oauth:\n    issuer: https://a.example\n",
       ":8: server.oauth.keys: required key is missing"},
      {"  oauth:\n    issuer: https://a.example\n    audience: x\n    keys: /k.json\n",
       ":7: server.oauth: server.oauth needs server.public_url"},
      {"  oauth:\n    issuer: https://a.example\n    keys: /k.json\n",
       ":7: server.oauth.audience: required key is missing (or set server.public_url"},
      {"  public_url: https://mcp.example.com\n  oauth:\n    issuer: https://a.example\n"
       "    keys: /k.json\n    authorization_servers: [ftp://x]\n",
       ":10: server.oauth.authorization_servers[0]: expected an http:// or https:// URL"},
      {"  public_url: https://mcp.example.com\n  oauth:\n    issuer: https://a.example\n"
       "    keys: /k.json\n    jwks_uri: https://a.example/jwks\n",
       ":10: server.oauth.jwks_uri: unknown key 'jwks_uri'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.server);
    EXPECT_THAT(load_error(with_server(c.server)), HasSubstr("/cfg/x.yaml" + c.expected));
  }
}

TEST(ServerConfig, AMistypedDigestIsNotEchoed) {
  // Someone pasting the token itself where its hash belongs must not see it in an error or log.
  const std::string error = load_error(
      with_server("  tokens:\n    - {name: a, sha256: my-real-secret-token, agents: [agent_a]}\n"));
  EXPECT_THAT(error, HasSubstr("expected 64 hex digits"));
  EXPECT_THAT(error, Not(HasSubstr("my-real-secret-token")));
}

TEST(ServerConfig, MassGenFilesHaveNoServerSection) {
  const auto config =
      load_config_text("agent:\n  id: a\n  backend:\n    cwd: /tmp/a\n", "/cfg/massgen.yaml");
  EXPECT_FALSE(config->server.has_value());
}

}  // namespace
}  // namespace execmcp::host
