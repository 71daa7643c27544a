// See scrubber.hpp. The patterns of a secret are the forms of its value a response may carry, each
// paired with the same form of its placeholder (equal length, since a placeholder keeps every byte
// that is not a letter or digit). A text is scanned left to right and, at each position, the
// longest pattern that starts there is replaced; the scan then resumes after it.
//
// Streaming: a position is decided once every pattern starting there would fit in what has been
// read, so a chunk is scanned up to its last longest_ - 1 bytes and those are held back for the
// next one. Every decision is then the one a scan of the whole text makes, so any split of a text
// gives scrub(text).
#include "execmcp/egress_secrets/scrubber.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include "execmcp/common/base64.hpp"

namespace execmcp::egress_secrets {
namespace {

using common::base64_encode;
using common::Base64Alphabet;

// The base64 digits of `bytes` written `alignment` bytes into a longer text, keeping only those
// whose six bits all come from `bytes` (the one or two digits at each edge mix in bits of the
// neighbours, which differ from text to text).
std::string base64_core(std::string_view bytes, std::size_t alignment, Base64Alphabet alphabet) {
  std::string padded(alignment, '\0');
  padded += bytes;
  std::string digits = base64_encode(padded, alphabet);
  const std::size_t first = (8 * alignment + 5) / 6;
  const std::size_t end = 8 * padded.size() / 6;
  return end > first ? digits.substr(first, end - first) : std::string();
}

// As encodeURIComponent writes it: unreserved bytes kept, every other byte %XX.
std::string percent_encoded(std::string_view bytes, bool lower_hex) {
  const char* const hex = lower_hex ? "0123456789abcdef" : "0123456789ABCDEF";
  std::string out;
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved) {
      out += c;
    } else {
      out += '%';
      out += hex[byte >> 4];
      out += hex[byte & 15];
    }
  }
  return out;
}

// As a JSON string's contents: '"', '\\' and control bytes escaped, '/' as "\/" or as itself.
std::string json_escaped(std::string_view bytes, bool escape_slash) {
  std::string out;
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '/':
        out += escape_slash ? "\\/" : "/";
        break;
      default:
        if (byte < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[byte >> 4];
          out += kHex[byte & 15];
        } else {
          out += c;
        }
    }
  }
  return out;
}

// Where the patterns starting with each byte begin in a list sorted by first byte: bucket b is
// [start[b], start[b + 1]).
template <class Patterns>
std::array<std::size_t, 257> buckets(const Patterns& patterns) {
  std::array<std::size_t, 257> start{};
  for (const auto& p : patterns) ++start[static_cast<unsigned char>(p.from[0]) + 1];
  for (std::size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
  return start;
}

// Appends to `out` the scrubbed text up to where the scan stopped, and returns that index: the
// first position at or after `limit` that no replacement covers. Patterns are sorted by first
// byte, then longest first.
template <class Patterns>
std::size_t scan(std::string_view text, std::size_t limit, const Patterns& patterns,
                 std::string& out, std::size_t& replacements) {
  const auto start = buckets(patterns);
  std::size_t emitted = 0, at = 0;
  while (at < limit && at < text.size()) {
    const auto first = static_cast<unsigned char>(text[at]);
    bool replaced = false;
    for (std::size_t i = start[first]; i < start[first + 1] && !replaced; ++i) {
      const auto& p = patterns[i];
      if (p.from.size() > text.size() - at ||
          std::memcmp(text.data() + at, p.from.data(), p.from.size()) != 0)
        continue;
      out.append(text.substr(emitted, at - emitted));
      out.append(p.to);
      at += p.from.size();
      emitted = at;
      ++replacements;
      replaced = true;
    }
    if (!replaced) ++at;
  }
  out.append(text.substr(emitted, at - emitted));
  return at;
}

}  // namespace

