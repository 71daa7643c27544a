// Tests of the execmcp program itself, run as a child process the way an operator runs it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"
#include "transport/http/http_test_client.hpp"

extern char** environ;

namespace execmcp::tests {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Runs `execmcp <args>` with a clean EXECMCP_PLUGIN_PATH; stdout and stderr kept apart.
RunResult run_execmcp(const std::string& args, const TempDir& dir, const std::string& env = {}) {
  const auto out = dir.path() / "stdout.txt";
  const auto err = dir.path() / "stderr.txt";
  const std::string command = "env -u EXECMCP_PLUGIN_PATH " + env + " " + quote(EXECMCP_BINARY) +
                              " " + args + " </dev/null >" + quote(out.string()) + " 2>" +
                              quote(err.string());
  const int status = std::system(command.c_str());
  RunResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_text(out);
  result.err = read_text(err);
  return result;
}

std::string fixture_config(const TempDir& dir, const std::string& extra_backend_settings = "") {
  const auto file = dir.path() / "fixture.yaml";
  write_text(file, "execmcp: 1\nplugin_paths: [" + std::string(EXECMCP_FIXTURE_PLUGIN_DIR) +
                       "]\nagents:\n  - id: echo\n    cwd: ws\n    backend:\n"
                       "      plugin: fixture-echo\n      settings: {exit_code: 3" +
                       extra_backend_settings +
                       "}\n    filters:\n      - plugin: fixture-word\n"
                       "        settings: {word: forbidden}\n");
  return file.string();
}

TEST(ExecmcpCli, VersionAndHelp) {
  TempDir dir;
  auto result = run_execmcp("--version", dir);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("execmcp "));
  EXPECT_THAT(result.out, HasSubstr("plugin ABI"));
  result = run_execmcp("--help", dir);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("execmcp serve --config FILE"));
  result = run_execmcp("frobnicate", dir);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("unknown command 'frobnicate'"));
}

TEST(ExecmcpCli, CheckConfigOnABadFileExitsOneWithTheLine) {
  TempDir dir;
  const auto file = dir.path() / "bad.yaml";
  write_text(file, "execmcp: 1\nagents:\n  - id: a\n    cwd: /w\n    timeout: abc\n");
  const auto result = run_execmcp("check-config " + quote(file.string()), dir);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err,
              HasSubstr("bad.yaml:5: agents[0].timeout: expected a number, found 'abc'"));
}

TEST(ExecmcpCli, CheckConfigInstantiatesPluginsAndReportsTheirSettingsErrors) {
  TempDir dir;
  auto result = run_execmcp("check-config " + quote(fixture_config(dir)), dir);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("agent 'echo': backend fixture-echo, filters: fixture-word"));
  // The plugin's own words for its settings (SDK 2.4), whatever its name.
  EXPECT_THAT(result.out, HasSubstr("\n    echoes every command, exit code 3\n"));
  EXPECT_THAT(result.out, HasSubstr(": OK"));
  // What the agent's tools will be: this backend offers no background processes.
  EXPECT_THAT(result.out, HasSubstr("agent 'echo': background shells off (backend fixture-echo "
                                    "does not offer execmcp.background/1)"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "ws"));  // check-config touches nothing

  result = run_execmcp("check-config " + quote(fixture_config(dir, ", colour: red")), dir);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, AllOf(HasSubstr("fixture.yaml:8: agents[0].backend.settings"),
                                HasSubstr("unknown setting 'colour'")));
}

