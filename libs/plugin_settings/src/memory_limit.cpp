// Memory-size parsing (see memory_limit.hpp).
#include "execmcp/plugins/plugin_settings/memory_limit.hpp"

#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace execmcp::plugins::plugin_settings {

std::int64_t parse_memory_limit(std::string_view text) {
  auto fail = [&]() -> std::int64_t {
    throw std::invalid_argument("invalid memory size '" + std::string(text) + "': expected " +
                                kMemoryLimitForms);
  };
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.empty()) return fail();

  std::int64_t multiplier = 1;
  char last = static_cast<char>(std::tolower(static_cast<unsigned char>(s.back())));
  if (std::isalpha(static_cast<unsigned char>(last))) {
    // Docker also accepts "512mb" / "2gb"; strip a trailing b after a unit letter.
    if (last == 'b' && s.size() >= 2 && std::isalpha(static_cast<unsigned char>(s[s.size() - 2]))) {
      s.remove_suffix(1);
      last = static_cast<char>(std::tolower(static_cast<unsigned char>(s.back())));
    }
    switch (last) {
      case 'b':
        multiplier = 1;
        break;
      case 'k':
        multiplier = std::int64_t{1} << 10;
        break;
      case 'm':
        multiplier = std::int64_t{1} << 20;
        break;
      case 'g':
        multiplier = std::int64_t{1} << 30;
        break;
      default:
        return fail();
    }
    s.remove_suffix(1);
  }
  if (s.empty()) return fail();

  // Digits with at most one '.', fractions only with a unit ("1.5g").
  bool seen_dot = false;
  for (char c : s) {
    if (c == '.') {
      if (seen_dot) return fail();
      seen_dot = true;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return fail();
    }
  }
  if (s.front() == '.' || s.back() == '.') return fail();
  if (seen_dot && multiplier == 1) return fail();

  const long double value = std::stold(std::string(s)) * static_cast<long double>(multiplier);
  if (!std::isfinite(value) ||
      value >= static_cast<long double>(std::numeric_limits<std::int64_t>::max()))
    return fail();
  const auto bytes = static_cast<std::int64_t>(value);
  if (bytes <= 0) return fail();
  return bytes;
}

}  // namespace execmcp::plugins::plugin_settings
