// Tests of MassGen-compatible configs: the keys execmcp reads, the ones it ignores, and the
// mapping.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "config/config.hpp"
#include "config/config_parsers.hpp"
#include "config/massgen_flags.hpp"
#include "test_support.hpp"

namespace execmcp::host {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string load_error(const std::string& text) {
  try {
    load_config_text(text, "mg.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MassGenConfig, SingleLocalAgentWithPatterns) {
  const auto config = load_config_text(R"(agent:
  id: coder
  system_message: hi
  backend:
    type: openai
    model: gpt-4o
    api_key: sk-whatever
    cwd: /w/coder
    enable_mcp_command_line: true
    command_execution_prefix: uv run
    command_execution_venv_path: /venvs/a
    command_line_allowed_commands: ['^python']
    command_line_blocked_commands: ['rm -rf']
    context_paths:
      - path: /ctx
        permission: write
orchestrator:
  context_paths:
    - path: /shared
ui: {display_type: simple}
)",
                                       "/c/mg.yaml");
  EXPECT_EQ(config->schema, ConfigSchema::MassGen);
  ASSERT_EQ(config->agents.size(), 1u);
  const auto& agent = config->agents[0];
  EXPECT_EQ(agent.id, "coder");
  EXPECT_EQ(agent.cwd, "/w/coder");
  EXPECT_TRUE(agent.mcp_enabled);
  EXPECT_EQ(agent.backend.plugin, "local");
  EXPECT_EQ(agent.backend.settings,
            (nlohmann::json{{"command_prefix", "uv run"}, {"venv_path", "/venvs/a"}}));
  ASSERT_EQ(agent.filters.size(), 2u);
  EXPECT_EQ(agent.filters[0].plugin, "sanitize");
  EXPECT_EQ(agent.filters[1].plugin, "patterns");
  EXPECT_EQ(agent.filters[1].settings,
            (nlohmann::json{{"allow", {"^python"}}, {"deny", {"rm -rf"}}}));
  ASSERT_EQ(agent.context_paths.size(), 2u);
  EXPECT_EQ(agent.context_paths[0].path, "/ctx");
  EXPECT_TRUE(agent.context_paths[0].writable);
  EXPECT_EQ(agent.context_paths[1].path, "/shared");
  EXPECT_FALSE(agent.context_paths[1].writable);
  EXPECT_TRUE(config->warnings.empty());
}

TEST(MassGenConfig, DockerModeMapsToDockerApi) {
  const auto config = load_config_text(R"(agents:
  - id: a
    backend:
      cwd: /w/a
      enable_mcp_command_line: true
      command_line_execution_mode: docker
      command_line_docker_memory_limit: 2g
      command_line_docker_cpu_limit: 1.5
      command_line_docker_network_mode: bridge
  - id: b
    backend:
      cwd: /w/b
      enable_mcp_command_line: true
      command_line_execution_mode: docker
      command_line_docker_image: my/image:2
)",
                                       "/c/mg.yaml");
  ASSERT_EQ(config->agents.size(), 2u);
  const auto& a = config->agents[0];
  EXPECT_EQ(a.backend.plugin, "docker-api");
  // The rest is the plugin's: its default image, its checks (at their MassGen lines).
  EXPECT_EQ(a.backend.settings,
            (nlohmann::json{{"memory", "2g"}, {"cpus", 1.5}, {"network", "bridge"}}));
  ASSERT_EQ(a.filters.size(), 1u);  // sanitize only: no allow/deny lists
  EXPECT_EQ(a.filters[0].plugin, "sanitize");
  EXPECT_EQ(config->agents[1].backend.settings["image"], "my/image:2");
}

// Ours too: command_line_docker_runtime is the Docker backends' `runtime` (gVisor's runsc).
TEST(MassGenConfig, CommandLineDockerRuntimeIsTheRuntimeSetting) {
  const auto config = load_config_text(R"(agents:
  - id: a
    backend:
      cwd: /w/a
      enable_mcp_command_line: true
      command_line_execution_mode: docker
      command_line_docker_runtime: runsc
)",
                                       "/c/mg.yaml");
  const auto& a = config->agents.at(0);
  EXPECT_EQ(a.backend.settings["runtime"], "runsc");
  const auto at = a.backend.source_of("/runtime");
  EXPECT_EQ(at.location.line, 7);
  EXPECT_EQ(at.key_path, "agents[0].backend.command_line_docker_runtime");
  EXPECT_TRUE(config->warnings.empty());
  // Not a Docker mode: the key does nothing, and says so.
  const auto local = load_config_text(R"(agents:
  - id: a
    backend:
      cwd: /w/a
      enable_mcp_command_line: true
      command_line_docker_runtime: runsc
)",
                                      "/c/mg.yaml");
  EXPECT_FALSE(local->agents.at(0).backend.settings.contains("runtime"));
  ASSERT_EQ(local->warnings.size(), 1u);
  EXPECT_NE(local->warnings[0].find("command_line_docker_runtime is ignored"), std::string::npos)
      << local->warnings[0];
}