// check-config shows, for a local agent in its OS sandbox (issue 31), each layer this machine
// gives (the plugin's own description, SDK 2.4), and a layer it cannot give is an error at the
// `isolation` setting naming the layer and the fix. EXECMCP_BWRAP (test-only) hides bubblewrap.
TEST(ExecmcpCli, CheckConfigReportsTheLocalSandboxLayersAndAMissingOneAsAnError) {
  TempDir dir;
  const auto file = dir.path() / "sandbox.yaml";
  write_text(file,
             "execmcp: 1\nagents:\n  - id: s\n    cwd: ws\n    backend: {plugin: local, settings: "
             "{isolation: sandbox, sandbox: {landlock_max_abi: 2}}}\n  - id: n\n    cwd: ws\n"
             "  - id: e\n    cwd: ws\n    backend: {plugin: local, settings: {isolation: sandbox, "
             "network: egress, egress: {allow: [pypi.org, '*.npmjs.org']}}}\n");
  auto result = run_execmcp("check-config " + quote(file.string()), dir);
  const char* require = std::getenv("EXECMCP_REQUIRE_SANDBOX");
  if (result.exit_code == 1 && result.err.find("isolation: sandbox:") != std::string::npos &&
      (require == nullptr || std::string(require) != "1"))
    GTEST_SKIP() << result.err;
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("\n    isolation: sandbox: bubblewrap /"));
  EXPECT_THAT(result.out, AllOf(HasSubstr("user namespaces yes, seccomp yes, Landlock ABI 2; "
                                          "network none"),
                                HasSubstr("\n    isolation: none: commands run on the host"),
                                HasSubstr("; network egress (2 allowed entries, through a proxy "
                                          "of its own)")));
  // And the limits each sandbox's cgroup of its own gets here, or which defaults it cannot have.
  if (result.out.find("WITHOUT its default limits") == std::string::npos) {
    EXPECT_THAT(result.out, HasSubstr("network none (its own loopback only); limits: memory 2048 "
                                      "MiB, pids 512, CPU shared with other sandboxes (no quota) "
                                      "(a cgroup v"));
  }

  result = run_execmcp("check-config " + quote(file.string()), dir,
                       "EXECMCP_BWRAP=" + quote((dir.path() / "no-bwrap").string()));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.out, HasSubstr("isolation: sandbox: CANNOT START here"));
  EXPECT_THAT(result.err, AllOf(HasSubstr("sandbox.yaml:5: agents[0].backend.settings.isolation: "),
                                HasSubstr("bubblewrap: "), HasSubstr("no-bwrap not found"),
                                HasSubstr("apt-get install bubblewrap")));
  EXPECT_THAT(result.err, AllOf(Not(HasSubstr("agents[1]")),  // isolation: none needs no layer
                                HasSubstr("agents[2].backend.settings.isolation: ")));
}

// The Docker plugins check their settings (SDK 2.1): check-config shows the network policy, and
// each bad allow entry is reported at its own line, in both schemas. No engine is needed.
TEST(ExecmcpCli, CheckConfigShowsTheEgressPolicyAndEachBadEntryAtItsLine) {
  TempDir dir;
  const auto native = dir.path() / "egress.yaml";
  write_text(native,
             "execmcp: 1\nagents:\n  - id: py\n    cwd: ws\n    filters: [{plugin: sanitize}]\n"
             "    backend:\n      plugin: docker-api\n      settings:\n        network: egress\n"
             "        egress:\n          allow:\n            - pypi.org\n"
             "            - \"*.npmjs.org\"\n          ports: [443]\n");
  auto result = run_execmcp("check-config " + quote(native.string()), dir);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("    network: egress, only through the agent's own proxy, to: "
                                    "pypi.org, *.npmjs.org; ports 443; upstream network bridge"));

  std::string text = read_text(native);
  text.replace(text.find("*.npmjs.org"), 11, "http://npmjs.org/");
  text.replace(text.find("[443]"), 5, "[443, 0]");
  write_text(native, text);
  result = run_execmcp("check-config " + quote(native.string()), dir);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("egress.yaml:13: agents[0].backend.settings.egress.allow[1]: "
                                    "'http://npmjs.org/' is not a host name"));
  EXPECT_THAT(result.err,
              HasSubstr("egress.yaml:14: agents[0].backend.settings.egress.ports[1]: "));

  const auto massgen = dir.path() / "mg.yaml";
  write_text(
      massgen,
      "agents:\n  - id: a\n    backend:\n      cwd: ws\n      enable_mcp_command_line: true\n"
      "      command_line_execution_mode: docker\n"
      "      command_line_docker_network_mode: egress\n"
      "      command_line_docker_egress:\n        allow:\n          - pypi.org\n"
      "          - not a host\n");
  result = run_execmcp("check-config " + quote(massgen.string()), dir);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("mg.yaml:11: agents[0].backend.command_line_docker_egress."
                                    "allow[1]: 'not a host' is not a host name"));
  EXPECT_THAT(result.out, HasSubstr("    network: egress, only through the agent's own proxy, to: "
                                    "pypi.org, not a host; ports 80, 443"));
}

// Issue 29: an agent that serve would refuse for another reason (a MassGen agent without
// enable_mcp_command_line: true) still has its plugins' settings checked, each at its line: an
// invalid regular expression passed check-config ("OK") until the agent was enabled.
TEST(ExecmcpCli, CheckConfigChecksThePluginSettingsOfAnAgentServeWouldRefuse) {
  TempDir dir;
  const auto massgen = dir.path() / "mg.yaml";
  write_text(massgen,
             "agents:\n  - id: a\n    backend:\n      cwd: ws\n"
             "      command_line_allowed_commands: [\"(unclosed\"]\n");
  const auto result = run_execmcp("check-config " + quote(massgen.string()), dir);
  EXPECT_EQ(result.exit_code, 1) << result.out;
  EXPECT_THAT(result.err,
              HasSubstr("mg.yaml:5: agents[0].backend.command_line_allowed_commands[0]: "
                        "invalid regular expression '(unclosed'"));
  EXPECT_THAT(result.out, Not(HasSubstr(": OK")));
}

