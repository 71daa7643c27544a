// Makes arbitrary bytes (command output, file content) safe to put into JSON as UTF-8 text.
#pragma once

#include <string>
#include <string_view>

namespace execmcp::host::mcp {

inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

[[nodiscard]] bool is_valid_utf8(std::string_view bytes) noexcept;

// Copies `bytes`, replacing each maximal ill-formed subsequence with U+FFFD (the Unicode
// "substitution of maximal subparts" practice, the same as Python's errors="replace").
[[nodiscard]] std::string sanitize_utf8(std::string_view bytes);

// The same for a byte stream that arrives in chunks split anywhere: an incomplete sequence at the
// end of a chunk is held back and completed by the next chunk instead of being replaced.
class Utf8StreamSanitizer {
 public:
  [[nodiscard]] std::string feed(std::string_view chunk);
  // Ends the stream: a held-back incomplete sequence becomes U+FFFD.
  [[nodiscard]] std::string finish();

 private:
  std::string carry_;
};

}  // namespace execmcp::host::mcp