Scrubber::Scrubber(const std::vector<SecretRule>& secrets) {
  auto add = [this](std::string from, std::string to) {
    if (from.empty() || from == to) return;
    for (const auto& p : patterns_)
      if (p.from == from) return;
    longest_ = std::max(longest_, from.size());
    patterns_.push_back({std::move(from), std::move(to)});
  };
  for (const auto& secret : secrets) {
    const std::string_view value = secret.value, placeholder = secret.placeholder;
    if (value.size() != placeholder.size())
      throw std::invalid_argument("secret " + secret.name +
                                  ": placeholder and value differ in length");
    add(std::string(value), std::string(placeholder));
    for (const auto alphabet : {Base64Alphabet::Standard, Base64Alphabet::Url})
      for (std::size_t alignment = 0; alignment < 3; ++alignment)
        add(base64_core(value, alignment, alphabet), base64_core(placeholder, alignment, alphabet));
    for (const bool lower_hex : {false, true})
      add(percent_encoded(value, lower_hex), percent_encoded(placeholder, lower_hex));
    for (const bool escape_slash : {true, false})
      add(json_escaped(value, escape_slash), json_escaped(placeholder, escape_slash));
  }
  std::stable_sort(patterns_.begin(), patterns_.end(), [](const Pattern& a, const Pattern& b) {
    const auto fa = static_cast<unsigned char>(a.from[0]);
    const auto fb = static_cast<unsigned char>(b.from[0]);
    return fa != fb ? fa < fb : a.from.size() > b.from.size();
  });
}

std::string Scrubber::feed(std::string_view chunk) {
  std::string text = std::move(tail_);
  text.append(chunk);
  const std::size_t hold = longest_ > 0 ? longest_ - 1 : 0;
  const std::size_t limit = text.size() > hold ? text.size() - hold : 0;
  std::string out;
  const std::size_t stopped = scan(text, limit, patterns_, out, replacements_);
  tail_ = text.substr(stopped);
  return out;
}

std::string Scrubber::finish() {
  std::string out;
  scan(tail_, tail_.size(), patterns_, out, replacements_);
  tail_.clear();
  return out;
}

std::string Scrubber::scrub(std::string_view text) {
  std::string out;
  scan(text, text.size(), patterns_, out, replacements_);
  return out;
}

// Inflater ------------------------------------------------------------------------------------

struct Inflater::State {
  z_stream stream{};
  bool started = false;
  bool done = false;
  std::string first_bytes;  // until there are two, which tell a zlib or gzip header from none
  std::size_t limit = 0;
  std::size_t total = 0;
};

Inflater::Inflater(std::size_t limit) : state_(new State) {
  state_->limit = limit;
}

Inflater::~Inflater() {
  if (state_->started) inflateEnd(&state_->stream);
  delete state_;
}

bool Inflater::done() const noexcept {
  return state_->done;
}

std::string Inflater::feed(std::string_view compressed) {
  State& s = *state_;
  if (s.done) return {};  // what follows the end (a second gzip member, padding) is not read
  std::string pending;
  if (!s.started) {
    s.first_bytes.append(compressed);
    if (s.first_bytes.size() < 2) return {};
    const auto b0 = static_cast<unsigned char>(s.first_bytes[0]);
    const auto b1 = static_cast<unsigned char>(s.first_bytes[1]);
    const bool gzip = b0 == 0x1f && b1 == 0x8b;
    const bool zlib = (b0 & 0x0f) == 8 && (b0 >> 4) <= 7 && ((b0 << 8) | b1) % 31 == 0;
    // 15 + 32: zlib or gzip, told by the header; -15: raw deflate, as some servers send "deflate".
    if (inflateInit2(&s.stream, gzip || zlib ? 15 + 32 : -15) != Z_OK)
      throw std::runtime_error("cannot start inflating the body");
    s.started = true;
    pending = std::move(s.first_bytes);
    compressed = pending;
  }
  if (compressed.size() > std::size_t{1} << 30)
    throw std::runtime_error("a compressed chunk larger than 1 GiB");
  s.stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  s.stream.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  std::array<char, 16 * 1024> buffer;
  while (true) {
    s.stream.next_out = reinterpret_cast<Bytef*>(buffer.data());
    s.stream.avail_out = static_cast<uInt>(buffer.size());
    const int rc = inflate(&s.stream, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
      throw std::runtime_error("the compressed body is corrupt");
    const std::size_t produced = buffer.size() - s.stream.avail_out;
    s.total += produced;
    if (s.total > s.limit)
      throw std::runtime_error("the inflated body is larger than " + std::to_string(s.limit) +
                               " bytes");
    out.append(buffer.data(), produced);
    if (rc == Z_STREAM_END) {
      s.done = true;
      break;
    }
    if (rc == Z_BUF_ERROR || (s.stream.avail_in == 0 && s.stream.avail_out != 0)) break;
  }
  s.stream.next_in = nullptr;
  s.stream.avail_in = 0;
  return out;
}

}  // namespace execmcp::egress_secrets