// Issue 29: the MassGen dialect is a rename table; its Docker values are the plugin's to check,
// and each problem names the MassGen line it came from.
TEST(ExecmcpCli, CheckConfigReportsMassGenDockerValuesAtTheirLines) {
  TempDir dir;
  const auto massgen = dir.path() / "mg.yaml";
  write_text(
      massgen,
      "agents:\n  - id: a\n    backend:\n      cwd: ws\n      enable_mcp_command_line: true\n"
      "      command_line_execution_mode: docker\n      command_line_docker_cpu_limit: lots\n"
      "  - id: b\n    backend:\n      cwd: ws\n      enable_mcp_command_line: true\n"
      "      command_line_execution_mode: docker-cli\n"
      "      command_line_docker_network_mode: everywhere\n"
      "  - id: c\n    backend:\n      cwd: ws\n      enable_mcp_command_line: true\n"
      "      command_line_execution_mode: docker\n      command_line_docker_enable_sudo: maybe\n");
  const auto result = run_execmcp("check-config " + quote(massgen.string()), dir);
  EXPECT_EQ(result.exit_code, 1) << result.out;
  EXPECT_THAT(result.err, HasSubstr("mg.yaml:7: agents[0].backend.command_line_docker_cpu_limit: "
                                    "expected a positive number of CPUs"));
  EXPECT_THAT(result.err,
              HasSubstr("mg.yaml:13: agents[1].backend.command_line_docker_network_mode: expected "
                        "one of none, bridge, host, egress (got 'everywhere')"));
  EXPECT_THAT(result.err,
              HasSubstr("mg.yaml:19: agents[2].backend.command_line_docker_enable_sudo"));
}

// `runtime` (gVisor's runsc) is shown above the network; an engine is only asked at start.
TEST(ExecmcpCli, CheckConfigShowsTheDockerRuntime) {
  TempDir dir;
  const auto native = dir.path() / "runsc.yaml";
  write_text(native,
             "execmcp: 1\nagents:\n  - id: py\n    cwd: ws\n    filters: [{plugin: sanitize}]\n"
             "    backend:\n      plugin: docker-cli\n      settings:\n        runtime: runsc\n");
  auto result = run_execmcp("check-config " + quote(native.string()), dir);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("    runtime: runsc\n    network: none (no network)\n"));

  std::string text = read_text(native);
  text.replace(text.find("runsc"), 5, "-x");
  write_text(native, text);
  result = run_execmcp("check-config " + quote(native.string()), dir);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("runsc.yaml:9: agents[0].backend.settings.runtime: expected "
                                    "the name of a runtime"));
}

TEST(ExecmcpCli, PluginsListsGoodOnesAndExplainsBadFiles) {
  TempDir dir;
  const auto result = run_execmcp("plugins --config " + quote(fixture_config(dir)), dir);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out,
              AllOf(HasSubstr("fixture-echo"), HasSubstr("backend"), HasSubstr("fixture-word"),
                    HasSubstr("filter"), HasSubstr("fixture_echo_backend.so")));
  EXPECT_THAT(result.err, AllOf(HasSubstr("fixture_abi_major.so: incompatible plugin ABI"),
                                HasSubstr("fixture_no_descriptor.so: not an execmcp plugin")));
}

TEST(ExecmcpCli, PluginsFromEnvironmentPath) {
  TempDir dir;
  const auto result =
      run_execmcp("plugins", dir, "EXECMCP_PLUGIN_PATH=" + quote(EXECMCP_FIXTURE_PLUGIN_DIR));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("fixture-echo"));
}

#if defined(EXECMCP_HAVE_PLUGIN_LOCAL) && defined(EXECMCP_HAVE_PLUGIN_SANITIZE) && \
    defined(EXECMCP_HAVE_PLUGIN_PATTERNS)
TEST(ExecmcpCli, PluginsListsTheInTreePlugins) {
  TempDir dir;
  const auto result = run_execmcp("plugins", dir);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, AllOf(HasSubstr("local"), HasSubstr("sanitize"), HasSubstr("patterns")));
  EXPECT_THAT(result.out, Not(HasSubstr("fixture-echo")));  // fixtures stay out of the real dir
}

