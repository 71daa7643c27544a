// Makes arbitrary bytes (command output, file content) safe to put into JSON as UTF-8 text.
#pragma once

#include <string>
#include <string_view>

namespace execmcp::host {

inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

[[nodiscard]] bool is_valid_utf8(std::string_view bytes) noexcept;

// Copies `bytes`, replacing each maximal ill-formed subsequence with U+FFFD (the Unicode
// "substitution of maximal subparts" practice, the same as Python's errors="replace").
[[nodiscard]] std::string sanitize_utf8(std::string_view bytes);

// How many bytes `utf8` (valid UTF-8) takes inside a JSON string as nlohmann::json dumps it
// (ensure_ascii off): '"', '\\' and \b \f \n \r \t take 2, other bytes below 0x20 take 6
// (\u00XX), everything else its own size.
[[nodiscard]] std::size_t json_escaped_size(std::string_view utf8) noexcept;

// sanitize_utf8, stopped (between two characters) before the result's JSON-escaped size would
// pass `budget` bytes; `cut` says whether anything was left out. Bounds what a stream of bytes
// can cost in a response: at most `budget` bytes, whatever the bytes are.
// `consumed`, when given, receives how many bytes of the input the result stands for.
[[nodiscard]] std::string sanitize_utf8_within(std::string_view bytes, std::size_t budget,
                                               bool& cut, std::size_t* consumed = nullptr);

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

}  // namespace execmcp::host
