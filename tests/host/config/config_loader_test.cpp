// Tests of the native (`execmcp: 1`) config schema: values, defaults, and errors with lines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.hpp"
#include "test_support.hpp"

namespace execmcp::host {
namespace {

using ::testing::HasSubstr;

std::string load_error(const std::string& text, const std::string& path = "/cfg/x.yaml") {
  try {
    load_config_text(text, path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ConfigLoader, ReadsAFullNativeAgent) {
  tests::TempDir dir;
  const std::string text = R"(execmcp: 1
plugin_paths: [plugins]
log_dir: logs
audit_file: /var/log/audit.jsonl
agents:
  - id: alpha
    cwd: work
    backend:
      plugin: docker-api
      settings:
        image: "img:1"
        cpus: 1.5
        memory: 2g
        pids_limit: 128
        env: {A: "1"}
    filters:
      - plugin: sanitize
        settings: {allow: [sudo]}
      - plugin: patterns
        settings:
          deny: ['^rm ']
    context_paths:
      - path: /data
      - path: /out
        permission: write
    tools_dir: /opt/tools
    skills_dir: skills
    temp_workspace: /tmp/shared
    timeout: 2.5
    max_timeout: 30
    output_cap: 4096
)";
  const auto config = load_config_text(text, (dir.path() / "x.yaml").string());
  EXPECT_EQ(config->schema, ConfigSchema::Native);
  ASSERT_EQ(config->plugin_paths.size(), 1u);
  EXPECT_EQ(config->plugin_paths[0], dir.str() + "/plugins");
  EXPECT_EQ(config->log_dir, dir.str() + "/logs");
  EXPECT_EQ(config->audit_file, "/var/log/audit.jsonl");
  ASSERT_EQ(config->agents.size(), 1u);
  const auto& agent = config->agents[0];
  EXPECT_EQ(agent.id, "alpha");
  EXPECT_EQ(agent.cwd, dir.str() + "/work");
  EXPECT_EQ(agent.backend.plugin, "docker-api");
  EXPECT_EQ(agent.backend.settings["image"], "img:1");
  EXPECT_EQ(agent.backend.settings["cpus"], 1.5);
  EXPECT_EQ(agent.backend.settings["memory"], "2g");
  EXPECT_EQ(agent.backend.settings["pids_limit"], 128);
  EXPECT_EQ(agent.backend.settings["env"]["A"], "1");  // quoted stays a string
  EXPECT_EQ(agent.backend.location.line, 11);          // the settings node
  ASSERT_EQ(agent.filters.size(), 2u);
  EXPECT_EQ(agent.filters[0].plugin, "sanitize");
  EXPECT_EQ(agent.filters[0].settings["allow"][0], "sudo");
  EXPECT_EQ(agent.filters[1].plugin, "patterns");
  EXPECT_EQ(agent.filters[1].key_path, "agents[0].filters[1].settings");
  ASSERT_EQ(agent.context_paths.size(), 2u);
  EXPECT_EQ(agent.context_paths[0].path, "/data");
  EXPECT_FALSE(agent.context_paths[0].writable);
  EXPECT_TRUE(agent.context_paths[1].writable);
  EXPECT_EQ(agent.tools_dir, "/opt/tools");
  EXPECT_EQ(agent.skills_dir, dir.str() + "/skills");
  EXPECT_EQ(agent.temp_workspace, "/tmp/shared");
  EXPECT_EQ(agent.timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(agent.max_timeout, std::chrono::seconds(30));
  EXPECT_EQ(agent.output_cap, 4096u);
  EXPECT_TRUE(agent.mcp_enabled);
}

TEST(ConfigLoader, AppliesDefaults) {
  const auto config =
      load_config_text("execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n", "/c/x.yaml");
  const auto& agent = config->agents.at(0);
  EXPECT_EQ(agent.backend.plugin, "local");
  EXPECT_TRUE(agent.backend.settings.is_object());
  EXPECT_TRUE(agent.filters.empty());
  EXPECT_EQ(agent.tools_dir, "/w/tools");
  EXPECT_EQ(agent.timeout, std::chrono::seconds(60));
  EXPECT_EQ(agent.max_timeout, std::chrono::seconds(600));
  EXPECT_EQ(agent.output_cap, 1048576u);
  ASSERT_EQ(config->warnings.size(), 1u);
  EXPECT_THAT(config->warnings[0], HasSubstr("no filters"));
}

TEST(ConfigLoader, WrongTypeNamesKeyPathAndLine) {
  const std::string error = load_error(
      "execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n    timeout: abc\n", "configs/x.yaml");
  EXPECT_EQ(error, "configs/x.yaml:5: agents[0].timeout: expected a number, found 'abc'");
}

TEST(ConfigLoader, UnknownKeyIsAnErrorAtItsLine) {
  const std::string error =
      load_error("execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n    timout: 5\n");
  EXPECT_THAT(error, HasSubstr("/cfg/x.yaml:5: agents[0].timout: unknown key 'timout'"));
  EXPECT_THAT(error, HasSubstr("known: id, cwd,"));
}

TEST(ConfigLoader, UnknownKeysAreErrorsAtEveryLevel) {
  EXPECT_THAT(load_error("execmcp: 1\nextra: 1\nagents:\n  - {id: a, cwd: /w}\n"),
              HasSubstr(":2: extra: unknown key"));
  EXPECT_THAT(load_error("execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n    backend:\n"
                         "      plugin: local\n      setings: {}\n"),
              HasSubstr(":7: agents[0].backend.setings: unknown key"));
  EXPECT_THAT(load_error("execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n    context_paths:\n"
                         "      - path: /d\n        mode: rw\n"),
              HasSubstr(":7: agents[0].context_paths[0].mode: unknown key"));
}

TEST(ConfigLoader, UnknownKeysInsidePluginSettingsAreLeftToThePlugin) {
  const auto config = load_config_text(
      "execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n    backend:\n      plugin: local\n"
      "      settings: {anything: [1, 2]}\n",
      "/c/x.yaml");
  EXPECT_EQ(config->agents[0].backend.settings["anything"][1], 2);
}

TEST(ConfigLoader, ReportsEveryProblemNotJustTheFirst) {
  try {
    load_config_text(
        "execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n    timeout: x\n    output_cap: -3\n"
        "    filters: sanitize\n",
        "f.yaml");
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.problems().size(), 3u);
    EXPECT_THAT(e.problems()[0], HasSubstr("f.yaml:5: agents[0].timeout"));
    EXPECT_THAT(e.problems()[1],
                HasSubstr("f.yaml:6: agents[0].output_cap: expected a number of bytes > 0"));
    EXPECT_EQ(e.problems()[2], "f.yaml:7: agents[0].filters: expected a list, found 'sanitize'");
  }
}

TEST(ConfigLoader, MissingRequiredKeys) {
  EXPECT_THAT(load_error("execmcp: 1\nagents:\n  - cwd: /w\n"),
              HasSubstr(":3: agents[0].id: required key is missing"));
  EXPECT_THAT(load_error("execmcp: 1\nagents:\n  - id: a\n"),
              HasSubstr("agents[0].cwd: required key is missing"));
  EXPECT_THAT(load_error("execmcp: 1\n"), HasSubstr("agents: required key is missing"));
  EXPECT_THAT(
      load_error("execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n    backend: {settings: {}}\n"),
      HasSubstr("agents[0].backend.plugin: required key is missing"));
}

TEST(ConfigLoader, RejectsBadValues) {
  EXPECT_THAT(load_error("execmcp: 2\nagents: []\n"), HasSubstr("unsupported schema version 2"));
  EXPECT_THAT(load_error("execmcp: 1\nagents:\n  - id: 'bad id!'\n    cwd: /w\n"),
              HasSubstr("agent id 'bad id!' must start with"));
  EXPECT_THAT(load_error("execmcp: 1\nagents:\n  - {id: a, cwd: /w}\n  - {id: a, cwd: /v}\n"),
              HasSubstr("duplicate agent id 'a'"));
  EXPECT_THAT(
      load_error("execmcp: 1\nagents:\n  - {id: a, cwd: /w, timeout: 100, max_timeout: 10}\n"),
      HasSubstr("default timeout is larger than max_timeout"));
  EXPECT_THAT(load_error("execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n    context_paths:\n"
                         "      - {path: /d, permission: rw}\n"),
              HasSubstr(":6: agents[0].context_paths[0].permission: expected 'read' or 'write', "
                        "found 'rw'"));
  EXPECT_THAT(load_error("execmcp: 1\nagents:\n  - {id: a, cwd: /w, output_cap: 1.5}\n"),
              HasSubstr("agents[0].output_cap: expected an integer, found '1.5'"));
  EXPECT_THAT(load_error("execmcp: 1\nagents:\n  - {id: a, cwd: [x]}\n"),
              HasSubstr("agents[0].cwd: expected a string, found a list"));
}

TEST(ConfigLoader, SyntaxErrorNamesTheLine) {
  EXPECT_THAT(load_error("execmcp: 1\nagents:\n  - id: [a\n", "s.yaml"),
              HasSubstr("s.yaml:4: YAML syntax error"));
}

TEST(ConfigLoader, ExpandsEnvironmentInPaths) {
  tests::ScopedEnv ws("EXECMCP_TEST_WS", std::string("/srv/ws"));
  tests::ScopedEnv unset("EXECMCP_TEST_UNSET", std::nullopt);
  const auto config = load_config_text(
      "execmcp: 1\nagents:\n  - id: a\n    cwd: ${EXECMCP_TEST_WS}/a\n    context_paths:\n"
      "      - path: ${EXECMCP_TEST_UNSET:-/fallback}/d\n",
      "/c/x.yaml");
  EXPECT_EQ(config->agents[0].cwd, "/srv/ws/a");
  EXPECT_EQ(config->agents[0].context_paths[0].path, "/fallback/d");
  EXPECT_THAT(load_error("execmcp: 1\nagents:\n  - id: a\n    cwd: ${EXECMCP_TEST_UNSET}/a\n"),
              HasSubstr(":4: agents[0].cwd: environment variable 'EXECMCP_TEST_UNSET' is not set"));
}

TEST(ConfigLoader, SelectsAgents) {
  const auto config = load_config_text(
      "execmcp: 1\nagents:\n  - {id: a, cwd: /a}\n  - {id: b, cwd: /b}\n", "/c/x.yaml");
  EXPECT_EQ(config->select_agent("b").cwd, "/b");
  EXPECT_THROW((void)config->select_agent(""), ConfigError);
  try {
    (void)config->select_agent("zz");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no agent 'zz' (agents: a, b)"));
  }
  const auto single = load_config_text("execmcp: 1\nagents:\n  - {id: a, cwd: /a}\n", "/c/x.yaml");
  EXPECT_EQ(single->select_agent("").id, "a");
}

TEST(ConfigLoader, ReadsAnAgentsBackgroundSettings) {
  const auto defaults =
      load_config_text("execmcp: 1\nagents:\n  - {id: a, cwd: /a}\n", "/c/x.yaml");
  const BackgroundConfig& d = defaults->agents[0].background;
  EXPECT_TRUE(d.enabled);
  EXPECT_EQ(d.max_running, 10u);
  EXPECT_EQ(d.max_output_lines, 10000u);
  EXPECT_EQ(d.max_output_bytes, 1024u * 1024u);
  EXPECT_EQ(d.max_retained, 20u);
  EXPECT_EQ(d.kill_grace, std::chrono::seconds(5));

  const auto config = load_config_text(
      "execmcp: 1\nagents:\n  - id: a\n    cwd: /a\n    background:\n      enabled: false\n"
      "      max_running: 3\n      max_output_lines: 50\n      max_output_bytes: 70000\n"
      "      max_retained: 0\n      kill_grace: 0.5\n",
      "/c/x.yaml");
  const BackgroundConfig& b = config->agents[0].background;
  EXPECT_FALSE(b.enabled);
  EXPECT_EQ(b.max_running, 3u);
  EXPECT_EQ(b.max_output_lines, 50u);
  EXPECT_EQ(b.max_output_bytes, 70000u);
  EXPECT_EQ(b.max_retained, 0u);
  EXPECT_EQ(b.kill_grace, std::chrono::milliseconds(500));

  const std::string head = "execmcp: 1\nagents:\n  - id: a\n    cwd: /a\n    background:\n";
  EXPECT_THAT(load_error(head + "      max_running: 0\n"),
              HasSubstr(":6: agents[0].background.max_running: expected an integer from 1"));
  EXPECT_THAT(load_error(head + "      max_output_bytes: 100\n"),
              HasSubstr("agents[0].background.max_output_bytes: expected an integer from 65536"));
  EXPECT_THAT(load_error(head + "      kill_grace: -1\n"),
              HasSubstr("agents[0].background.kill_grace: expected a number of seconds"));
  EXPECT_THAT(load_error(head + "      max_shells: 3\n"), HasSubstr("max_shells"));
}

TEST(ConfigLoader, LoadsFromFileAndReportsMissingFile) {
  tests::TempDir dir;
  tests::write_text(dir.path() / "c.yaml", "execmcp: 1\nagents:\n  - {id: a, cwd: w}\n");
  const auto config = load_config((dir.path() / "c.yaml").string());
  EXPECT_EQ(config->agents[0].cwd, dir.str() + "/w");
  EXPECT_THROW(load_config((dir.path() / "missing.yaml").string()), ConfigError);
}

}  // namespace
}  // namespace execmcp::host
