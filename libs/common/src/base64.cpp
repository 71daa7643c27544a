// See base64.hpp.
#include "execmcp/common/base64.hpp"

namespace execmcp::common {
namespace {

const char* digits(Base64Alphabet alphabet) {
  return alphabet == Base64Alphabet::Url
             ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
             : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

// The value of digit `c`, or -1.
int value_of(char c, Base64Alphabet alphabet) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  const bool url = alphabet == Base64Alphabet::Url;
  if (c == (url ? '-' : '+')) return 62;
  if (c == (url ? '_' : '/')) return 63;
  return -1;
}

}  // namespace

std::string base64_encode(std::string_view bytes, Base64Alphabet alphabet) {
  const char* const kDigits = digits(alphabet);
  const bool pad = alphabet == Base64Alphabet::Standard;
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto byte = [&](std::size_t at) {
    return static_cast<unsigned>(static_cast<unsigned char>(bytes[at]));
  };
  for (; i + 3 <= bytes.size(); i += 3) {
    const unsigned v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kDigits[(v >> shift) & 63]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    unsigned v = byte(i) << 16;
    if (rest == 2) v |= byte(i + 1) << 8;
    out.push_back(kDigits[(v >> 18) & 63]);
    out.push_back(kDigits[(v >> 12) & 63]);
    if (rest == 2) out.push_back(kDigits[(v >> 6) & 63]);
    if (pad) out.append(rest == 2 ? "=" : "==");
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text, Base64Alphabet alphabet) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  out.reserve(text.size() * 3 / 4 + 3);
  unsigned buffer = 0;
  int bits = 0;
  for (const char c : text) {
    const int value = value_of(c, alphabet);
    if (value < 0) return std::nullopt;
    buffer = (buffer << 6) | static_cast<unsigned>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  if (bits >= 6) return std::nullopt;  // one leftover digit cannot encode a byte
  return out;
}

}  // namespace execmcp::common