// Ours: MassGen's local mode in the local backend's OS sandbox (command_line_local_isolation,
// _network_mode, _egress are the local backend's isolation, network and egress settings, checked by
// the plugin at these lines); under a Docker mode they do nothing and say so.
TEST(MassGenConfig, LocalModeTakesTheSandboxFromCommandLineLocalKeys) {
  const auto config = load_config_text(R"(agents:
  - id: a
    backend:
      cwd: /w/a
      enable_mcp_command_line: true
      command_line_execution_mode: local
      command_line_local_isolation: sandbox
      command_line_local_network_mode: egress
      command_line_local_egress:
        allow: [pypi.org]
)",
                                       "/c/mg.yaml");
  const auto& a = config->agents.at(0);
  EXPECT_EQ(a.backend.plugin, "local");
  EXPECT_EQ(a.backend.settings["isolation"], "sandbox");
  EXPECT_EQ(a.backend.settings["network"], "egress");
  EXPECT_EQ(a.backend.settings["egress"], (nlohmann::json{{"allow", {"pypi.org"}}}));
  const auto at = a.backend.source_of("/isolation");
  EXPECT_EQ(at.location.line, 7);
  EXPECT_EQ(at.key_path, "agents[0].backend.command_line_local_isolation");
  EXPECT_EQ(a.backend.source_of("/egress/allow/0").location.line, 10);
  EXPECT_TRUE(config->warnings.empty());
  EXPECT_TRUE(config->ignored.empty());

  const auto docker = load_config_text(R"(agents:
  - id: a
    backend:
      cwd: /w/a
      enable_mcp_command_line: true
      command_line_execution_mode: docker
      command_line_local_isolation: sandbox
)",
                                       "/c/mg.yaml");
  EXPECT_FALSE(docker->agents.at(0).backend.settings.contains("isolation"));
  ASSERT_EQ(docker->warnings.size(), 1u);
  EXPECT_NE(docker->warnings[0].find("command_line_local_isolation is ignored"), std::string::npos)
      << docker->warnings[0];
}

// Our extension of MassGen's schema: network mode egress, with command_line_docker_egress as the
// Docker backends' `egress` setting (the plugin checks it, at these lines).
TEST(MassGenConfig, EgressModeTakesItsAllowListFromCommandLineDockerEgress) {
  const auto config = load_config_text(R"(agents:
  - id: a
    backend:
      cwd: /w/a
      enable_mcp_command_line: true
      command_line_execution_mode: docker
      command_line_docker_network_mode: egress
      command_line_docker_egress:
        allow: [pypi.org, "*.npmjs.org"]
        ports: [443]
)",
                                       "/c/mg.yaml");
  const auto& a = config->agents.at(0);
  EXPECT_EQ(a.backend.settings["network"], "egress");
  EXPECT_EQ(a.backend.settings["egress"],
            (nlohmann::json{{"allow", {"pypi.org", "*.npmjs.org"}}, {"ports", {443}}}));
  const auto at = a.backend.source_of("/egress/allow/1");
  EXPECT_EQ(at.location.line, 9);
  EXPECT_EQ(at.key_path, "agents[0].backend.command_line_docker_egress.allow[1]");
  EXPECT_TRUE(config->warnings.empty());

  const auto local = load_config_text(R"(agents:
  - id: a
    backend:
      cwd: /w/a
      enable_mcp_command_line: true
      command_line_docker_egress: {allow: [pypi.org]}
)",
                                      "/c/mg.yaml");
  ASSERT_EQ(local->warnings.size(), 1u);
  EXPECT_THAT(local->warnings[0], HasSubstr("command_line_docker_egress is ignored because "
                                            "command_line_execution_mode is local"));
}