TEST(ExecmcpCli, ExecRunsThroughTheRealLocalPluginAndFilters) {
  TempDir dir;
  const auto config = dir.path() / "local.yaml";
  write_text(config,
             "execmcp: 1\nagents:\n  - id: default\n    cwd: ws\n    backend: {plugin: local}\n"
             "    filters:\n      - plugin: sanitize\n      - plugin: patterns\n"
             "        settings: {deny: ['\\bgit\\s+push\\b']}\n");
  auto result = run_execmcp("exec --log-level info --config " + quote(config.string()) +
                                " -- 'echo hello; pwd; echo oops >&2; exit 4'",
                            dir);
  EXPECT_EQ(result.exit_code, 4) << result.err;
  EXPECT_THAT(result.out, HasSubstr("hello\n" + dir.str() + "/ws\n"));
  EXPECT_THAT(result.err, HasSubstr("oops"));
  EXPECT_THAT(result.err, HasSubstr("audit agent=default principal=cli tool=execute_command "
                                    "verdict=allowed exit=4"));

  result = run_execmcp("exec --config " + quote(config.string()) + " -- git push origin", dir);
  EXPECT_EQ(result.exit_code, 126);
  EXPECT_THAT(result.err, HasSubstr("blocked by the 'patterns' filter"));

  result = run_execmcp("check-config " + quote(config.string()), dir);
  EXPECT_EQ(result.exit_code, 0) << result.err;
}

// A local agent's commands inherit the server's environment: a variable that held a token of
// server.tokens is gone before any command runs, with exec (and stdio serve) as with --http.
TEST(ExecmcpCli, CommandsNeverSeeAVariableThatHeldAToken) {
  TempDir dir;
  const std::string token = "exec-token-never-inherited-0123456789";
  const auto config = dir.path() / "local-token.yaml";
  write_text(config,
             "execmcp: 1\nagents:\n  - id: default\n    cwd: ws\n    backend: {plugin: local}\n"
             "server:\n  tokens:\n"
             "    - {name: from-env, env: EXECMCP_TEST_EXEC_TOKEN, agents: [default]}\n");
  const auto result =
      run_execmcp("exec --config " + quote(config.string()) +
                      " -- 'echo \"[${EXECMCP_TEST_EXEC_TOKEN-unset}]\"; cat /proc/$PPID/environ'",
                  dir, "EXECMCP_TEST_EXEC_TOKEN=" + token);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("[unset]"));
  EXPECT_EQ(result.out.find(token), std::string::npos) << "the token reached the command";
}
#endif

TEST(ExecmcpCli, CheckConfigListsMassGenKeysItDoesNotActOnAndStrictRefusesThem) {
  TempDir dir;
  const auto config = dir.path() / "mg.yaml";
  write_text(config,
             "agent:\n  id: coder\n  backend:\n    type: openai\n    model: gpt-4o\n"
             "    cwd: ws\n    enable_mcp_command_line: true\nui: {display_type: simple}\n");
  auto result = run_execmcp("check-config " + quote(config.string()), dir);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  const auto ok = result.out.find(": OK");
  ASSERT_NE(ok, std::string::npos) << result.out;
  const std::string after = result.out.substr(ok);
  EXPECT_THAT(after, HasSubstr("read but not acted on (3;"));
  EXPECT_THAT(after, HasSubstr("mg.yaml:4: agent.backend.type (model/LLM backend)"));
  EXPECT_THAT(after, HasSubstr("mg.yaml:5: agent.backend.model (model/LLM backend)"));
  EXPECT_THAT(after, HasSubstr("mg.yaml:8: ui (MassGen UI)"));

  result = run_execmcp("check-config --strict " + quote(config.string()), dir);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.out, Not(HasSubstr(": OK")));
  EXPECT_THAT(result.err, HasSubstr("error: " + config.string() +
                                    ":4: agent.backend.type (model/LLM backend) "
                                    "is not acted on by execmcp (--strict)"));
  EXPECT_THAT(result.err, HasSubstr("mg.yaml:8: ui"));

  // serve --strict refuses before it starts anything.
  result = run_execmcp("serve --strict --config " + quote(config.string()), dir);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("agent.backend.model (model/LLM backend) is not acted on"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "ws"));
}

TEST(ExecmcpCli, ServeMassgenRefusesBadFlagsBeforeStarting) {
  TempDir dir;
  auto result = run_execmcp("serve --massgen --allowed-paths ws --frobnicate", dir);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, AllOf(HasSubstr("unknown MassGen flag '--frobnicate'"),
                                HasSubstr("--allowed-paths")));
  result = run_execmcp("serve --massgen --allowed-paths ws --execution-mode docker", dir);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("--execution-mode docker needs --agent-id"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "ws"));
}

