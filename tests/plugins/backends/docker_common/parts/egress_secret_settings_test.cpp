// Tests of the `egress.secrets` and `egress.upstream_ca` settings: each field's rules with the JSON
// pointer of every fault, hosts checked against the allow list, and the conflicts with
// `credentials` and `env` (a secret's name or source never reaches a command another way).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "docker_common/parts/credentials.hpp"
#include "docker_common/parts/egress_policy.hpp"
#include "docker_common/settings/docker_settings.hpp"

namespace execmcp::plugins::docker_common {
namespace {

std::vector<sdk::SettingsProblem> problems_of(const nlohmann::json& egress) {
  std::vector<sdk::SettingsProblem> problems;
  parse_egress(egress, problems);
  return problems;
}

// `egress` with this allow list, ports and secrets.
nlohmann::json egress_with(const nlohmann::json& secrets,
                           const nlohmann::json& allow = {"api.test", "git.test", "*.wild.test"}) {
  return {{"allow", allow}, {"secrets", secrets}};
}

bool mentions(const sdk::SettingsProblem& p, const std::string& part) {
  return p.message.find(part) != std::string::npos;
}

TEST(EgressSecretSettings, AFullSecretIsReadNormalised) {
  std::vector<sdk::SettingsProblem> problems;
  const auto policy = parse_egress(
      {{"allow", {"api.test", "Git.Test"}},
       {"ports", {80, 443}},
       {"upstream_ca", "/etc/execmcp/roots.pem"},
       {"secrets",
        {{{"name", "GITHUB_TOKEN"},
          {"from", "env:GH_TOKEN"},
          {"hosts", {"API.test", "git.test", "api.test"}},
          {"header", "Authorization"},
          {"methods", {"GET", "POST"}},
          {"paths", {"/repos/", "/user"}},
          {"plain_http", true}},
         {{"name", "PIP_TOKEN"}, {"from", "file:/run/secrets/pip"}, {"hosts", {"api.test"}}}}}},
      problems);
  ASSERT_TRUE(problems.empty()) << problems[0].pointer << ": " << problems[0].message;
  EXPECT_EQ(policy.upstream_ca, "/etc/execmcp/roots.pem");
  ASSERT_EQ(policy.secrets.size(), 2u);
  const auto& gh = policy.secrets[0];
  EXPECT_EQ(gh.name, "GITHUB_TOKEN");
  EXPECT_EQ(gh.from.kind, EgressSecretSource::Kind::kEnv);
  EXPECT_EQ(gh.from.text, "GH_TOKEN");
  EXPECT_EQ(gh.from.describe(), "env:GH_TOKEN");
  EXPECT_EQ(gh.hosts, (std::vector<std::string>{"api.test", "git.test"}));  // lower, once
  EXPECT_EQ(gh.header, "Authorization");
  EXPECT_EQ(gh.methods, (std::vector<std::string>{"GET", "POST"}));
  EXPECT_EQ(gh.paths, (std::vector<std::string>{"/repos/", "/user"}));
  EXPECT_TRUE(gh.plain_http);
  const auto& pip = policy.secrets[1];
  EXPECT_EQ(pip.from.kind, EgressSecretSource::Kind::kFile);
  EXPECT_EQ(pip.from.describe(), "file:/run/secrets/pip");
  EXPECT_EQ(pip.header, "");
  EXPECT_TRUE(pip.methods.empty());
  EXPECT_TRUE(pip.paths.empty());
  EXPECT_FALSE(pip.plain_http);
}

TEST(EgressSecretSettings, NoSecretsIsTheDefault) {
  std::vector<sdk::SettingsProblem> problems;
  const auto policy = parse_egress({{"allow", {"a.test"}}}, problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_TRUE(policy.secrets.empty());
  EXPECT_EQ(policy.upstream_ca, "");
}

TEST(EgressSecretSettings, NamesAreVariableNamesUniqueAndNotExecmcpsOwn) {
  const auto p = problems_of(egress_with({
      {{"name", "1ABC"}, {"from", "env:A"}, {"hosts", {"api.test"}}},
      {{"name", "OK_1"}, {"from", "env:A"}, {"hosts", {"api.test"}}},
      {{"name", "OK_1"}, {"from", "env:B"}, {"hosts", {"api.test"}}},
      {{"name", "HTTPS_PROXY"}, {"from", "env:C"}, {"hosts", {"api.test"}}},
      {{"name", "SSL_CERT_FILE"}, {"from", "env:C"}, {"hosts", {"api.test"}}},
      {{"name", "LD_PRELOAD"}, {"from", "env:C"}, {"hosts", {"api.test"}}},
      {{"name", 7}, {"from", "env:C"}, {"hosts", {"api.test"}}},
  }));
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0].pointer, "/egress/secrets/0/name");
  EXPECT_TRUE(mentions(p[0], "[A-Za-z_][A-Za-z0-9_]*"));
  EXPECT_EQ(p[1].pointer, "/egress/secrets/2/name");
  EXPECT_TRUE(mentions(p[1], "a second secret named 'OK_1'"));
  EXPECT_EQ(p[2].pointer, "/egress/secrets/3/name");
  EXPECT_TRUE(mentions(p[2], "execmcp or the shell sets"));
  EXPECT_EQ(p[3].pointer, "/egress/secrets/4/name");
  EXPECT_EQ(p[4].pointer, "/egress/secrets/5/name");
  EXPECT_EQ(p[5].pointer, "/egress/secrets/6/name");
}

TEST(EgressSecretSettings, FromIsAnEnvNameOrAnAbsoluteFile) {
  const auto secret = [](const nlohmann::json& from) {
    return nlohmann::json{{"name", "T"}, {"from", from}, {"hosts", {"api.test"}}};
  };
  const auto p =
      problems_of(egress_with({secret("env:GOOD_1"), secret("file:/run/s/t"), secret("env:"),
                               secret("env:A-B"), secret("file:rel"), secret("file:/a/../b"),
                               secret("file:/a/"), secret("vault:x"), secret(3)}));
  // Every secret after the first is a second 'T' too: only the `from` problems are counted here.
  std::vector<std::string> from_pointers;
  for (const auto& problem : p)
    if (problem.pointer.ends_with("/from")) from_pointers.push_back(problem.pointer);
  EXPECT_EQ(from_pointers,
            (std::vector<std::string>{"/egress/secrets/2/from", "/egress/secrets/3/from",
                                      "/egress/secrets/4/from", "/egress/secrets/5/from",
                                      "/egress/secrets/6/from", "/egress/secrets/7/from",
                                      "/egress/secrets/8/from"}));
  for (const auto& problem : p) {
    if (problem.pointer.ends_with("/from")) {
      EXPECT_TRUE(mentions(problem, "env:NAME"));
    }
  }
}

TEST(EgressSecretSettings, HostsAreExactNamesTheAllowListNames) {
  const auto p = problems_of(egress_with(
      {{{"name", "T"},
        {"from", "env:T"},
        {"hosts",
         {"api.test", "other.test", "x.wild.test", "*.wild.test", "10.0.0.1", "bad..name", 5}}}}));
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0].pointer, "/egress/secrets/0/hosts/1");
  EXPECT_TRUE(mentions(p[0], "'other.test' is not in egress.allow"));
  EXPECT_EQ(p[1].pointer, "/egress/secrets/0/hosts/2");
  EXPECT_TRUE(mentions(p[1], "allowed only by '*.wild.test'"));
  EXPECT_EQ(p[2].pointer, "/egress/secrets/0/hosts/3");
  EXPECT_TRUE(mentions(p[2], "never a wildcard"));
  EXPECT_EQ(p[3].pointer, "/egress/secrets/0/hosts/4");
  EXPECT_TRUE(mentions(p[3], "never an address"));
  EXPECT_EQ(p[4].pointer, "/egress/secrets/0/hosts/5");
  EXPECT_EQ(p[5].pointer, "/egress/secrets/0/hosts/6");

  // A host allowed by address only is not named; an empty list names none.
  const auto q = problems_of(egress_with(
      {{{"name", "T"}, {"from", "env:T"}, {"hosts", nlohmann::json::array()}}}, {"api.test"}));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].pointer, "/egress/secrets/0/hosts");
  EXPECT_TRUE(mentions(q[0], "at least one host"));
}