// Our extension of MassGen's schema: docker-cli picks the CLI backend, with the same docker keys.
TEST(MassGenConfig, DockerCliModeMapsToDockerCliWithTheSameSettings) {
  const auto config = load_config_text(R"(agents:
  - id: a
    backend:
      cwd: /w/a
      enable_mcp_command_line: true
      command_line_execution_mode: docker-cli
      command_line_docker_image: my/image:2
      command_line_docker_memory_limit: 2g
      command_line_docker_cpu_limit: 1.5
      command_line_docker_network_mode: bridge
      command_execution_prefix: uv run
  - id: b
    backend:
      cwd: /w/b
      enable_mcp_command_line: true
      command_line_execution_mode: docker-cli
)",
                                       "/c/mg.yaml");
  ASSERT_EQ(config->agents.size(), 2u);
  const auto& a = config->agents[0];
  EXPECT_EQ(a.backend.plugin, "docker-cli");
  EXPECT_EQ(a.backend.settings, (nlohmann::json{{"image", "my/image:2"},
                                                {"memory", "2g"},
                                                {"cpus", 1.5},
                                                {"network", "bridge"},
                                                {"command_prefix", "uv run"}}));
  EXPECT_EQ(a.backend.plugin_key_path, "agents[0].backend.command_line_execution_mode");
  const auto& b = config->agents[1];
  EXPECT_EQ(b.backend.plugin, "docker-cli");
  EXPECT_EQ(b.backend.settings, nlohmann::json::object());  // the plugin's defaults
  EXPECT_TRUE(config->warnings.empty());
}

TEST(MassGenConfig, DisabledCommandLineIsAWarningNotAnError) {
  const auto config =
      load_config_text("agent:\n  id: a\n  backend:\n    type: claude\n", "mg.yaml");
  EXPECT_FALSE(config->agents[0].mcp_enabled);
  ASSERT_FALSE(config->warnings.empty());
  EXPECT_THAT(config->warnings[0], HasSubstr("mg.yaml:2: agent 'a' does not set "
                                             "enable_mcp_command_line: true"));
}

TEST(MassGenConfig, WrongTypesOfKeysWeReadAreErrorsWithLines) {
  EXPECT_EQ(load_error("agent:\n  id: a\n  backend:\n    cwd: /w\n    enable_mcp_command_line: "
                       "yes please\n"),
            "mg.yaml:5: agent.backend.enable_mcp_command_line: expected true or false, found "
            "'yes please'");
  EXPECT_THAT(load_error("agent:\n  id: a\n  backend:\n    cwd: /w\n    enable_mcp_command_line: "
                         "true\n    command_line_blocked_commands: 'rm'\n"),
              HasSubstr("mg.yaml:6: agent.backend.command_line_blocked_commands: expected a list"));
  EXPECT_THAT(load_error("agent:\n  id: a\n  backend:\n    cwd: /w\n    enable_mcp_command_line: "
                         "true\n    command_line_execution_mode: vm\n"),
              HasSubstr(":6: agent.backend.command_line_execution_mode: expected 'local', "
                        "'docker' or 'docker-cli', found 'vm'"));
  // The command_line_docker_* values are the plugin's to check (a rename table): passed on as
  // written, each with its line (ExecmcpCli.CheckConfigReportsMassGenDockerValuesAtTheirLines).
  const auto config = load_config_text(
      "agent:\n  id: a\n  backend:\n    cwd: /w\n    enable_mcp_command_line: true\n"
      "    command_line_execution_mode: docker\n    command_line_docker_cpu_limit: lots\n",
      "/c/mg.yaml");
  const auto& backend = config->agents.at(0).backend;
  EXPECT_EQ(backend.settings["cpus"], "lots");
  EXPECT_EQ(backend.source_of("/cpus").location.line, 7);
  EXPECT_EQ(backend.source_of("/cpus").key_path, "agent.backend.command_line_docker_cpu_limit");
}

