// How much of one source of untrusted lines (a runner's stderr) reaches a log: bounded and
// escaped, so that what a command writes can neither fill the host's disk through the log nor
// forge or garble its lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace execmcp::plugins::runner_client {

// At most `max_lines` lines and `max_bytes` bytes of them, each line cut at `line_max` and
// escaped with the SDK's log_text() (execmcp/sdk/log_text.hpp); past that, bytes are only counted.
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

}  // namespace execmcp::plugins::runner_client