TEST(EgressSecretSettings, AnAllowListWithAProblemIsNotCheckedAgainstTwice) {
  const auto p = problems_of(
      egress_with({{{"name", "T"}, {"from", "env:T"}, {"hosts", {"api.test"}}}}, {"http://x"}));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].pointer, "/egress/allow/0");
}

TEST(EgressSecretSettings, HeaderMethodsAndPaths) {
  const auto p = problems_of(
      egress_with({{{"name", "T"},
                    {"from", "env:T"},
                    {"hosts", {"api.test"}},
                    {"header", "Bad Header"},
                    {"methods", {"GET", "get", "PO ST"}},
                    {"paths", {"/ok", "nope", "/a//b", "/a/../b", "/q?x", "/sp ace", "/a/./b"}}}}));
  std::vector<std::string> pointers;
  for (const auto& problem : p) pointers.push_back(problem.pointer);
  EXPECT_EQ(
      pointers,
      (std::vector<std::string>{
          "/egress/secrets/0/header", "/egress/secrets/0/methods/1", "/egress/secrets/0/methods/2",
          "/egress/secrets/0/paths/1", "/egress/secrets/0/paths/2", "/egress/secrets/0/paths/3",
          "/egress/secrets/0/paths/4", "/egress/secrets/0/paths/5", "/egress/secrets/0/paths/6"}));

  const auto empty = problems_of(egress_with({{{"name", "T"},
                                               {"from", "env:T"},
                                               {"hosts", {"api.test"}},
                                               {"header", ""},
                                               {"methods", nlohmann::json::array()},
                                               {"paths", nlohmann::json::array()}}}));
  ASSERT_EQ(empty.size(), 3u);
  EXPECT_TRUE(mentions(empty[1], "leave 'methods' out"));
  EXPECT_TRUE(mentions(empty[2], "leave 'paths' out"));
}