TEST(MassGenConfig, EnabledAgentNeedsACwd) {
  EXPECT_THAT(load_error("agent:\n  id: a\n  backend:\n    enable_mcp_command_line: true\n"),
              HasSubstr("agent.backend.cwd: required key is missing"));
}

TEST(MassGenConfig, NeitherSchemaIsAClearError) {
  EXPECT_THAT(load_error("model: gpt\n"), HasSubstr("neither 'execmcp: 1'"));
  EXPECT_THAT(load_error("- a\n- b\n"), HasSubstr("expected a map at the top"));
}

TEST(MassGenConfig, MissingBackendIsAnError) {
  EXPECT_THAT(load_error("agents:\n  - id: a\n    model: x\n"),
              HasSubstr("agents[0].backend: required key is missing"));
}

}  // namespace
}  // namespace execmcp::host

namespace execmcp::host {
namespace {

const IgnoredKey* find_ignored(const Config& config, const std::string& key_path) {
  for (const auto& entry : config.ignored)
    if (entry.key_path == key_path) return &entry;
  return nullptr;
}

TEST(MassGenIgnoredKeys, EveryKeyReadButNotActedOnIsListedWithLineAndWhy) {
  const auto config = load_config_text(R"(agent:
  id: coder
  system_message: hi
  backend:
    type: openai
    model: gpt-4o
    enforce_read_before_delete: true
    cwd: /w/coder
    enable_mcp_command_line: true
    frobnicate: 3
orchestrator:
  snapshot_storage: snaps
ui: {display_type: simple}
)",
                                       "/c/mg.yaml");
  struct Expected {
    const char* key;
    int line;
    const char* why;
  };
  for (const Expected& e :
       {Expected{"agent.system_message", 3, "MassGen orchestration"},
        Expected{"agent.backend.type", 5, "model/LLM backend"},
        Expected{"agent.backend.model", 6, "model/LLM backend"},
        Expected{"agent.backend.enforce_read_before_delete", 7, "MassGen's own filesystem tools"},
        Expected{"agent.backend.frobnicate", 10, "unknown to execmcp"},
        Expected{"orchestrator.snapshot_storage", 12, "MassGen orchestration"},
        Expected{"ui", 13, "MassGen UI"}}) {
    SCOPED_TRACE(e.key);
    const IgnoredKey* entry = find_ignored(*config, e.key);
    ASSERT_NE(entry, nullptr);
    EXPECT_EQ(entry->location.line, e.line);
    EXPECT_EQ(entry->location.file, "/c/mg.yaml");
    EXPECT_EQ(entry->why, e.why);
  }
  // Keys acted on are never listed.
  EXPECT_EQ(find_ignored(*config, "agent.backend.cwd"), nullptr);
  EXPECT_EQ(find_ignored(*config, "agent.backend.enable_mcp_command_line"), nullptr);
  EXPECT_EQ(find_ignored(*config, "agent.id"), nullptr);
  EXPECT_EQ(config->ignored.size(), 7u);
}

TEST(MassGenIgnoredKeys, KnownSkipListsAreDisjointFromTheKeysActedOn) {
  const auto& lists = config_detail::massgen_key_lists();
  ASSERT_FALSE(lists.acted_on.empty());
  std::set<std::string> seen;
  for (const auto& [why, names] : lists.skipped) {
    ASSERT_FALSE(names.empty()) << why;
    for (const auto& name : names) {
      EXPECT_EQ(lists.acted_on.count(name), 0u) << name << " is both acted on and skipped";
      EXPECT_TRUE(seen.insert(name).second) << name << " is in two skip lists";
    }
  }
  // Every code-execution key is acted on, never skipped.
  for (const char* key :
       {"context_paths", "cwd", "enable_mcp_command_line", "command_line_execution_mode"})
    EXPECT_EQ(lists.acted_on.count(key), 1u) << key;
}

TEST(NativeConfig, UnknownKeysAreStillErrorsAndNothingIsListedAsIgnored) {
  EXPECT_THAT(load_error("execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n    frobnicate: 1\n"),
              HasSubstr("frobnicate"));
  const auto config =
      load_config_text("execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n", "/c/native.yaml");
  EXPECT_TRUE(config->ignored.empty());
}

}  // namespace
}  // namespace execmcp::host

