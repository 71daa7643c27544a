// Tests of `execmcp serve --massgen`'s flags: MassGen's server syntax to a one-agent config.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "config/config.hpp"
#include "config/massgen_flags.hpp"
#include "test_support.hpp"

namespace execmcp::host {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

MassgenFlags parse_ok(const std::vector<std::string>& argv) {
  const auto parsed = parse_massgen_flags(argv);
  EXPECT_EQ(parsed.error, "");
  return parsed.flags;
}

std::string parse_error(const std::vector<std::string>& argv) {
  return parse_massgen_flags(argv).error;
}

std::string build_error(const std::vector<std::string>& argv, const std::string& cwd = "/run") {
  try {
    massgen_flags_config(parse_ok(argv), cwd);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MassgenFlags, ParsesMassGensLaunchLine) {
  // As MassGen's filesystem manager launches its server (fastmcp run ... -- <these>).
  const auto flags = parse_ok({"--allowed-paths",
                               "/w/a",
                               "/ctx/one",
                               "/ctx/two",
                               "--execution-mode",
                               "docker",
                               "--agent-id",
                               "agent_a",
                               "--instance-id",
                               "x1",
                               "--enable-sudo",
                               "--allowed-commands",
                               "^python",
                               "^ls",
                               "--blocked-commands",
                               "rm",
                               "--timeout=90",
                               "--max-output-size",
                               "2048",
                               "--local-skills-directory",
                               "sk"});
  EXPECT_EQ(flags.allowed_paths, (std::vector<std::string>{"/w/a", "/ctx/one", "/ctx/two"}));
  EXPECT_EQ(flags.execution_mode, "docker");
  EXPECT_EQ(flags.agent_id, "agent_a");
  EXPECT_EQ(flags.instance_id, "x1");
  EXPECT_TRUE(flags.enable_sudo);
  EXPECT_EQ(flags.allowed_commands, (std::vector<std::string>{"^python", "^ls"}));
  EXPECT_EQ(flags.blocked_commands, (std::vector<std::string>{"rm"}));
  EXPECT_EQ(flags.timeout, 90);
  EXPECT_EQ(flags.max_output_size, 2048);
  EXPECT_EQ(flags.local_skills_directory, "sk");
}

TEST(MassgenFlags, EqualsFormsAndUnambiguousPrefixesWorkLikeArgparse) {
  const auto flags = parse_ok({"--allowed-paths=/w", "--execution-mode=local", "--agent=a1",
                               "--blocked", "x", "--max-output=10"});
  EXPECT_EQ(flags.allowed_paths, (std::vector<std::string>{"/w"}));
  EXPECT_EQ(flags.agent_id, "a1");
  EXPECT_EQ(flags.blocked_commands, (std::vector<std::string>{"x"}));
  EXPECT_EQ(flags.max_output_size, 10);
}

TEST(MassgenFlags, MistakesAreErrorsThatSayWhatIsKnown) {
  EXPECT_THAT(parse_error({"--allowed-path", "/w", "--frobnicate"}),
              AllOf(HasSubstr("unknown MassGen flag '--frobnicate'"), HasSubstr("--allowed-paths"),
                    HasSubstr("--local-skills-directory"), HasSubstr("--enable-sudo")));
  EXPECT_THAT(parse_error({"--execution-mode", "podman"}),
              HasSubstr("--execution-mode must be local or docker, got 'podman'"));
  EXPECT_THAT(parse_error({"--timeout", "soon"}), HasSubstr("--timeout needs a whole number"));
  EXPECT_THAT(parse_error({"--timeout", "0"}), HasSubstr("--timeout needs a whole number"));
  EXPECT_THAT(parse_error({"--max-output-size"}), HasSubstr("--max-output-size needs a value"));
  EXPECT_THAT(parse_error({"--agent-id", "--timeout", "5"}), HasSubstr("--agent-id needs a value"));
  EXPECT_THAT(parse_error({"--enable-sudo=yes"}), HasSubstr("--enable-sudo takes no value"));
  EXPECT_THAT(parse_error({"stray"}), HasSubstr("unexpected argument 'stray'"));
  EXPECT_THAT(parse_error({"--allowed-paths=/w", "/x"}), HasSubstr("unexpected argument '/x'"));
  EXPECT_THAT(parse_error({"--a", "x"}), HasSubstr("ambiguous"));
}

TEST(MassgenFlags, BuildALocalAgentFromTheAllowedPaths) {
  tests::TempDir dir;
  std::filesystem::create_directories(dir.path() / "skills");
  const auto config = massgen_flags_config(
      parse_ok({"--allowed-paths", "ws", "/ctx", "--agent-id", "coder", "--enable-sudo",
                "--timeout", "900", "--max-output-size", "4096", "--local-skills-directory",
                (dir.path() / "skills").string()}),
      dir.str());
  ASSERT_EQ(config->agents.size(), 1u);
  const auto& agent = config->agents[0];
  EXPECT_EQ(config->schema, ConfigSchema::MassGen);
  EXPECT_EQ(agent.id, "coder");
  EXPECT_EQ(agent.cwd, dir.str() + "/ws");
  EXPECT_EQ(agent.tools_dir, dir.str() + "/ws/tools");
  EXPECT_TRUE(agent.mcp_enabled);
  EXPECT_EQ(agent.backend.plugin, "local");
  ASSERT_EQ(agent.context_paths.size(), 1u);
  EXPECT_EQ(agent.context_paths[0].path, "/ctx");
  EXPECT_FALSE(agent.context_paths[0].writable);  // MassGen passes no permission: read-only
  ASSERT_EQ(agent.filters.size(), 1u);
  EXPECT_EQ(agent.filters[0].plugin, "sanitize");
  EXPECT_EQ(agent.filters[0].settings,
            (nlohmann::json{{"allow", {"sudo", "su", "chown", "chmod"}}}));
  EXPECT_EQ(agent.timeout, std::chrono::seconds(900));
  EXPECT_GE(agent.max_timeout, agent.timeout);
  EXPECT_EQ(agent.output_cap, 4096u);
  EXPECT_EQ(agent.skills_dir, (dir.path() / "skills").string());
}

TEST(MassgenFlags, WithoutAllowedPathsTheWorkspaceIsTheCurrentDirectoryWithAWarning) {
  const auto config = massgen_flags_config(parse_ok({}), "/run/here");
  EXPECT_EQ(config->agents.at(0).cwd, "/run/here");
  EXPECT_EQ(config->agents.at(0).id, "massgen");
  ASSERT_EQ(config->warnings.size(), 1u);
  EXPECT_THAT(config->warnings[0], HasSubstr("--allowed-paths"));
}

TEST(MassgenFlags, DockerModeAttachesToMassGensContainer) {
  auto config = massgen_flags_config(
      parse_ok({"--allowed-paths", "/w", "--execution-mode", "docker", "--agent-id", "agent_a"}),
      "/run");
  EXPECT_EQ(config->agents.at(0).backend.plugin, "docker-api");
  EXPECT_EQ(config->agents.at(0).backend.settings,
            (nlohmann::json{{"container", "massgen-agent_a"}}));
  config = massgen_flags_config(parse_ok({"--allowed-paths", "/w", "--execution-mode", "docker",
                                          "--agent-id", "agent_a", "--instance-id", "7f3a"}),
                                "/run");
  EXPECT_EQ(config->agents.at(0).backend.settings,
            (nlohmann::json{{"container", "massgen-agent_a-7f3a"}}));
  EXPECT_THAT(build_error({"--allowed-paths", "/w", "--execution-mode", "docker"}),
              HasSubstr("--execution-mode docker needs --agent-id"));
}

TEST(MassgenFlags, BadValuesAreConfigErrors) {
  // A bad --allowed-commands pattern is the patterns plugin's to find, when the agent is built
  // (plugin_settings_check_test.cpp, MassgenFlagsProblemsNameTheFlag).
  EXPECT_THAT(build_error({"--agent-id", "bad id!"}), HasSubstr("agent id 'bad id!'"));
  EXPECT_THAT(build_error({"--local-skills-directory", "/no/such/skills"}),
              HasSubstr("does not exist"));
  EXPECT_THAT(
      build_error({"--instance-id", "a/b", "--execution-mode", "docker", "--agent-id", "a"}),
      HasSubstr("--instance-id"));
}

// What matters of an agent, without where it was read.
nlohmann::json essence(const AgentConfig& agent) {
  nlohmann::json filters = nlohmann::json::array();
  for (const auto& filter : agent.filters)
    filters.push_back({{"plugin", filter.plugin}, {"settings", filter.settings}});
  nlohmann::json contexts = nlohmann::json::array();
  for (const auto& context : agent.context_paths)
    contexts.push_back({{"path", context.path},
                        {"writable", context.writable},
                        {"protected", context.protected_paths}});
  return {{"id", agent.id},
          {"cwd", agent.cwd},
          {"backend", agent.backend.plugin},
          {"settings", agent.backend.settings},
          {"filters", filters},
          {"context_paths", contexts},
          {"tools_dir", agent.tools_dir},
          {"skills_dir", agent.skills_dir},
          {"temp_workspace", agent.temp_workspace},
          {"timeout_ms", agent.timeout.count()},
          {"max_timeout_ms", agent.max_timeout.count()},
          {"output_cap", agent.output_cap},
          {"mcp_enabled", agent.mcp_enabled}};
}

TEST(MassgenFlags, FlagsAndTheEquivalentMassGenYamlGiveEqualAgents) {
  tests::TempDir dir;
  std::filesystem::create_directories(dir.path() / "skills");
  const auto from_flags = massgen_flags_config(
      parse_ok({"--allowed-paths", "/w/coder", "/ctx/a", "/ctx/b", "--agent-id", "coder",
                "--allowed-commands", "^python", "^ls", "--blocked-commands", "rm\\s+-rf",
                "--local-skills-directory", "skills"}),
      dir.str());
  const auto from_yaml = load_config_text(R"(agent:
  id: coder
  backend:
    type: openai
    cwd: /w/coder
    enable_mcp_command_line: true
    command_line_allowed_commands: ['^python', '^ls']
    command_line_blocked_commands: ['rm\s+-rf']
    context_paths:
      - path: /ctx/a
      - path: /ctx/b
        permission: read
orchestrator:
  coordination: {use_skills: true, skills_directory: skills}
)",
                                          (dir.path() / "mg.yaml").string());
  EXPECT_EQ(essence(from_flags->agents.at(0)), essence(from_yaml->agents.at(0)));
}

}  // namespace
}  // namespace execmcp::host