TEST(EgressSecretSettings, PlainHttpNeedsPort80) {
  nlohmann::json egress = egress_with(
      {{{"name", "T"}, {"from", "env:T"}, {"hosts", {"api.test"}}, {"plain_http", true}}});
  EXPECT_TRUE(problems_of(egress).empty());  // 80 is among the default ports
  egress["ports"] = {443};
  auto p = problems_of(egress);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].pointer, "/egress/secrets/0/plain_http");
  EXPECT_TRUE(mentions(p[0], "port 80 in egress.ports"));
  egress["secrets"][0]["plain_http"] = false;
  EXPECT_TRUE(problems_of(egress).empty());
  egress["secrets"][0]["plain_http"] = "yes";
  p = problems_of(egress);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_TRUE(mentions(p[0], "true or false"));
}

TEST(EgressSecretSettings, UnknownKeysMissingKeysAndShapes) {
  auto p = problems_of(egress_with({{{"name", "T"}, {"hosts", {"api.test"}}, {"value", "x"}}}));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].pointer, "/egress/secrets/0/value");
  EXPECT_TRUE(mentions(p[0], "unknown setting 'value'"));
  EXPECT_EQ(p[1].pointer, "/egress/secrets/0");
  EXPECT_TRUE(mentions(p[1], "needs 'from'"));

  p = problems_of(egress_with({"T"}));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].pointer, "/egress/secrets/0");

  p = problems_of(egress_with({{"name", "T"}}));  // an object, not a list
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].pointer, "/egress/secrets");

  nlohmann::json many = nlohmann::json::array();
  for (int i = 0; i < 65; ++i)
    many.push_back({{"name", "T" + std::to_string(i)}, {"from", "env:T"}, {"hosts", {"api.test"}}});
  p = problems_of(egress_with(many));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_TRUE(mentions(p[0], "at most 64 secrets"));
}