namespace execmcp::host {
namespace {

const AgentConfig& only_agent(const std::shared_ptr<const Config>& config) {
  EXPECT_EQ(config->agents.size(), 1u);
  return config->agents.at(0);
}

TEST(MassGenCodeExecutionKeys, SudoCredentialsAndPreinstallBecomeDockerSettings) {
  const auto config = load_config_text(R"(agent:
  id: dev
  backend:
    cwd: ws
    enable_mcp_command_line: true
    command_line_execution_mode: docker
    command_line_docker_enable_sudo: true
    command_line_docker_credentials:
      mount: [ssh_keys, git_config]
      env_file: secrets/.env
      env_vars_from_file: [GH_TOKEN]
      env_vars: [HF_TOKEN]
      pass_all_env: false
      additional_mounts:
        data: {bind: /data, mode: ro}
        ~/cache: {bind: /cache, mode: rw}
    command_line_docker_packages:
      preinstall:
        python: [requests]
        npm: [typescript]
        system: [jq]
)",
                                       "/c/mg.yaml");
  const auto& agent = only_agent(config);
  EXPECT_EQ(agent.backend.plugin, "docker-api");
  const auto& settings = agent.backend.settings;
  EXPECT_EQ(settings.at("sudo"), true);
  const std::string home = std::getenv("HOME");
  EXPECT_EQ(settings.at("credentials"),
            (nlohmann::json{{"mount", {"ssh_keys", "git_config"}},
                            {"env_file", "/c/secrets/.env"},
                            {"env_vars_from_file", {"GH_TOKEN"}},
                            {"env_vars", {"HF_TOKEN"}},
                            {"pass_all_env", false},
                            {"additional_mounts",
                             {{"/c/data", {{"bind", "/data"}, {"mode", "ro"}}},
                              {home + "/cache", {{"bind", "/cache"}, {"mode", "rw"}}}}}}));
  EXPECT_EQ(
      settings.at("preinstall"),
      (nlohmann::json{{"python", {"requests"}}, {"npm", {"typescript"}}, {"system", {"jq"}}}));
  // MassGen lets sudo, su, chown and chmod through when sudo is on; so does the sanitize filter.
  ASSERT_EQ(agent.filters.at(0).plugin, "sanitize");
  EXPECT_EQ(agent.filters[0].settings,
            (nlohmann::json{{"allow", {"sudo", "su", "chown", "chmod"}}}));
  EXPECT_TRUE(config->ignored.empty());
}

TEST(MassGenCodeExecutionKeys, SudoOffChangesNothingAndLocalModeWarns) {
  auto config = load_config_text(R"(agent:
  id: a
  backend:
    cwd: /w
    enable_mcp_command_line: true
    command_line_execution_mode: docker
    command_line_docker_enable_sudo: false
)",
                                 "/c/mg.yaml");
  EXPECT_EQ(only_agent(config).backend.settings["sudo"], false);  // as written: the default
  EXPECT_EQ(only_agent(config).filters.at(0).settings, nlohmann::json::object());
  config = load_config_text(R"(agent:
  id: a
  backend:
    cwd: /w
    enable_mcp_command_line: true
    command_line_docker_enable_sudo: true
    command_line_docker_credentials: {env_vars: [X]}
    command_line_docker_packages: {preinstall: {python: [x]}}
)",
                            "/c/mg.yaml");
  const auto& agent = only_agent(config);
  EXPECT_EQ(agent.backend.settings, nlohmann::json::object());
  // Never on the host: sanitize keeps blocking sudo for a local agent.
  EXPECT_EQ(agent.filters.at(0).settings, nlohmann::json::object());
  ASSERT_EQ(config->warnings.size(), 3u);
  EXPECT_THAT(config->warnings[0], HasSubstr("command_line_docker_enable_sudo is ignored because "
                                             "command_line_execution_mode is local"));
}

