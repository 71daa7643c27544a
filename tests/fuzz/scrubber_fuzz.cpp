// libFuzzer target: the response scrubber on any bytes with encodings of a fixed secret mixed in,
// fed in pieces the input chooses. The streamed output must equal scrub() of the whole, keep its
// length, and hold no raw, base64, base64url, percent or JSON form of the value; the inflater must
// survive any bytes within its limit.
//
// Input: 4 bytes seeding the chunk sizes, then the text, where byte 1 followed by a selector byte
// k stands for form k of the value (k % 9: raw, percent upper/lower, JSON with/without "\/", then
// base64 and base64url of 0-2 bytes of the input, the value and what follows, to the next byte 1).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "execmcp/common/base64.hpp"
#include "execmcp/egress_secrets/scrubber.hpp"

namespace es = execmcp::egress_secrets;
using execmcp::common::base64_encode;
using execmcp::common::Base64Alphabet;

namespace {

const es::SecretRule& secret() {
  static const es::SecretRule rule{"TOKEN",
                                   "ghp_Ab/cd+ef\"gh:ij\\kl.mn~0123456789XYZ",
                                   "ghp_Q7/x2+Lp\"Rw:9k\\Tz.b4~Hs6N1vYc8JmEq",
                                   {"api.test"},
                                   "",
                                   {},
                                   {},
                                   false};
  return rule;
}

std::string percent(std::string_view s, bool lower) {
  const char* hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
  std::string out;
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += hex[b >> 4];
      out += hex[b & 15];
    }
  }
  return out;
}

std::string json(std::string_view s, bool slash) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\' || (slash && c == '/')) out += '\\';
    out += c;
  }
  return out;
}

std::string core(std::string_view bytes, std::size_t alignment, Base64Alphabet alphabet) {
  const auto digits = base64_encode(std::string(alignment, '\0') + std::string(bytes), alphabet);
  const std::size_t first = (8 * alignment + 5) / 6, end = 8 * (alignment + bytes.size()) / 6;
  return digits.substr(first, end - first);
}

std::string text_of(std::string_view raw) {
  const std::string& v = secret().value;
  std::string out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != 1 || i + 1 == raw.size()) {
      out += raw[i];
      continue;
    }
    const auto kind = static_cast<unsigned char>(raw[++i]) % 9;
    const std::string forms[] = {v, percent(v, false), percent(v, true), json(v, true),
                                 json(v, false)};
    if (kind < 5) {
      out += forms[kind];
      continue;
    }
    // base64 of <up to 2 bytes> value <bytes to the next 1>, in the chosen alphabet.
    const std::size_t lead = std::min<std::size_t>(kind % 3, raw.size() - i - 1);
    std::string plain(raw.substr(i + 1, lead));
    i += lead;
    plain += v;
    const std::size_t stop = std::min(raw.find('\1', i + 1), raw.size());
    plain += raw.substr(i + 1, stop - i - 1);
    i = stop - 1;
    out += base64_encode(plain, kind >= 7 ? Base64Alphabet::Url : Base64Alphabet::Standard);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4 || size > 16384) return 0;
  std::mt19937 cuts(
      static_cast<std::uint32_t>(data[0] | data[1] << 8 | data[2] << 16 | data[3] << 24));
  const std::string_view raw(reinterpret_cast<const char*>(data) + 4, size - 4);
  const std::string text = text_of(raw);

  es::Scrubber whole_scrubber({secret()});
  const std::string whole = whole_scrubber.scrub(text);
  es::Scrubber scrubber({secret()});
  std::string streamed;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t piece = cuts() % (2 * scrubber.longest_pattern() + 2);
    streamed += scrubber.feed(std::string_view(text).substr(at, piece));
    at += piece;
  }
  streamed += scrubber.finish();
  if (streamed != whole || whole.size() != text.size() ||
      scrubber.replacements() != whole_scrubber.replacements())
    std::abort();

  const std::string& v = secret().value;
  std::vector<std::string> forms = {v, percent(v, false), percent(v, true), json(v, true),
                                    json(v, false)};
  for (const auto alphabet : {Base64Alphabet::Standard, Base64Alphabet::Url})
    for (std::size_t alignment = 0; alignment < 3; ++alignment)
      forms.push_back(core(v, alignment, alphabet));
  for (const auto& form : forms)
    if (whole.find(form) != std::string::npos) std::abort();

  es::Inflater inflater(1 << 20);
  try {
    (void)inflater.feed(raw.substr(0, raw.size() / 2));
    (void)inflater.feed(raw.substr(raw.size() / 2));
  } catch (const std::runtime_error&) {
  }
  return 0;
}