TEST(ExecmcpCli, ExecPrintsOutputAndExitsWithTheCommandsCode) {
  TempDir dir;
  const std::string config = fixture_config(dir);
  const std::string audit = (dir.path() / "audit.jsonl").string();
  auto result = run_execmcp(
      "exec --config " + quote(config) + " --audit-file " + quote(audit) + " -- echo hi", dir);
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_EQ(result.out, "echo:echo hi\n");
  EXPECT_THAT(result.err, HasSubstr("cwd:" + dir.str() + "/ws"));
  EXPECT_THAT(read_text(audit), HasSubstr("\"verdict\":\"allowed\""));

  result = run_execmcp("exec --config " + quote(config) + " -- say forbidden words", dir);
  EXPECT_EQ(result.exit_code, 126);
  EXPECT_EQ(result.out, "");
  EXPECT_THAT(result.err,
              HasSubstr("blocked by the 'fixture-word' filter (rule 'word-forbidden')"));
}

TEST(ExecmcpCli, ServeRefusesUnknownAgentAndBadBackendClearly) {
  TempDir dir;
  const std::string config = fixture_config(dir, ", start_error: engine missing");
  auto result = run_execmcp("serve --config " + quote(config) + " --agent nobody", dir);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("no agent 'nobody' (agents: echo)"));
  result = run_execmcp("exec --config " + quote(config) + " -- true", dir);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("backend 'fixture-echo' failed to start: engine missing"));
}

// A per-user agent serves one sandbox per HTTP user: stdio (and exec) has one user, so it is
// refused with what to do instead; check-config shows its settings, and a backend that cannot stop
// and resume a sandbox is refused by name.
TEST(ExecmcpCli, APerUserAgentIsRefusedOverStdioAndCheckConfigShowsIt) {
  TempDir dir;
  const auto file = dir.path() / "per_user.yaml";
  write_text(file, "execmcp: 1\nplugin_paths: [" + std::string(EXECMCP_FIXTURE_PLUGIN_DIR) +
                       "]\nagents:\n  - id: py\n    per_user:\n      workspace_root: users\n"
                       "      max_users: 7\n      idle_stop: 30\n      warm: 1\n"
                       "    backend: {plugin: fixture-echo}\n");
  for (const std::string& command : std::vector<std::string>{"serve", "exec"}) {
    SCOPED_TRACE(command);
    const auto result = run_execmcp(
        command + " --config " + quote(file.string()) + (command == "exec" ? " -- true" : ""), dir);
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.err, HasSubstr("per_user.yaml:4: agent 'py' is per-user (per_user:)"));
    EXPECT_THAT(result.err, HasSubstr("Serve it with --http"));
  }
  const auto checked = run_execmcp("check-config " + quote(file.string()), dir);
  EXPECT_THAT(checked.out,
              HasSubstr("workspace " + dir.str() + "/users/<user key> (seen as /workspace)"));
  EXPECT_THAT(checked.out, HasSubstr("per user: a sandbox per authenticated HTTP user, at most 7; "
                                     "stopped after 30s without a call, removed after 86400s "
                                     "stopped (workspaces kept); 1 warm; calls per user: a "
                                     "quarter of --max-concurrent"));
  // The echo fixture runs commands in no sandbox it could stop: refused at its line.
  EXPECT_EQ(checked.exit_code, 1);
  EXPECT_THAT(checked.err, HasSubstr("backend 'fixture-echo' cannot serve a per-user agent"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "users"));  // check-config touches nothing
}

#ifdef EXECMCP_TEST_HAVE_MCP
TEST(ExecmcpCli, ServeAnswersOverStdioAndCleansUpOnce) {
  TempDir dir;
  const std::string marker = (dir.path() / "cleanups.txt").string();
  const std::string config = fixture_config(dir, ", cleanup_marker: " + quote(marker));
  const auto requests = dir.path() / "requests.jsonl";
  write_text(requests,
             R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":)"
             R"("2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}})"
             "\n"
             R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
             "\n"
             R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_command",)"
             R"("arguments":{"command":"echo served"}}})"
             "\n");
  const auto out = dir.path() / "out.txt";
  const auto err = dir.path() / "err.txt";
  // Keep stdin open a moment after the requests: EOF ends the session and cancels pending calls.
  const std::string command = "(cat " + quote(requests.string()) +
                              "; sleep 1) | env -u "
                              "EXECMCP_PLUGIN_PATH " +
                              quote(EXECMCP_BINARY) + " serve --config " + quote(config) + " >" +
                              quote(out.string()) + " 2>" + quote(err.string());
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << read_text(err);
  const std::string stdout_text = read_text(out);
  EXPECT_THAT(stdout_text, HasSubstr(R"("id":1)"));
  EXPECT_THAT(stdout_text, HasSubstr("echo:echo served"));
  const std::string stderr_text = read_text(err);
  EXPECT_THAT(stderr_text, HasSubstr("serving agent 'echo' (backend fixture-echo"));
  EXPECT_THAT(stderr_text, HasSubstr("serve --config " + config + " --agent echo"));
  EXPECT_EQ(read_text(marker), "cleanup\n");  // once, after the MCP server returned
}

