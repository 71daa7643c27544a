// What the background-shell calls of an Agent return (MassGen's tools), shared by the agent and
// the tools that render it.
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace execmcp::host {

// A line longer than this is cut; the rest of it, up to its newline, is dropped.
inline constexpr std::size_t kBackgroundMaxLineBytes = 64 * 1024;
// The most of a shell's command that its status shows (and that a read's audit record repeats): a
// read costs about what it asks, however long the command.
inline constexpr std::size_t kBackgroundCommandShownBytes = 1024;
// The most lines one get_background_shell_output answer may ask for.
inline constexpr std::size_t kBackgroundMaxLinesPerRead = 10000;

// Where a reader stands in both streams: the sequence number of the next line it wants.
struct OutputCursor {
  std::uint64_t stdout_seq = 0;
  std::uint64_t stderr_seq = 0;
};
// Opaque to the agent ("o12.e3"); parse_cursor() refuses anything else.
[[nodiscard]] inline std::string format_cursor(const OutputCursor& cursor) {
  return "o" + std::to_string(cursor.stdout_seq) + ".e" + std::to_string(cursor.stderr_seq);
}
[[nodiscard]] inline std::optional<OutputCursor> parse_cursor(std::string_view text) {
  auto number = [&text](char tag, std::uint64_t& out) {
    if (text.empty() || text.front() != tag) return false;
    text.remove_prefix(1);
    if (text.empty() || text.front() < '0' || text.front() > '9') return false;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (ec != std::errc()) return false;
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
    return true;
  };
  OutputCursor cursor;
  if (!number('o', cursor.stdout_seq)) return std::nullopt;
  if (text.empty() || text.front() != '.') return std::nullopt;
  text.remove_prefix(1);
  if (!number('e', cursor.stderr_seq) || !text.empty()) return std::nullopt;
  return cursor;
}

struct BackgroundShellStatus {
  std::string shell_id;
  std::string status;            // running | stopped | failed | killed
  std::optional<int> exit_code;  // none while running; -N for signal N (MassGen's)
  long pid = 0;                  // 0: unknown
  std::string command;           // at most kBackgroundCommandShownBytes, then "… (N bytes, cut)"
  bool command_truncated = false;  // the command was longer and is cut
  std::string cwd;                 // the resolved working directory
  std::chrono::system_clock::time_point start_time;
  double duration_seconds = 0.0;
  std::string error;  // the backend lost the process
  int signal = 0;     // the signal that ended it, 0 if none
};

// A copy of part of one stream, for one read.
struct StreamSlice {
  std::vector<std::string> lines;     // complete lines, oldest first, without their newlines
  std::uint64_t start_seq = 0;        // of lines.front()
  std::string tail;                   // the unterminated tail; shown, not consumed by the cursor
  std::uint64_t dropped_lines = 0;    // evicted before this reader saw them
  std::uint64_t truncated_lines = 0;  // lines cut at kBackgroundMaxLineBytes so far
  bool from_newest = false;           // no cursor: the renderer keeps the newest lines that fit
};

struct BackgroundOutput {
  std::string error;                     // "Shell not found: <id>", "invalid cursor ..."
  std::size_t output_cap = 1024 * 1024;  // the agent's: bounds each stream's rendered size
  BackgroundShellStatus status;
  StreamSlice stdout_slice;
  StreamSlice stderr_slice;
};

struct BackgroundStartResult {
  std::string error;       // non-empty: not started (MassGen's texts)
  std::string blocked_by;  // a filter refused the command (error starts "Command validation error")
  std::string rule;
  BackgroundShellStatus status;
};

struct BackgroundKillResult {
  std::string error;
  BackgroundShellStatus status;
  bool was_running = false;  // false: it had ended already ("Process already terminated")
  bool forced = false;       // the KILL phase was needed
};

}  // namespace execmcp::host
