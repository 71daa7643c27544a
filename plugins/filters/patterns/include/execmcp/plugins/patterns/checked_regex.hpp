// Compiling a regular expression from a config without trusting libstdc++'s std::regex compiler
// with input it handles badly. The patterns filter's rules and its settings check use it.
#pragma once

#include <cstddef>
#include <regex>
#include <string>

namespace execmcp::plugins::patterns {

// libstdc++ reads a repetition count such as `{99999999999999999999}`, and a backreference such as
// `\99999999999999999999`, into a `long` with no overflow check (undefined behaviour), compiles
// groups recursively (a deep `((((...` overflows the stack) and expands `x{n}` into n copies. These
// bounds are far beyond any useful pattern.
inline constexpr std::size_t kMaxRegexBytes = 4096;
inline constexpr std::size_t kMaxRegexGroupDepth = 32;
inline constexpr long kMaxRegexRepeat = 1000;
inline constexpr std::size_t kMaxRegexBackrefDigits = 3;

// Checks `source` against the bounds above, then compiles it as ECMAScript. Throws
// std::invalid_argument with a plain-words reason (std::regex_error's text included when the
// compiler itself refuses the pattern).
[[nodiscard]] std::regex compile_checked_regex(const std::string& source);

}  // namespace execmcp::plugins::patterns