TEST(MassGenCodeExecutionKeys, WrongShapesAreErrors) {
  // A renamed key's value is the plugin's to check (at check-config), at its line; sanitize keeps
  // its sudo rules unless the value is true.
  const auto config = load_config_text(
      "agent:\n  id: a\n  backend:\n    cwd: /w\n    command_line_execution_mode: docker\n"
      "    command_line_docker_enable_sudo: maybe\n",
      "/c/mg.yaml");
  EXPECT_EQ(only_agent(config).backend.settings["sudo"], "maybe");
  EXPECT_EQ(only_agent(config).backend.source_of("/sudo").location.line, 6);
  EXPECT_EQ(only_agent(config).filters.at(0).settings, nlohmann::json::object());
  EXPECT_THAT(
      load_error("agent:\n  id: a\n  backend:\n    cwd: /w\n"
                 "    command_line_execution_mode: docker\n"
                 "    command_line_docker_credentials: [a]\n"),
      HasSubstr("mg.yaml:6: agent.backend.command_line_docker_credentials: expected a map"));
  EXPECT_THAT(load_error("agent:\n  id: a\n  backend:\n    cwd: /w\n"
                         "    command_line_execution_mode: docker\n"
                         "    command_line_docker_packages: {preinstall: [a]}\n"),
              HasSubstr("command_line_docker_packages.preinstall: expected a map"));
}

TEST(MassGenCodeExecutionKeys, AgentTemporaryWorkspaceBecomesTheTempWorkspace) {
  const auto config = load_config_text(R"(agents:
  - id: a
    backend: {cwd: /w/a, enable_mcp_command_line: true}
  - id: b
    backend: {cwd: /w/b, enable_mcp_command_line: true}
orchestrator:
  agent_temporary_workspace: temp_workspaces
)",
                                       "/c/mg.yaml");
  for (const auto& agent : config->agents) EXPECT_EQ(agent.temp_workspace, "/c/temp_workspaces");
  EXPECT_TRUE(config->ignored.empty());
}

class ProtectedPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.path() / "ctx" / "keep");
    tests::write_text(dir_.path() / "ctx" / "file.txt", "x");
    tests::write_text(dir_.path() / "notes.md", "x");
  }
  std::shared_ptr<const Config> load(const std::string& context_entry) {
    return load_config_text(
        "agent:\n  id: a\n  backend:\n    cwd: /w\n"
        "    enable_mcp_command_line: true\n    context_paths:\n" +
            context_entry,
        (dir_.path() / "mg.yaml").string());
  }
  std::string error(const std::string& context_entry) {
    try {
      load(context_entry);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  }
  tests::TempDir dir_;
};

TEST_F(ProtectedPaths, AreResolvedAgainstTheContextDirectory) {
  const auto config = load(
      "      - path: ctx\n        permission: write\n"
      "        protected_paths: [keep, file.txt, ./keep/../file.txt]\n");
  const auto& context = only_agent(config).context_paths.at(0);
  EXPECT_TRUE(context.writable);
  const std::string ctx = (dir_.path() / "ctx").string();
  EXPECT_EQ(context.protected_paths,
            (std::vector<std::string>{ctx + "/keep", ctx + "/file.txt", ctx + "/file.txt"}));
  EXPECT_TRUE(config->warnings.empty());
}

TEST_F(ProtectedPaths, OfAFileContextAreResolvedAgainstItsParent) {
  const auto config = load(
      "      - path: notes.md\n        permission: write\n        protected_paths: [notes.md]\n");
  EXPECT_EQ(only_agent(config).context_paths.at(0).protected_paths,
            (std::vector<std::string>{(dir_.path() / "notes.md").string()}));
}

TEST_F(ProtectedPaths, OutsideTheContextOrMissingAreErrors) {
  EXPECT_THAT(error("      - path: ctx\n        permission: write\n"
                    "        protected_paths: [../notes.md]\n"),
              AllOf(HasSubstr("mg.yaml:9: agent.backend.context_paths[0].protected_paths[0]"),
                    HasSubstr("outside the context path")));
  EXPECT_THAT(error("      - path: ctx\n        permission: write\n"
                    "        protected_paths: [/etc]\n"),
              HasSubstr("outside the context path"));
  EXPECT_THAT(error("      - path: ctx\n        permission: write\n"
                    "        protected_paths: [nothing-here]\n"),
              AllOf(HasSubstr("protected_paths[0]"), HasSubstr("does not exist")));
  EXPECT_THAT(
      error("      - path: ctx\n        permission: write\n        protected_paths: keep\n"),
      HasSubstr("expected a list"));
}