TEST(EgressSecretSettings, UpstreamCaIsAnAbsolutePath) {
  for (const nlohmann::json& bad : {nlohmann::json("roots.pem"), nlohmann::json("/a/../b.pem"),
                                    nlohmann::json(""), nlohmann::json(1)}) {
    const auto p = problems_of({{"allow", {"a.test"}}, {"upstream_ca", bad}});
    ASSERT_EQ(p.size(), 1u) << bad;
    EXPECT_EQ(p[0].pointer, "/egress/upstream_ca");
  }
}

// The whole settings, as the backends read them.
std::string settings_with(const std::string& credentials, const std::string& env = "{}") {
  return R"({"network": "egress", "env": )" + env + R"(, "credentials": )" + credentials +
         R"(, "egress": {"allow": ["api.test"], "secrets": [
             {"name": "GH", "from": "env:GITHUB_TOKEN", "hosts": ["api.test"]},
             {"name": "PIP", "from": "file:/run/pip", "hosts": ["api.test"]}]}})";
}

std::string setting_error(const std::string& json) {
  try {
    parse_docker_settings(json);
  } catch (const SettingError& e) {
    return e.key() + ": " + e.message();
  }
  return "";
}

TEST(EgressSecretSettings, CredentialsNeverGiveASecretsNameOrSource) {
  EXPECT_EQ(setting_error(settings_with("{}")), "");
  const auto source = setting_error(settings_with(R"({"env_vars": ["OTHER", "GITHUB_TOKEN"]})"));
  EXPECT_TRUE(
      source.starts_with("credentials.env_vars[1]: 'GITHUB_TOKEN' is where egress secret "
                         "'GH' is read from"))
      << source;
  const auto name = setting_error(settings_with(R"({"env_vars": ["PIP"]})"));
  EXPECT_TRUE(
      name.starts_with("credentials.env_vars[0]: 'PIP' is also the name of egress secret "
                       "'PIP'"))
      << name;
  const auto from_file =
      setting_error(settings_with(R"({"env_file": "/x.env", "env_vars_from_file": ["GH"]})"));
  EXPECT_TRUE(from_file.starts_with("credentials.env_vars_from_file[0]:")) << from_file;
  const auto env = setting_error(settings_with("{}", R"({"GH": "x"})"));
  EXPECT_TRUE(env.starts_with("env.GH: 'GH' is also the name")) << env;

  // pass_all_env and a whole env_file leave them out instead.
  const auto s = parse_docker_settings(settings_with(R"({"pass_all_env": true})"));
  EXPECT_EQ(s.credentials.withheld, (std::vector<std::string>{"GH", "GITHUB_TOKEN", "PIP"}));
  std::map<std::string, std::string> server_env = {
      {"GITHUB_TOKEN", "value-1"}, {"GH", "x"}, {"PIP", "y"}, {"KEPT", "z"}};
  const auto resolved = resolve_credentials(s.credentials, server_env);
  ASSERT_EQ(resolved.error, "");
  EXPECT_EQ(resolved.names, (std::vector<std::string>{"KEPT"}));
  EXPECT_EQ(*resolved.env, (std::vector<std::string>{"KEPT=z"}));
}

TEST(EgressSecretSettings, TheSettingsCheckPointsAtEachSecretProblem) {
  std::vector<sdk::SettingsProblem> problems;
  check_docker_settings(R"({"network": "egress", "egress": {"allow": ["api.test"], "secrets": [
      {"name": "GH", "from": "env:X", "hosts": ["nope.test"]},
      {"name": "GH", "from": "nope", "hosts": ["api.test"]}]}})",
                        EngineKind::kApi, problems);
  std::vector<std::string> pointers;
  for (const auto& p : problems) pointers.push_back(p.pointer);
  // An object's keys in their sorted order (nlohmann::json's).
  EXPECT_EQ(pointers,
            (std::vector<std::string>{"/egress/secrets/0/hosts/0", "/egress/secrets/1/from",
                                      "/egress/secrets/1/name"}));
  problems.clear();
  check_docker_settings(R"({"network": "egress", "credentials": {"env_vars": ["X"]},
      "egress": {"allow": ["api.test"], "secrets": [
      {"name": "GH", "from": "env:X", "hosts": ["api.test"]}]}})",
                        EngineKind::kApi, problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].pointer, "/credentials/env_vars/0");
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
