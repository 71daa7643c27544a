// Untrusted bytes on their way to a log line (a command's output, an engine's error text, a
// client's string): bounded and escaped, so they can neither fill a disk through the log nor
// forge or garble its lines. The host's logger applies the same rules to every record; a backend
// that logs what a command or an engine said should pass it through log_text() first.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace execmcp::sdk {

namespace log_text_detail {

// The length of the valid UTF-8 sequence at the start of `s` (1 to 4), or 0 when there is none
// (RFC 3629's table: no overlong forms, no surrogates, nothing above U+10FFFF).
inline std::size_t utf8_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
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

}  // namespace log_text_detail

// `bytes` as one safe log line: every byte below 0x20, DEL, a C1 control (U+0080 to U+009F, which
// some terminals obey) and every byte that is not part of valid UTF-8 written as \xNN, so no
// newline, carriage return or terminal escape passes; at most `max` bytes of escaped text, then
// " ... (N more bytes not logged)". Escaping escaped text changes nothing ('\' itself is kept).
// `more`: bytes that came after `bytes` and were not kept, counted in that ending.
inline std::string log_text(std::string_view bytes, std::size_t max = 1024, std::size_t more = 0) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(std::min(bytes.size(), max) + 16);
  std::size_t i = 0;
  while (i < bytes.size()) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    std::size_t n = c >= 0x20 && c < 0x7f ? 1
                    : c >= 0x80           ? log_text_detail::utf8_length(bytes.substr(i))
                                          : 0;
    // U+0080 to U+009F (C2 80 to C2 9F): C1 controls (CSI is 9B).
    if (n == 2 && c == 0xc2 && static_cast<unsigned char>(bytes[i + 1]) < 0xa0) n = 0;
    if (out.size() + (n == 0 ? 4 : n) > max) break;
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

}  // namespace execmcp::sdk
