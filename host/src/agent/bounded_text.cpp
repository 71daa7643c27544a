// Bounded and escaped text for logs and audit records (see bounded_text.hpp).
#include "agent/bounded_text.hpp"

#include <algorithm>

namespace execmcp::host {

namespace {

// Room kept for a marker: "… (" + 20 digits + " bytes, cut)" is 37 bytes,
// " ... (" + 20 digits + " more bytes not logged)" 49.
constexpr std::size_t kMarkerRoom = 56;

bool is_continuation(char byte) {
  return (static_cast<unsigned char>(byte) & 0xC0) == 0x80;
}

// The length of the valid UTF-8 sequence at the start of `s` (1 to 4), or 0 when there is none
// (Unicode Table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF).
std::size_t utf8_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = b(0);
  if (lead < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;  // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i) {
    if (!is_continuation(s[i])) return 0;
  }
  return n;
}

// Escapes `text` into `out` until the next piece would pass `limit` bytes; returns the input
// bytes consumed.
std::size_t escape_into(std::string& out, std::string_view text, std::size_t limit) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t n = c >= 0x20 && c < 0x7F ? 1 : c >= 0x80 ? utf8_length(text.substr(i)) : 0;
    // U+0080 to U+009F (C2 80 to C2 9F): C1 controls (CSI is 9B).
    if (n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) n = 0;
    if (out.size() + (n == 0 ? 4 : n) > limit) break;
    if (n == 0) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return i;
}

}  // namespace

std::string cut_text(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  const std::string marker = "\xE2\x80\xA6 (" + std::to_string(text.size()) + " bytes, cut)";
  std::size_t keep = max_bytes > marker.size() ? max_bytes - marker.size() : 0;
  // Back to the start of the character the cut falls in (valid UTF-8 has at most 3 continuation
  // bytes; invalid bytes are not worth looking further for).
  for (int i = 0; i < 3 && keep > 0 && is_continuation(text[keep]); ++i) --keep;
  std::string out(text.substr(0, keep));
  out += marker;
  return out;
}

std::string log_safe_text(std::string_view text, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 16);
  if (escape_into(out, text, max_bytes) == text.size()) return out;
  // Too long: again, leaving room for the marker.
  out.clear();
  const std::size_t consumed =
      escape_into(out, text, max_bytes > kMarkerRoom ? max_bytes - kMarkerRoom : 0);
  out += " ... (" + std::to_string(text.size() - consumed) + " more bytes not logged)";
  return out;
}

}  // namespace execmcp::host