TEST(ExecmcpCli, ServeMassgenIsADropInForMassGensServer) {
  // As MassGen launches its server: cwd = the workspace, the workspace first in --allowed-paths.
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "ws");
  std::filesystem::create_directories(dir.path() / "ctx");
  const auto requests = dir.path() / "requests.jsonl";
  write_text(requests,
             R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":)"
             R"("2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}})"
             "\n"
             R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
             "\n"
             R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_command",)"
             R"("arguments":{"command":"pwd; echo made > out.txt"}}})"
             "\n"
             R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_command",)"
             R"("arguments":{"command":"git push origin"}}})"
             "\n"
             R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file",)"
             R"("arguments":{"path":")" +
                 (dir.path() / "ctx" / "x.txt").string() + R"(","content":"no"}}})" + "\n");
  const auto out = dir.path() / "out.txt";
  const auto err = dir.path() / "err.txt";
  const std::string command =
      "cd " + quote((dir.path() / "ws").string()) + " && (cat " + quote(requests.string()) +
      "; sleep 1) | env -u EXECMCP_PLUGIN_PATH " + quote(EXECMCP_BINARY) +
      " serve --massgen --allowed-paths " + quote((dir.path() / "ws").string()) + " " +
      quote((dir.path() / "ctx").string()) +
      " --execution-mode local --agent-id agent_a --blocked-commands 'git\\s+push' --timeout 30"
      " >" +
      quote(out.string()) + " 2>" + quote(err.string());
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << read_text(err);
  const std::string stdout_text = read_text(out);
  EXPECT_THAT(stdout_text, HasSubstr(dir.str() + "/ws\\n"));
  EXPECT_EQ(read_text(dir.path() / "ws" / "out.txt"), "made\n");
  EXPECT_THAT(stdout_text, HasSubstr("patterns"));  // git push blocked by --blocked-commands
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "ctx" / "x.txt"));  // context: read-only
  EXPECT_THAT(read_text(err), HasSubstr("serving agent 'agent_a' (backend local"));
}

TEST(ExecmcpCli, ServeOnEofFinishAnswersPipedRequests) {
  // A script pipes its requests and closes stdin at once: with --on-eof finish it still gets
  // every answer.
  TempDir dir;
  const std::string config = fixture_config(dir);
  const auto requests = dir.path() / "requests.jsonl";
  std::string lines =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":)"
      R"("2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}})"
      "\n";
  for (int id = 2; id <= 4; ++id)
    lines += R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
             R"(,"method":"tools/call","params":{"name":"execute_command",)"
             R"("arguments":{"command":"echo call)" +
             std::to_string(id) + "\"}}}\n";
  write_text(requests, lines);
  const auto out = dir.path() / "out.txt";
  const auto err = dir.path() / "err.txt";
  const std::string command = "env -u EXECMCP_PLUGIN_PATH " + quote(EXECMCP_BINARY) +
                              " serve --on-eof finish --config " + quote(config) + " <" +
                              quote(requests.string()) + " >" + quote(out.string()) + " 2>" +
                              quote(err.string());
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << read_text(err);
  const std::string stdout_text = read_text(out);
  for (int id = 2; id <= 4; ++id)
    EXPECT_THAT(stdout_text, HasSubstr("echo:echo call" + std::to_string(id))) << stdout_text;
  EXPECT_THAT(stdout_text, Not(HasSubstr("cancelled before it started")));
  EXPECT_THAT(stdout_text, Not(HasSubstr(R"("cancelled":true)")));
}

TEST(ExecmcpCli, SignalDuringAgentStartStopsTheAgentAndCleansUp) {
  // A backend whose start takes 3 s (as a Docker backend creating its container); SIGTERM arrives
  // during it, once the start has begun. The agent must still be cleaned up, and the exit code
  // says why. ($! is the server: env replaces itself with it.)
  TempDir dir;
  const std::string marker = (dir.path() / "cleanups.txt").string();
  const std::string started = (dir.path() / "started.txt").string();
  const std::string config =
      fixture_config(dir, ", start_delay_ms: 3000, start_marker: " + quote(started) +
                              ", cleanup_marker: " + quote(marker));
  const auto err = dir.path() / "err.txt";
  const std::string command =
      "env -u EXECMCP_PLUGIN_PATH " + quote(EXECMCP_BINARY) + " serve --log-level info --config " +
      quote(config) + " </dev/null >/dev/null 2>" + quote(err.string()) +
      " & pid=$!; for i in $(seq 200); do [ -e " + quote(started) +
      " ] && break; sleep 0.05; done; kill -TERM $pid; wait $pid; echo $? > " +
      quote((dir.path() / "code").string());
  ASSERT_EQ(std::system(("bash -c " + quote(command)).c_str()), 0);
  ASSERT_EQ(read_text(started), "starting\n") << read_text(err);
  EXPECT_EQ(read_text(dir.path() / "code"), "143\n") << read_text(err);
  EXPECT_THAT(read_text(err), HasSubstr("SIGTERM while agent 'echo' was starting"));
  EXPECT_EQ(read_text(marker), "cleanup\n");
}
#endif

}  // namespace
}  // namespace execmcp::tests

