// Tests of the command-line parser: each command's options, and clear usage errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/arguments.hpp"

namespace execmcp::host::cli {
namespace {

using ::testing::HasSubstr;

TEST(Arguments, ParsesServe) {
  const auto parsed =
      parse_arguments({"serve", "--config", "c.yaml", "--agent=a", "--log-level", "debug",
                       "--audit-file", "a.jsonl", "--max-concurrent", "3", "--on-eof", "finish"});
  ASSERT_EQ(parsed.error, "");
  EXPECT_EQ(parsed.arguments.command, "serve");
  EXPECT_EQ(parsed.arguments.config_file, "c.yaml");
  EXPECT_EQ(parsed.arguments.agent_id, "a");
  EXPECT_EQ(parsed.arguments.log_level, "debug");
  EXPECT_EQ(parsed.arguments.audit_file, "a.jsonl");
  EXPECT_EQ(parsed.arguments.serve.session.max_concurrent_calls, 3u);
  EXPECT_TRUE(parsed.arguments.serve.session.finish_calls_on_eof);
  EXPECT_FALSE(
      parse_arguments({"serve", "--on-eof=cancel"}).arguments.serve.session.finish_calls_on_eof);
  EXPECT_EQ(parse_arguments({"serve", "--on-eof", "wait"}).error,
            "--on-eof must be cancel or finish, got 'wait'");
  EXPECT_NE(parse_arguments({"exec", "--on-eof", "finish", "--", "true"}).error, "");
}

TEST(Arguments, ServeTakesMessageAndOutputLimitsWithBinarySuffixes) {
  const auto parsed = parse_arguments({"serve", "--config", "c", "--max-message-bytes", "16M",
                                       "--max-message-values=50000", "--max-outbound-bytes", "1G"});
  ASSERT_EQ(parsed.error, "");
  EXPECT_EQ(parsed.arguments.serve.session.limits.max_bytes, 16u * 1024 * 1024);
  EXPECT_EQ(parsed.arguments.serve.session.limits.max_values, 50000u);
  EXPECT_EQ(parsed.arguments.serve.session.max_outbound_bytes, 1024u * 1024 * 1024);
  EXPECT_EQ(parse_arguments({"serve", "--config", "c", "--max-message-bytes", "4096"})
                .arguments.serve.session.limits.max_bytes,
            4096u);
  EXPECT_EQ(parse_arguments({"serve", "--config", "c", "--max-message-bytes", "64k"})
                .arguments.serve.session.limits.max_bytes,
            64u * 1024);
  // Unset: the server's default.
  EXPECT_EQ(parse_arguments({"serve", "--config", "c"}).arguments.serve.session.limits.max_bytes,
            mcp::MessageLimits::kDefaultMaxBytes);
  for (const char* bad : {"0", "12x", "-5", "", "5G", "1.5M"}) {
    EXPECT_THAT(parse_arguments({"serve", "--config", "c", "--max-message-bytes", bad}).error,
                HasSubstr("--max-message-bytes needs"))
        << bad;
  }
  EXPECT_THAT(parse_arguments({"serve", "--config", "c", "--max-message-values", "3"}).error,
              HasSubstr("--max-message-values needs"));
  EXPECT_THAT(parse_arguments({"serve", "--config", "c", "--max-outbound-bytes", "1000"}).error,
              HasSubstr("--max-outbound-bytes needs"));
  EXPECT_NE(parse_arguments({"exec", "--max-message-bytes", "1M", "--", "true"}).error, "");
}

// The waiting room behind --max-concurrent bounds what parked calls can hold in memory.
TEST(Arguments, ServeTakesTheNumberOfCallsThatMayWait) {
  EXPECT_EQ(parse_arguments({"serve", "--config", "c", "--max-queued-calls", "0"})
                .arguments.serve.session.max_queued_calls,
            0u);
  EXPECT_EQ(parse_arguments({"serve", "--config", "c", "--max-queued-calls=64"})
                .arguments.serve.session.max_queued_calls,
            64u);
  // Unset: the server's default.
  EXPECT_EQ(parse_arguments({"serve", "--config", "c"}).arguments.serve.session.max_queued_calls,
            mcp::ServerOptions{}.max_queued_calls);
  for (const char* bad : {"-1", "4097", "x", ""}) {
    EXPECT_THAT(parse_arguments({"serve", "--config", "c", "--max-queued-calls", bad}).error,
                HasSubstr("--max-queued-calls needs a whole number from 0 to 4096"))
        << bad;
  }
  EXPECT_NE(parse_arguments({"exec", "--max-queued-calls", "1", "--", "true"}).error, "");
}

TEST(Arguments, ServeTakesTheTaskBounds) {
  const auto parsed =
      parse_arguments({"serve", "--config", "c", "--max-tasks-per-principal", "3", "--max-task-ttl",
                       "60", "--max-running-tasks", "2", "--task-after", "0"});
  ASSERT_EQ(parsed.error, "");
  const mcp::ServerOptions& session = parsed.arguments.serve.session;
  EXPECT_EQ(session.max_tasks_per_principal, 3u);
  EXPECT_EQ(session.max_task_ttl, std::chrono::seconds(60));
  EXPECT_EQ(session.max_running_tasks, 2u);
  EXPECT_EQ(session.task_after, std::chrono::milliseconds(0));
  // --http raises the default of running tasks, as it does for calls.
  EXPECT_EQ(parse_arguments({"serve", "--config", "c", "--http", "127.0.0.1:0"})
                .arguments.serve.session.max_running_tasks,
            server::kHttpDefaultMaxRunningTasks);
  EXPECT_THAT(parse_arguments({"serve", "--config", "c", "--max-tasks-per-principal", "0"}).error,
              HasSubstr("--max-tasks-per-principal needs a whole number from 1"));
  EXPECT_THAT(parse_arguments({"serve", "--config", "c", "--task-after", "-1"}).error,
              HasSubstr("--task-after needs a whole number of milliseconds"));
}

TEST(Arguments, ParsesExecWithCommandAfterDoubleDash) {
  const auto parsed = parse_arguments(
      {"exec", "--config", "c.yaml", "--timeout", "2.5", "--work-dir", "sub", "--", "ls", "-la"});
  ASSERT_EQ(parsed.error, "");
  EXPECT_EQ(parsed.arguments.timeout_seconds, 2.5);
  EXPECT_EQ(parsed.arguments.work_dir, "sub");
  EXPECT_EQ(parsed.arguments.exec_command, (std::vector<std::string>{"ls", "-la"}));
}

TEST(Arguments, CheckConfigTakesAPositionalFile) {
  const auto parsed = parse_arguments({"check-config", "x.yaml"});
  ASSERT_EQ(parsed.error, "");
  EXPECT_EQ(parsed.arguments.config_file, "x.yaml");
}

TEST(Arguments, StrictIsTakenByCheckConfigAndServeOnly) {
  auto parsed = parse_arguments({"check-config", "--strict", "x.yaml"});
  ASSERT_EQ(parsed.error, "");
  EXPECT_TRUE(parsed.arguments.strict);
  parsed = parse_arguments({"serve", "--config", "x.yaml", "--strict"});
  ASSERT_EQ(parsed.error, "");
  EXPECT_TRUE(parsed.arguments.strict);
  EXPECT_FALSE(parse_arguments({"serve", "--config", "x.yaml"}).arguments.strict);
  EXPECT_THAT(parse_arguments({"exec", "--strict", "--config", "x", "--", "true"}).error,
              HasSubstr("unknown option '--strict'"));
  EXPECT_THAT(parse_arguments({"serve", "--strict=yes", "--config", "x"}).error,
              HasSubstr("takes no value"));
}

TEST(Arguments, ServeMassgenTakesEverythingAfterItAsMassGensFlags) {
  auto parsed = parse_arguments({"serve", "--log-level", "debug", "--massgen", "--allowed-paths",
                                 "/w", "/c", "--agent-id", "a", "--timeout=5"});
  ASSERT_EQ(parsed.error, "");
  ASSERT_TRUE(parsed.arguments.massgen.has_value());
  EXPECT_EQ(parsed.arguments.massgen->allowed_paths, (std::vector<std::string>{"/w", "/c"}));
  EXPECT_EQ(parsed.arguments.massgen->agent_id, "a");
  EXPECT_EQ(parsed.arguments.log_level, "debug");
  EXPECT_THAT(parse_arguments({"serve", "--massgen", "--config", "x.yaml"}).error,
              HasSubstr("unknown MassGen flag '--config'"));
  EXPECT_THAT(parse_arguments({"serve", "--config", "x.yaml", "--massgen"}).error,
              HasSubstr("--massgen replaces --config and --agent"));
  EXPECT_THAT(parse_arguments({"serve", "--agent", "a", "--massgen"}).error,
              HasSubstr("--massgen replaces --config and --agent"));
  EXPECT_THAT(parse_arguments({"serve", "--http", "127.0.0.1:0", "--massgen"}).error,
              HasSubstr("--massgen serves one agent on stdio"));
  EXPECT_THAT(parse_arguments({"exec", "--massgen"}).error, HasSubstr("unknown option"));
  EXPECT_THAT(parse_arguments({"serve", "--massgen", "--frob"}).error,
              HasSubstr("--local-skills-directory"));
  EXPECT_FALSE(parse_arguments({"serve", "--config", "x"}).arguments.massgen.has_value());
}

TEST(Arguments, VersionAndHelp) {
  EXPECT_EQ(parse_arguments({"--version"}).arguments.command, "version");
  EXPECT_EQ(parse_arguments({"--help"}).arguments.command, "help");
  EXPECT_EQ(parse_arguments({"serve", "--help"}).arguments.command, "help");
  EXPECT_EQ(parse_arguments({"plugins"}).error, "");
}

TEST(Arguments, UsageErrorsSayWhatIsWrong) {
  EXPECT_THAT(parse_arguments({}).error, HasSubstr("no command"));
  EXPECT_THAT(parse_arguments({"launch"}).error, HasSubstr("unknown command 'launch'"));
  EXPECT_THAT(parse_arguments({"serve"}).error, HasSubstr("serve needs --config FILE"));
  EXPECT_THAT(parse_arguments({"serve", "--config"}).error, HasSubstr("--config needs a value"));
  EXPECT_THAT(parse_arguments({"serve", "--config", "c", "--timeout", "3"}).error,
              HasSubstr("unknown option '--timeout' for serve"));
  EXPECT_THAT(parse_arguments({"serve", "--config", "c", "--log-level", "loud"}).error,
              HasSubstr("--log-level must be one of"));
  EXPECT_THAT(parse_arguments({"serve", "--config", "c", "--max-concurrent", "0"}).error,
              HasSubstr("--max-concurrent needs a whole number"));
  EXPECT_THAT(parse_arguments({"exec", "--config", "c"}).error,
              HasSubstr("needs a command after --"));
  EXPECT_THAT(parse_arguments({"exec", "--config", "c", "ls"}).error,
              HasSubstr("put the command after --"));
  EXPECT_THAT(parse_arguments({"exec", "--config", "c", "--timeout", "-1", "--", "ls"}).error,
              HasSubstr("--timeout needs a number of seconds > 0"));
  EXPECT_THAT(parse_arguments({"check-config"}).error,
              HasSubstr("check-config needs a config FILE"));
}

}  // namespace
}  // namespace execmcp::host::cli
