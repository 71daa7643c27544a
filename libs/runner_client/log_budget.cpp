// See log_budget.hpp.
#include "runner_client/log_budget.hpp"

#include "execmcp/sdk/log_text.hpp"

namespace execmcp::plugins::runner_client {

LogBudget::LogBudget(std::size_t max_lines, std::size_t max_bytes, std::size_t line_max)
    : lines_left_(max_lines), bytes_left_(max_bytes), line_max_(line_max) {}

std::optional<std::string> LogBudget::take(std::string_view line, std::size_t cut) {
  if (!spent_) {
    std::string text = sdk::log_text(line, line_max_, cut);
    if (lines_left_ > 0 && text.size() <= bytes_left_) {
      --lines_left_;
      bytes_left_ -= text.size();
      return text;
    }
    spent_ = true;
  }
  dropped_ += line.size() + cut;
  return std::nullopt;
}

bool LogBudget::just_spent() {
  if (!spent_ || said_) return false;
  said_ = true;
  return true;
}

}  // namespace execmcp::plugins::runner_client