namespace execmcp::tests {
namespace {

// serve --http refuses, before it starts anything, what would expose agents: local-backend agents
// (they run as the server's own user) unless the config allows them, and any address other
// machines can reach without credentials unless --insecure-no-auth.
TEST(ExecmcpCliHttp, RefusesLocalAgentsAndUnauthenticatedPublicAddresses) {
  TempDir dir;
  const auto local = dir.path() / "local.yaml";
  write_text(local, "execmcp: 1\nagents:\n  - id: a\n    cwd: ws\n    backend: {plugin: local}\n");
  auto result = run_execmcp("serve --config " + quote(local.string()) + " --http 127.0.0.1:0", dir);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("'a' (backend 'local') run commands in no sandbox"));
  EXPECT_THAT(result.err, HasSubstr("server.allow_local_agents: true"));
  // Issue 28, finding 6: any backend that says it isolates nothing, whatever its name.
  const auto echo = dir.path() / "echo.yaml";
  write_text(echo, "execmcp: 1\nplugin_paths: [" + std::string(EXECMCP_FIXTURE_PLUGIN_DIR) +
                       "]\nagents:\n  - id: e\n    cwd: ws\n    backend: {plugin: fixture-echo}\n");
  result = run_execmcp("serve --config " + quote(echo.string()) + " --http 127.0.0.1:0", dir);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("'e' (backend 'fixture-echo') run commands in no sandbox"));

  const auto allowed = dir.path() / "allowed.yaml";
  write_text(allowed,
             "execmcp: 1\nagents:\n  - id: a\n    cwd: ws\n    backend: {plugin: local}\n"
             "server:\n  allow_local_agents: true\n");
  result = run_execmcp("serve --config " + quote(allowed.string()) + " --http 0.0.0.0:0", dir);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("refusing to serve on 0.0.0.0:0 without authentication"));
  EXPECT_THAT(result.err, HasSubstr("--insecure-no-auth"));

  result = run_execmcp("serve --config " + quote(allowed.string()) + " --agent a --agent b", dir);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("serve over stdio serves one agent"));
  result = run_execmcp("serve --config " + quote(allowed.string()) + " --http nowhere", dir);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("--http needs ADDR:PORT"));
  result = run_execmcp(
      "serve --config " + quote(allowed.string()) + " --http 127.0.0.1:0 --tls-cert x.pem", dir);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("TLS needs both --tls-cert FILE and --tls-key FILE"));
}

