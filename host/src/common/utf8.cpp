// UTF-8 validation and replacement of ill-formed sequences (see utf8.hpp).
#include "common/utf8.hpp"

#include <cstdint>

namespace execmcp::host {
namespace {

enum class Step { Valid, Invalid, Incomplete };

struct Decoded {
  Step step;
  std::size_t length;  // bytes consumed: the whole sequence, or the ill-formed maximal subpart
};

// Looks at the sequence starting at bytes[pos] (Unicode Table 3-7, well-formed byte sequences).
Decoded decode_at(std::string_view bytes, std::size_t pos) noexcept {
  const auto lead = static_cast<std::uint8_t>(bytes[pos]);
  if (lead < 0x80) return {Step::Valid, 1};
  std::size_t need = 0;
  std::uint8_t lo = 0x80;
  std::uint8_t hi = 0xBF;  // allowed range of the first continuation byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 1;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 2;
    if (lead == 0xE0) lo = 0xA0;  // no overlong forms
    if (lead == 0xED) hi = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 3;
    if (lead == 0xF0) lo = 0x90;  // no overlong forms
    if (lead == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {Step::Invalid, 1};
  }
  std::size_t i = 1;
  for (; i <= need; ++i) {
    if (pos + i >= bytes.size()) return {Step::Incomplete, i};
    const auto byte = static_cast<std::uint8_t>(bytes[pos + i]);
    const std::uint8_t min = i == 1 ? lo : 0x80;
    const std::uint8_t max = i == 1 ? hi : 0xBF;
    if (byte < min || byte > max) return {Step::Invalid, i};
  }
  return {Step::Valid, need + 1};
}

// Appends the sanitized form of `bytes`; returns how many trailing bytes form an incomplete (but
// so far well-formed) sequence that was not consumed when `hold_incomplete` is set.
std::size_t sanitize_into(std::string& out, std::string_view bytes, bool hold_incomplete) {
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const Decoded d = decode_at(bytes, pos);
    switch (d.step) {
      case Step::Valid:
        out.append(bytes.substr(pos, d.length));
        break;
      case Step::Invalid:
        out.append(kReplacementCharacter);
        break;
      case Step::Incomplete:
        if (hold_incomplete) return bytes.size() - pos;
        out.append(kReplacementCharacter);
        break;
    }
    pos += d.length;
  }
  return 0;
}

// The JSON-escaped size of one character that starts with `lead` and is `length` bytes long.
std::size_t escaped_size(unsigned char lead, std::size_t length) noexcept {
  if (length != 1) return length;
  if (lead == '"' || lead == '\\') return 2;
  if (lead == '\b' || lead == '\f' || lead == '\n' || lead == '\r' || lead == '\t') return 2;
  return lead < 0x20 ? 6 : 1;
}

}  // namespace

std::size_t json_escaped_size(std::string_view utf8) noexcept {
  std::size_t size = 0;
  std::size_t pos = 0;
  while (pos < utf8.size()) {
    const Decoded d = decode_at(utf8, pos);
    const std::size_t length = d.step == Step::Valid ? d.length : kReplacementCharacter.size();
    size += escaped_size(static_cast<unsigned char>(utf8[pos]), length);
    pos += d.length;
  }
  return size;
}

std::string sanitize_utf8_within(std::string_view bytes, std::size_t budget, bool& cut,
                                 std::size_t* consumed) {
  std::string out;
  out.reserve(bytes.size() < budget ? bytes.size() : budget);
  std::size_t used = 0;
  std::size_t pos = 0;
  cut = false;
  while (pos < bytes.size()) {
    const Decoded d = decode_at(bytes, pos);
    const std::string_view piece =
        d.step == Step::Valid ? bytes.substr(pos, d.length) : kReplacementCharacter;
    const std::size_t size = escaped_size(static_cast<unsigned char>(piece[0]), piece.size());
    if (used + size > budget) {
      cut = true;
      break;
    }
    out.append(piece);
    used += size;
    pos += d.length;
  }
  if (consumed != nullptr) *consumed = pos;
  return out;
}

bool is_valid_utf8(std::string_view bytes) noexcept {
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const Decoded d = decode_at(bytes, pos);
    if (d.step != Step::Valid) return false;
    pos += d.length;
  }
  return true;
}

std::string sanitize_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  sanitize_into(out, bytes, false);
  return out;
}

std::string Utf8StreamSanitizer::feed(std::string_view chunk) {
  std::string out;
  if (carry_.empty()) {
    out.reserve(chunk.size());
    const std::size_t held = sanitize_into(out, chunk, true);
    carry_.assign(chunk.substr(chunk.size() - held));
    return out;
  }
  std::string joined = std::move(carry_);
  joined.append(chunk);
  out.reserve(joined.size());
  const std::size_t held = sanitize_into(out, joined, true);
  carry_ = joined.substr(joined.size() - held);
  return out;
}

std::string Utf8StreamSanitizer::finish() {
  std::string out;
  sanitize_into(out, carry_, false);
  carry_.clear();
  return out;
}

}  // namespace execmcp::host
