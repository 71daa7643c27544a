// Bytes from a container or an engine on their way to a log: bounded and escaped, so that what a
// command writes can neither fill the host's disk through the log nor forge or garble its lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace execmcp::plugins::docker_common {

// The most one untrusted field adds to a log line, and the most one log message holds.
inline constexpr std::size_t kLogFieldMax = 1024;
inline constexpr std::size_t kLogMessageMax = 16 * 1024;

// `bytes` as one safe log line: every byte below 0x20, DEL, a C1 control (U+0080 to U+009F) and
// every byte that is not part of valid UTF-8 written as \xNN (so no newline, carriage return or
// terminal escape passes); at most `max` bytes of output, then " ... (N more bytes not logged)".
// Escaping escaped text changes nothing ('\' itself is kept as it is). `more`: bytes that came
// after `bytes` and were not kept, counted in that ending.
std::string log_text(std::string_view bytes, std::size_t max = kLogFieldMax, std::size_t more = 0);

// How much of one source of untrusted lines (one runner's stderr) reaches the log: at most
// `max_lines` lines and `max_bytes` bytes of them, each line cut at `line_max`; past that, bytes
// are only counted.
class LogBudget {
 public:
  LogBudget(std::size_t max_lines, std::size_t max_bytes, std::size_t line_max);
  // The line as it may be logged, or nullopt once the budget is spent (its bytes are counted).
  // `cut`: bytes of the line that were not kept (said at its end).
  std::optional<std::string> take(std::string_view line, std::size_t cut = 0);
  // True once, on the first line refused: the moment to say that the rest is not logged.
  bool just_spent();
  // Counts bytes that were refused without a line of their own (a refused line's newline).
  void count(std::size_t bytes) {
    if (spent_) dropped_ += bytes;
  }
  // Bytes refused so far.
  [[nodiscard]] std::uint64_t dropped() const { return dropped_; }

 private:
  std::size_t lines_left_, bytes_left_, line_max_;
  std::uint64_t dropped_ = 0;
  bool spent_ = false, said_ = false;
};

}  // namespace execmcp::plugins::docker_common