#ifdef EXECMCP_TEST_HAVE_MCP
// `execmcp serve --http 127.0.0.1:0` with `extra_env` added to this process's environment; the
// port is read off its log. Stopped (SIGTERM, then SIGKILL) when it goes out of scope.
class HttpServe {
 public:
  HttpServe(const std::string& config, const std::vector<std::string>& extra_env,
            const TempDir& dir)
      : log_((dir.path() / "serve.err").string()) {
    std::vector<std::string> argv = {EXECMCP_BINARY, "serve",       "--config",    config,
                                     "--http",       "127.0.0.1:0", "--log-level", "info"};
    std::vector<std::string> env = extra_env;
    for (char** e = environ; *e != nullptr; ++e)
      if (std::string_view(*e).rfind("EXECMCP_PLUGIN_PATH=", 0) != 0) env.emplace_back(*e);
    std::vector<char*> args;
    std::vector<char*> envp;
    for (auto& a : argv) args.push_back(a.data());
    for (auto& e : env) envp.push_back(e.data());
    args.push_back(nullptr);
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) pid_ = -1;
    static const std::regex kListening(R"(listening on http://127\.0\.0\.1:([0-9]+))");
    for (int i = 0; pid_ > 0 && i < 1000 && port_ == 0; ++i) {
      const std::string text = read_text(log_);
      if (std::smatch m; std::regex_search(text, m, kListening)) {
        port_ = static_cast<std::uint16_t>(std::stoi(m[1].str()));
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  }
  ~HttpServe() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 1000; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  HttpServe(const HttpServe&) = delete;
  HttpServe& operator=(const HttpServe&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] std::string log() const { return read_text(log_); }

  // The status code of an MCP initialize POSTed to /mcp/<agent> with `authorization`.
  [[nodiscard]] int initialize(const std::string& agent, const std::string& authorization) const {
    const std::string body =
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":)"
        R"("2025-06-18","capabilities":{},"clientInfo":{"name":"cli-test","version":"1"}}})";
    http::RawClient client(port_);
    client.send("POST /mcp/" + agent + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                "\r\nAuthorization: " + authorization +
                "\r\nContent-Type: application/json\r\nAccept: application/json, "
                "text/event-stream\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body);
    const auto response = client.read_response();
    if (!response || response->rfind("HTTP/1.1 ", 0) != 0) return -1;
    return std::stoi(response->substr(9, 3));
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

// A token read from `env:` is hashed at load; the variable is then wiped in place, not only unset:
// /proc/<pid>/environ shows the environment block the process started with, which unsetenv()
// leaves as it was (readable by the server's user, and by a local agent's commands).
TEST(ExecmcpCliHttp, ATokenFromTheEnvironmentLeavesNoTraceInProcEnviron) {
  TempDir dir;
  std::random_device random;
  const std::string token =
      "env-token-" + std::to_string(random()) + "-" + std::to_string(random()) + "-wiped";
  const auto config = dir.path() / "env-token.yaml";
  write_text(config, "execmcp: 1\nplugin_paths: [" + std::string(EXECMCP_FIXTURE_PLUGIN_DIR) +
                         "]\nagents:\n  - id: echo\n    cwd: ws\n    backend: {plugin: "
                         "fixture-echo, settings: {}}\nserver:\n  allow_local_agents: true\n"
                         "  tokens:\n"
                         "    - {name: from-env, env: EXECMCP_TEST_ENV_TOKEN, agents: [echo]}\n");
  const HttpServe server(
      config.string(), {"EXECMCP_TEST_ENV_TOKEN=" + token, "EXECMCP_TEST_ENV_NEIGHBOUR=kept"}, dir);
  ASSERT_GT(server.pid(), 0);
  ASSERT_NE(server.port(), 0) << server.log();
  std::ifstream in("/proc/" + std::to_string(server.pid()) + "/environ", std::ios::binary);
  const std::string environ_text((std::istreambuf_iterator<char>(in)),
                                 std::istreambuf_iterator<char>());
  // Only booleans: a failure must not print this environment (or the runner's) into the log.
  ASSERT_NE(environ_text.find("EXECMCP_TEST_ENV_NEIGHBOUR=kept"), std::string::npos)
      << "the other variables are left as they were";
  EXPECT_EQ(environ_text.find(token.substr(0, 16)), std::string::npos)
      << "the token's start is still in /proc/<pid>/environ";
  EXPECT_EQ(environ_text.find(token.substr(token.size() - 16)), std::string::npos)
      << "the token's end is still in /proc/<pid>/environ";
  // The token was hashed before the wipe: it still opens the agent, and only it does.
  EXPECT_EQ(server.initialize("echo", "Bearer " + token), 200) << server.log();
  EXPECT_EQ(server.initialize("echo", "Bearer " + token + "x"), 401) << server.log();
  EXPECT_THAT(server.log(), Not(HasSubstr(token)));
}

// A local agent in its OS sandbox (issue 31) says it is isolated, so --http serves it without
// server.allow_local_agents. Skipped where this machine cannot give a sandbox (the agent's start
// error names the layer), unless EXECMCP_REQUIRE_SANDBOX=1.
TEST(ExecmcpCliHttp, ServesALocalAgentInItsSandboxWithoutAllowLocalAgents) {
  TempDir dir;
  // The sandbox user (1000 when the server is root) reaches the workspace through this directory.
  std::filesystem::permissions(
      dir.path(), std::filesystem::perms::owner_all | std::filesystem::perms::others_exec);
  const auto config = dir.path() / "sandbox.yaml";
  write_text(config,
             "execmcp: 1\nagents:\n  - id: s\n    cwd: ws\n    backend: {plugin: local, "
             "settings: {isolation: sandbox}}\n");
  const HttpServe server(config.string(), {}, dir);
  ASSERT_GT(server.pid(), 0);
  const char* require = std::getenv("EXECMCP_REQUIRE_SANDBOX");
  if (server.port() == 0 && server.log().find("isolation: sandbox:") != std::string::npos &&
      (require == nullptr || std::string(require) != "1"))
    GTEST_SKIP() << server.log();
  ASSERT_NE(server.port(), 0) << server.log();
  EXPECT_THAT(server.log(), Not(HasSubstr("run commands in no sandbox")));
  EXPECT_EQ(server.initialize("s", "none"), 200) << server.log();
}
#endif

}  // namespace
}  // namespace execmcp::tests
