// What every backend does with a running command's output and its end, in one copy: capping and
// streaming each output stream, deciding when a command must be killed (and saying why), and
// quoting a word for a POSIX shell.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "execmcp/common/shell_quote.hpp"
#include "execmcp/sdk/types.hpp"

namespace execmcp::plugins::supervision {

// Keeps at most `cap` bytes of one output stream in `data`, streams the kept part to the sink, and
// drops the rest (setting `truncated`), so a flood costs no memory past the cap.
class OutputCapture {
 public:
  OutputCapture(std::string& data, bool& truncated, sdk::StreamKind kind, std::size_t cap,
                sdk::OutputSink* sink)
      : data_(data), truncated_(truncated), kind_(kind), cap_(cap), sink_(sink) {}

  // Keeps nothing and caps nothing: every byte goes to the sink (a stream that may never end).
  void stream_only() { retain_ = false; }
  void append(std::string_view bytes);
  // Both streams of a result, captured into its stdout/stderr fields.
  static OutputCapture of_stdout(sdk::ExecResult& r, std::size_t cap, sdk::OutputSink* sink) {
    return {r.stdout_data, r.stdout_truncated, sdk::StreamKind::Stdout, cap, sink};
  }
  static OutputCapture of_stderr(sdk::ExecResult& r, std::size_t cap, sdk::OutputSink* sink) {
    return {r.stderr_data, r.stderr_truncated, sdk::StreamKind::Stderr, cap, sink};
  }

 private:
  std::string& data_;
  bool& truncated_;
  sdk::StreamKind kind_;
  std::size_t cap_;
  sdk::OutputSink* sink_;
  bool retain_ = true;
};

// Why a running command must be killed now.
enum class KillCause { None, Cancelled, Stopped, TimedOut };

// The first reason that holds: the call was cancelled, the backend was stopped, or the deadline
// passed (nullopt: no deadline).
KillCause kill_cause(const sdk::CancelToken* cancel, bool backend_stopped,
                     std::optional<std::chrono::steady_clock::time_point> deadline);

// Records on the result why its command was killed: the flag, and for a stop the notice.
void record_kill(sdk::ExecResult& result, KillCause cause);

// A command killed by us and reported as ended by SIGKILL keeps its timed_out/cancelled flag; one
// that ended by itself first (before the kill landed) is reported as it ended, never as "exit 0,
// timed out". `wait_status` is the shell's wait status, -1 when unknown.
void settle_kill_flags(sdk::ExecResult& result, int wait_status);

// The exit code a shell would report for a wait status: the code, or 128 + the signal.
int exit_code_from_status(int wait_status);

// The error of a command that exited 0 without reading `bytes_left` bytes of its input.
std::string stdin_shortfall_error(std::size_t bytes_left);

// `s` as one word for a POSIX shell, in single quotes (libs/common).
using common::shell_quote;

}  // namespace execmcp::plugins::supervision