TEST_F(ProtectedPaths, OnAReadOnlyContextAreAWarning) {
  const auto config = load("      - path: ctx\n        protected_paths: [keep]\n");
  ASSERT_EQ(config->warnings.size(), 1u);
  EXPECT_THAT(config->warnings[0], HasSubstr("context_paths[0].protected_paths"));
  EXPECT_THAT(config->warnings[0], HasSubstr("read-only"));
}

TEST_F(ProtectedPaths, NativeContextPathsTakeThemToo) {
  const auto config = load_config_text(
      "execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n    context_paths:\n"
      "      - {path: ctx, permission: write, protected_paths: [keep]}\n",
      (dir_.path() / "native.yaml").string());
  EXPECT_EQ(only_agent(config).context_paths.at(0).protected_paths,
            (std::vector<std::string>{(dir_.path() / "ctx" / "keep").string()}));
}

TEST(MassGenSkills, UseSkillsOffersTheSkillsDirectory) {
  tests::TempDir dir;
  std::filesystem::create_directories(dir.path() / "my-skills");
  std::filesystem::create_directories(dir.path() / ".agent" / "skills");
  const std::string file = (dir.path() / "mg.yaml").string();
  const std::string agent =
      "agent:\n  id: a\n  backend: {cwd: /w, enable_mcp_command_line: true}\n";
  auto config =
      load_config_text(agent +
                           "orchestrator:\n  coordination:\n    use_skills: true\n"
                           "    skills_directory: my-skills\n    max_orchestration_restarts: 2\n",
                       file);
  EXPECT_EQ(only_agent(config).skills_dir, (dir.path() / "my-skills").string());
  ASSERT_EQ(config->ignored.size(), 1u);
  EXPECT_EQ(config->ignored[0].key_path, "orchestrator.coordination.max_orchestration_restarts");
  EXPECT_EQ(config->ignored[0].why, "MassGen orchestration");

  // MassGen's default directory.
  config = load_config_text(agent + "orchestrator:\n  coordination: {use_skills: true}\n", file);
  EXPECT_EQ(only_agent(config).skills_dir, (dir.path() / ".agent" / "skills").string());

  // skills_directory alone offers nothing: listed, not silently dropped.
  config = load_config_text(
      agent + "orchestrator:\n  coordination: {skills_directory: my-skills}\n", file);
  EXPECT_EQ(only_agent(config).skills_dir, "");
  ASSERT_EQ(config->ignored.size(), 1u);
  EXPECT_EQ(config->ignored[0].key_path, "orchestrator.coordination.skills_directory");
  EXPECT_THAT(config->ignored[0].why, HasSubstr("use_skills"));
}

TEST(MassGenSkills, AMissingSkillsDirectoryIsAnError) {
  tests::TempDir dir;
  try {
    load_config_text(
        "agent:\n  id: a\n  backend: {cwd: /w, enable_mcp_command_line: true}\n"
        "orchestrator:\n  coordination:\n    use_skills: true\n    skills_directory: nope\n",
        (dir.path() / "mg.yaml").string());
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("mg.yaml:7: orchestrator.coordination.skills_directory"));
    EXPECT_THAT(e.what(), HasSubstr("does not exist"));
  }
}

}  // namespace
}  // namespace execmcp::host

namespace execmcp::host {
namespace {

TEST(MassGenIgnoredKeys, TheMigrationPageNamesEveryKnownKey) {
  const std::string page =
      tests::read_text(std::filesystem::path(EXECMCP_SOURCE_DIR) / "docs" / "massgen-migration.md");
  const auto& lists = config_detail::massgen_key_lists();
  for (const auto& name : lists.acted_on) EXPECT_NE(page.find(name), std::string::npos) << name;
  for (const auto& [why, names] : lists.skipped) {
    EXPECT_NE(page.find(why), std::string::npos) << why;
    for (const auto& name : names)
      EXPECT_NE(page.find("`" + name + "`"), std::string::npos) << name;
  }
  for (const auto& flag : massgen_flag_names())
    EXPECT_NE(page.find("`" + flag), std::string::npos) << flag;
}

}  // namespace
}  // namespace execmcp::host
