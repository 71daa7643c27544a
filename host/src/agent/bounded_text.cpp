// Bounded and escaped text for logs and audit records (see bounded_text.hpp).
#include "agent/bounded_text.hpp"

#include "execmcp/sdk/log_text.hpp"

namespace execmcp::host {

namespace {

// Room kept for a marker: "… (" + 20 digits + " bytes, cut)" is 37 bytes,
// " ... (" + 20 digits + " more bytes not logged)" 49.
constexpr std::size_t kMarkerRoom = 56;

bool is_continuation(char byte) {
  return (static_cast<unsigned char>(byte) & 0xC0) == 0x80;
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
  std::string out = sdk::log_text(text, max_bytes);
  if (out.size() <= max_bytes) return out;
  // Too long: again, leaving room for the marker, so the whole line stays within max_bytes.
  return sdk::log_text(text, max_bytes > kMarkerRoom ? max_bytes - kMarkerRoom : 0);
}

}  // namespace execmcp::host
