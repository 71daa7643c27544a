// Tests that a plugin checks its own settings (SDK 2.1) and the host reports each problem at the
// config line and key it was written at: native configs, MassGen configs and MassGen's flags.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/configured_agent.hpp"
#include "config/config.hpp"
#include "config/massgen_flags.hpp"
#include "plugins/plugin_registry.hpp"
#include "test_support.hpp"

namespace execmcp::host {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// What building the config's first agent with the in-tree plugins says ("(no error)": nothing).
std::string build_error(const Config& config) {
  PluginRegistry registry;
  registry.scan({EXECMCP_PLUGIN_DIR});
  AgentBuildOptions options;
  options.touch_filesystem = false;
  try {
    (void)build_agent(config, config.agents.at(0), registry, options);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

// What loading `text` as `path` and building its first agent says.
std::string check_error(const std::string& text, const std::string& path = "/cfg/x.yaml") {
  try {
    return build_error(*load_config_text(text, path));
  } catch (const ConfigError& e) {
    return std::string("(load) ") + e.what();
  }
}

// Moved from config_loader_test.cpp, unchanged in what they assert: the patterns plugin checks its
// regular expressions now, and the host reports them where they were written.
TEST(ConfigLoader, InvalidPatternRegexIsReportedWithItsLine) {
  const std::string error = check_error(
      "execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n    filters:\n      - plugin: patterns\n"
      "        settings:\n          deny:\n            - 'ok'\n            - '(unclosed'\n");
  EXPECT_THAT(error, HasSubstr(":10: agents[0].filters[0].settings.deny[1]: invalid regular "
                               "expression '(unclosed'"));
  // Reported once, by the plugin's check, not again by its factory.
  EXPECT_THAT(error, Not(HasSubstr("setting 'deny[1]'")));
}

TEST(ConfigLoader, RegexStdRegexWouldOverflowOnIsRefusedWithItsLine) {
  // The config fuzzer's find: this count overflowed a long inside libstdc++ (undefined behaviour).
  const std::string error = check_error(
      "execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n    filters:\n      - plugin: patterns\n"
      "        settings:\n          allow:\n            - 'con{3333333333333333333333}'\n");
  EXPECT_THAT(error, HasSubstr(":9: agents[0].filters[0].settings.allow[0]: invalid regular "
                               "expression 'con{3333333333333333333333}': repetition count"));
}

// Moved from massgen_config_test.cpp, unchanged in what it asserts.
TEST(MassGenConfig, InvalidRegexInAllowedCommandsIsAnError) {
  EXPECT_THAT(
      check_error("agent:\n  id: a\n  backend:\n    cwd: /w\n    enable_mcp_command_line: "
                  "true\n    command_line_allowed_commands:\n      - '^ls'\n      - '[z-a]'\n",
                  "mg.yaml"),
      HasSubstr("mg.yaml:8: agent.backend.command_line_allowed_commands[1]: invalid "
                "regular expression '[z-a]'"));
}

TEST(PluginSettingsCheck, EveryProblemOfOneListIsReportedAtItsOwnLine) {
  const std::string error = check_error(R"(execmcp: 1
agents:
  - id: a
    cwd: /tmp
    backend: {plugin: local}
    filters:
      - plugin: patterns
        settings:
          deny:
            - rm
            - "rm (-rf"
          allow: ["ls", ""]
)");
  EXPECT_THAT(error, HasSubstr("/cfg/x.yaml:11: agents[0].filters[0].settings.deny[1]: invalid "
                               "regular expression 'rm (-rf': "));
  EXPECT_THAT(error, HasSubstr("/cfg/x.yaml:12: agents[0].filters[0].settings.allow[1]: is empty"));
}

TEST(PluginSettingsCheck, MassgenFlagsProblemsNameTheFlag) {
  const auto parsed = parse_massgen_flags({"--allowed-commands", "(unclosed"});
  ASSERT_EQ(parsed.error, "");
  const auto config = massgen_flags_config(parsed.flags, "/tmp");
  EXPECT_THAT(build_error(*config),
              AllOf(HasSubstr("--allowed-commands: invalid regular expression '(unclosed'"),
                    Not(HasSubstr("setting 'allow[0]'"))));
}

TEST(PluginSettingsCheck, SettingsThePluginAcceptsBuildTheAgent) {
  const auto config = load_config_text(R"(execmcp: 1
agents:
  - id: a
    cwd: /tmp
    backend: {plugin: local}
    filters: [{plugin: patterns, settings: {deny: ["rm -rf"]}}]
)",
                                       "/cfg/ok.yaml");
  EXPECT_EQ(build_error(*config), "(no error)");
}

}  // namespace
}  // namespace execmcp::host
