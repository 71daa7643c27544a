// A JSON parser for text someone else shapes (a client's message, a helper's output in an agent's
// sandbox): no recursion, and it stops as soon as the text passes a size, depth or value bound.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

namespace execmcp::host {

// What one text may cost. Checked while parsing, so a text past a bound is refused before it is
// built: memory is about max_bytes (the text) + max_bytes (its strings) + max_values * ~150 bytes,
// and no code ever recurses deeper than max_depth over it.
struct JsonLimits {
  static constexpr std::size_t kDefaultMaxBytes = 8 * 1024 * 1024;
  static constexpr std::size_t kDefaultMaxValues = 10000;
  static constexpr std::size_t kDefaultMaxDepth = 64;

  std::size_t max_bytes = kDefaultMaxBytes;    // one text (a line, without its newline)
  std::size_t max_values = kDefaultMaxValues;  // JSON values and object keys in one text
  std::size_t max_depth = kDefaultMaxDepth;    // nested objects and arrays
};

// Why parse_bounded_json() refused a text.
struct JsonRefusal {
  enum class Kind { kSyntax, kTooLong, kTooDeep, kTooManyValues };
  Kind kind = Kind::kSyntax;
  std::size_t position = 0;  // kSyntax: the byte where the text stopped being JSON
  // The top-level member named by `watch` as read before the parser stopped (else null).
  nlohmann::json watched;
};

// Parses `text` within `limits`. A text longer than max_bytes is read up to max_bytes (for
// `watch`'s member) and refused. Pure: no I/O, no threads, no global state.
[[nodiscard]] std::variant<nlohmann::json, JsonRefusal> parse_bounded_json(
    std::string_view text, const JsonLimits& limits, std::string_view watch = {});

}  // namespace execmcp::host
