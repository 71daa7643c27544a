// See log_text.hpp.
#include "docker_common/log_text.hpp"

#include <algorithm>

namespace execmcp::plugins::docker_common {

namespace {

// The length of the valid UTF-8 sequence at the start of `s` (1 to 4), or 0 when there is none.
std::size_t utf8_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range (RFC 3629's table)
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;  // no surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if (b(i) < 0x80 || b(i) > 0xbf) return 0;
  return n;
}

}  // namespace

std::string log_text(std::string_view bytes, std::size_t max, std::size_t more) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(std::min(bytes.size(), max) + 16);
  std::size_t i = 0;
  while (i < bytes.size()) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    std::size_t n = c >= 0x20 && c < 0x7f ? 1 : c >= 0x80 ? utf8_length(bytes.substr(i)) : 0;
    // U+0080 to U+009F (C2 80 to C2 9F): C1 controls, which some terminals obey (CSI is 9B).
    if (n == 2 && c == 0xc2 && static_cast<unsigned char>(bytes[i + 1]) < 0xa0) n = 0;
    const std::size_t room = n == 0 ? 4 : n;
    if (out.size() + room > max) break;
    if (n == 0) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  more += bytes.size() - i;
  if (more > 0) out += " ... (" + std::to_string(more) + " more bytes not logged)";
  return out;
}

LogBudget::LogBudget(std::size_t max_lines, std::size_t max_bytes, std::size_t line_max)
    : lines_left_(max_lines), bytes_left_(max_bytes), line_max_(line_max) {}

std::optional<std::string> LogBudget::take(std::string_view line, std::size_t cut) {
  if (!spent_) {
    std::string text = log_text(line, line_max_, cut);
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

}  // namespace execmcp::plugins::docker_common
