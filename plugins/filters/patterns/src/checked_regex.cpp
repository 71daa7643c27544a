#include "execmcp/plugins/patterns/checked_regex.hpp"

#include <cctype>
#include <stdexcept>

namespace execmcp::plugins::patterns {
namespace {

bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

// At `source[at] == '{'`: checks each count of a `{n}`, `{n,}` or `{n,m}` starting here against
// kMaxRegexRepeat before std::regex reads it. Called for every `{`, escaped or inside a bracket
// class too: refusing a literal `{99999` is harmless, missing a quantifier is not.
void check_braces(const std::string& source, std::size_t at) {
  std::size_t i = at + 1;
  while (i < source.size() && (is_digit(source[i]) || source[i] == ',')) {
    if (is_digit(source[i])) {
      std::size_t start = i;
      while (i < source.size() && is_digit(source[i])) ++i;
      // Compare as text first: the number may not fit any integer type.
      std::size_t first = source.find_first_not_of('0', start);
      std::size_t digits = first == std::string::npos || first >= i ? 0 : i - first;
      if (digits > 4 || (digits > 0 && std::stol(source.substr(first, digits)) > kMaxRegexRepeat))
        throw std::invalid_argument("repetition count '" + source.substr(start, i - start) +
                                    "' is larger than " + std::to_string(kMaxRegexRepeat));
      continue;
    }
    ++i;
  }
}

}  // namespace

std::regex compile_checked_regex(const std::string& source) {
  if (source.size() > kMaxRegexBytes)
    throw std::invalid_argument("the pattern is " + std::to_string(source.size()) +
                                " bytes; at most " + std::to_string(kMaxRegexBytes) +
                                " are accepted");
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '{') check_braces(source, i);
  }
  // Parentheses inside a bracket class count too: over-counting refuses only absurd patterns.
  std::size_t depth = 0;
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\\') {
      // A backreference `\N`: libstdc++ reads N into a `long` as unchecked as a repetition count.
      std::size_t end = i + 1;
      while (end < source.size() && is_digit(source[end])) ++end;
      if (end - (i + 1) > kMaxRegexBackrefDigits)
        throw std::invalid_argument("backreference '" + source.substr(i, end - i) +
                                    "' has more than " + std::to_string(kMaxRegexBackrefDigits) +
                                    " digits");
      ++i;  // an escaped parenthesis is a literal, not a group
    } else if (source[i] == '(') {
      if (++depth > kMaxRegexGroupDepth)
        throw std::invalid_argument("groups are nested more than " +
                                    std::to_string(kMaxRegexGroupDepth) + " deep");
    } else if (source[i] == ')' && depth > 0) {
      --depth;
    }
  }
  try {
    return std::regex(source, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument(e.what());
  }
}

}  // namespace execmcp::plugins::patterns
