// One command on execmcp-runner, from the call's start to the SDK's result, written once for every
// backend that runs commands through the runner (the Docker backends, the local sandbox): output
// capped per stream and streamed to the sink, a kill sent when the call is cancelled, the backend
// stops or the deadline passes, a kill the runner leaves unanswered, and the runner's report.
// What each backend does when the runner or its container is gone stays the backend's.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>

#include "execmcp/sdk/background_processes.hpp"
#include "execmcp/sdk/types.hpp"
#include "runner_client/runner_channel.hpp"
#include "supervision/runner_protocol.hpp"

namespace execmcp::plugins::runner_client {

struct RunWatch {
  std::size_t output_cap = sdk::kDefaultOutputCap;
  sdk::OutputSink* sink = nullptr;
  const sdk::CancelToken* cancel = nullptr;
  std::optional<std::chrono::steady_clock::time_point> deadline;  // nullopt: none
  // True once the backend was stopped since the call began (null: never).
  std::function<bool()> backend_stopped;
  // How long a kill request may go unanswered before the watch gives up on the runner.
  std::chrono::milliseconds kill_grace{15000};
  // Looked at while the call runs: true once what the runner lives in is seen gone (a stopped
  // container whose engine keeps the stream open). Null: never.
  std::function<bool()> target_gone;
};

// How a watched call ended.
enum class RunEnd {
  kReported,    // the runner's report came: call.done()
  kLost,        // the channel broke first: call.lost() says why, call.started() whether it ran
  kUnanswered,  // a kill went unanswered for kill_grace; the call was forgotten on the channel
  kTargetGone,  // target_gone() said so; the call was forgotten on the channel
};

// Waits for `call` (started by channel.start()) to end, its output into `result`'s stdout/stderr
// (capped at output_cap, also to the sink) and the kill flags (timed_out, cancelled) recorded as
// the kill is sent. Truncation the channel or the runner reported is on `result` too.
RunEnd watch_run(RunnerChannel& channel, RunnerCall& call, const RunWatch& watch,
                 sdk::ExecResult& result);

// The runner's report on `result`: exit code, truncation, error, notices; a command that ended by
// itself before the kill landed is reported as it ended (never "exit 0, timed out").
void apply_report(const supervision::runner::DoneReport& done, sdk::ExecResult& result);

// A background call's exit status as the shell saw it: 128+N for a signal when we killed it.
sdk::BackgroundExit exit_of(int code, bool killed);

}  // namespace execmcp::plugins::runner_client
