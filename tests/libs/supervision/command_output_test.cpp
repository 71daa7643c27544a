// Output capping, the kill decision and shell quoting shared by every backend.
#include "supervision/command_output.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace execmcp::plugins::supervision {
namespace {

struct RecordingSink final : sdk::OutputSink {
  std::string seen;
  void on_output(sdk::StreamKind, std::string_view data) noexcept override { seen.append(data); }
};

TEST(OutputCapture, KeepsAndStreamsOnlyUpToTheCapAndFlagsTheRest) {
  sdk::ExecResult r;
  RecordingSink sink;
  auto out = OutputCapture::of_stdout(r, 5, &sink);
  out.append("abc");
  EXPECT_FALSE(r.stdout_truncated);
  out.append("defg");
  out.append("hij");
  EXPECT_EQ(r.stdout_data, "abcde");
  EXPECT_EQ(sink.seen, "abcde");
  EXPECT_TRUE(r.stdout_truncated);
  EXPECT_FALSE(r.stderr_truncated);
}

TEST(KillDecision, CancelThenStopThenDeadline) {
  sdk::CancelToken cancel;
  const auto past = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const auto future = std::chrono::steady_clock::now() + std::chrono::hours(1);
  EXPECT_EQ(kill_cause(&cancel, false, future), KillCause::None);
  EXPECT_EQ(kill_cause(nullptr, false, std::nullopt), KillCause::None);
  EXPECT_EQ(kill_cause(&cancel, false, past), KillCause::TimedOut);
  EXPECT_EQ(kill_cause(&cancel, true, past), KillCause::Stopped);
  cancel.request_cancel();
  EXPECT_EQ(kill_cause(&cancel, true, past), KillCause::Cancelled);

  sdk::ExecResult r;
  record_kill(r, KillCause::Stopped);
  EXPECT_TRUE(r.cancelled);
  ASSERT_EQ(r.notices.size(), 1u);
  sdk::ExecResult t;
  record_kill(t, KillCause::TimedOut);
  EXPECT_TRUE(t.timed_out);
  EXPECT_FALSE(t.cancelled);
}

TEST(KillDecision, ACommandThatEndedByItselfLosesItsKillFlags) {
  sdk::ExecResult r;
  r.timed_out = true;
  settle_kill_flags(r, 0);  // exited 0 before the kill landed
  EXPECT_FALSE(r.timed_out);
  sdk::ExecResult k;
  k.timed_out = true;
  settle_kill_flags(k, 9);  // WTERMSIG 9: killed
  EXPECT_TRUE(k.timed_out);
  EXPECT_EQ(exit_code_from_status(3 << 8), 3);
  EXPECT_EQ(exit_code_from_status(9), 137);
}

TEST(ShellQuote, QuotesEverythingAsOneWord) {
  EXPECT_EQ(shell_quote("plain"), "'plain'");
  EXPECT_EQ(shell_quote("it's $x"), "'it'\\''s $x'");
  EXPECT_EQ(shell_quote(""), "''");
}

}  // namespace
}  // namespace execmcp::plugins::supervision
