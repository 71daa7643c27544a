// See run_call.hpp.
#include "runner_client/run_call.hpp"

#include <algorithm>
#include <vector>

#include "supervision/command_output.hpp"

namespace execmcp::plugins::runner_client {

namespace sv = supervision;
using Clock = std::chrono::steady_clock;

RunEnd watch_run(RunnerChannel& channel, RunnerCall& call, const RunWatch& watch,
                 sdk::ExecResult& result) {
  auto out = sv::OutputCapture::of_stdout(result, watch.output_cap, watch.sink);
  auto err = sv::OutputCapture::of_stderr(result, watch.output_cap, watch.sink);
  bool kill_sent = false;
  Clock::time_point kill_sent_at;
  std::vector<RunnerCall::Chunk> chunks;
  RunEnd end = RunEnd::kReported;
  for (;;) {
    if (!kill_sent) {
      const auto cause = sv::kill_cause(
          watch.cancel, watch.backend_stopped && watch.backend_stopped(), watch.deadline);
      sv::record_kill(result, cause);
      if (cause != sv::KillCause::None) {
        channel.kill(call);
        kill_sent = true;
        kill_sent_at = Clock::now();
      }
    } else if (Clock::now() - kill_sent_at > watch.kill_grace) {
      channel.forget(call);
      end = RunEnd::kUnanswered;
      break;
    }
    auto wait = std::chrono::milliseconds(50);
    if (!kill_sent && watch.deadline) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(*watch.deadline - Clock::now());
      if (left < wait) wait = std::max(left, std::chrono::milliseconds(0));
    }
    chunks.clear();
    const bool over = call.wait(wait, chunks);
    for (const auto& c : chunks) (c.kind == sdk::StreamKind::Stdout ? out : err).append(c.data);
    if (over) {
      end = call.done() ? RunEnd::kReported : RunEnd::kLost;
      break;
    }
    if (watch.target_gone && watch.target_gone()) {
      channel.forget(call);
      end = RunEnd::kTargetGone;
      break;
    }
  }
  // What came after wait() returned true is still queued: nothing more comes once a call is over.
  chunks.clear();
  call.wait(std::chrono::milliseconds(0), chunks);
  for (const auto& c : chunks) (c.kind == sdk::StreamKind::Stdout ? out : err).append(c.data);
  if (call.dropped(sdk::StreamKind::Stdout)) result.stdout_truncated = true;
  if (call.dropped(sdk::StreamKind::Stderr)) result.stderr_truncated = true;
  return end;
}

void apply_report(const supervision::runner::DoneReport& done, sdk::ExecResult& result) {
  result.exit_code = done.exit_code;
  result.stdout_truncated |= done.stdout_truncated;
  result.stderr_truncated |= done.stderr_truncated;
  if (!done.error.empty()) result.error = done.error;
  result.notices.insert(result.notices.end(), done.notices.begin(), done.notices.end());
  // Ended by itself before the kill landed: reported as it ended.
  if (!done.killed) result.timed_out = result.cancelled = false;
}

sdk::BackgroundExit exit_of(int code, bool killed) {
  sdk::BackgroundExit exit;
  exit.killed = killed;
  if (killed && code > 128 && code < 128 + 65) {
    exit.signal = code - 128;
  } else {
    exit.exit_code = code;
  }
  return exit;
}

}  // namespace execmcp::plugins::runner_client
