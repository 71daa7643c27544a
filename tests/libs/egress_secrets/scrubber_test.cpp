// The response scrubber: every form of a value it knows comes out as the same form of the
// placeholder, at the same length; any split of a text gives what the whole gives; and compressed
// bodies inflate (gzip, zlib, raw deflate) so that they can be scrubbed.
#include "execmcp/egress_secrets/scrubber.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cctype>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "execmcp/common/base64.hpp"
#include "execmcp/egress_secrets/placeholder.hpp"

namespace es = execmcp::egress_secrets;
using execmcp::common::base64_decode;
using execmcp::common::base64_encode;
using execmcp::common::Base64Alphabet;

namespace {

// Punctuation that percent-encoding and JSON escaping change: '/', '+', '"', ':', '\\'.
const std::string kValue = "ghp_Ab/cd+ef\"gh:ij\\kl.mn~0123456789XYZ";

es::SecretRule rule() {
  auto engine = std::make_shared<std::mt19937>(5);
  es::SecretRule s;
  s.name = "TOKEN";
  s.value = kValue;
  s.placeholder = es::make_placeholder(kValue, [engine](unsigned char* out, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<unsigned char>((*engine)() & 0xFF);
  });
  s.hosts = {"api.test"};
  return s;
}

std::string percent(const std::string& s, bool lower) {
  const char* hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string json(const std::string& s, bool slash) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\' || (slash && c == '/')) out += '\\';
    out += c;
  }
  return out;
}

std::string streamed(es::Scrubber& scrubber, const std::string& text,
                     const std::vector<std::size_t>& cuts) {
  std::string out;
  std::size_t from = 0;
  for (const auto cut : cuts) {
    out += scrubber.feed(std::string_view(text).substr(from, cut - from));
    from = cut;
  }
  out += scrubber.feed(std::string_view(text).substr(from));
  return out + scrubber.finish();
}

// A text holding every form of the value, some of them cut short, between other bytes.
std::string every_form_text() {
  const std::string v = kValue;
  std::string text =
      "{\"echo\": \"" + json(v, true) + "\", \"plain\": \"" + json(v, false) + "\"}\n";
  text += v.substr(0, v.size() - 1) + v + v + "\n";
  text += "q=" + percent(v, false) + "&r=" + percent(v, true) + "&s=" + percent(v, false).substr(3);
  for (std::size_t prefix = 0; prefix < 4; ++prefix) {
    const std::string padded = std::string(prefix, 'p') + v + "suffix";
    text += "\nAuthorization: Basic " + base64_encode(padded);
    text += "\njwt." + base64_encode(padded, Base64Alphabet::Url) + ".sig";
  }
  return text;
}

std::string deflated(const std::string& data, int window_bits) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&z, data.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

TEST(Scrubber, ReplacesRawPercentAndJsonFormsInPlace) {
  const auto s = rule();
  const std::string& v = s.value;
  const std::string& p = s.placeholder;
  ASSERT_EQ(p.size(), v.size());
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{v, p},
                                                        {percent(v, false), percent(p, false)},
                                                        {percent(v, true), percent(p, true)},
                                                        {json(v, true), json(p, true)},
                                                        {json(v, false), json(p, false)}}) {
    es::Scrubber scrubber({s});
    const std::string text = "before " + from + " after " + from;
    EXPECT_EQ(scrubber.scrub(text), "before " + to + " after " + to) << from;
    EXPECT_EQ(scrubber.replacements(), 2u);
  }
}

TEST(Scrubber, ReplacesBase64AtEveryAlignmentInBothAlphabets) {
  const auto s = rule();
  std::mt19937 engine(9);
  for (const auto alphabet : {Base64Alphabet::Standard, Base64Alphabet::Url}) {
    for (std::size_t prefix = 0; prefix < 6; ++prefix) {
      for (std::size_t suffix = 0; suffix < 4; ++suffix) {
        std::string before(prefix, '\0'), after(suffix, '\0');
        for (auto& c : before) c = static_cast<char>(engine());
        for (auto& c : after) c = static_cast<char>(engine());
        const auto text = base64_encode(before + s.value + after, alphabet);
        es::Scrubber scrubber({s});
        const auto out = scrubber.scrub(text);
        ASSERT_EQ(out.size(), text.size());
        EXPECT_EQ(scrubber.replacements(), 1u) << prefix << " " << suffix;
        const auto decoded = base64_decode(out, alphabet);
        ASSERT_TRUE(decoded) << out;
        // Every bit of the value's bytes is in the replaced core, but a few at its two edges.
        EXPECT_NE(decoded->find(s.placeholder.substr(1, s.placeholder.size() - 2)),
                  std::string::npos)
            << prefix << " " << suffix;
        EXPECT_EQ(decoded->find(s.value.substr(1, s.value.size() - 2)), std::string::npos);
      }
    }
  }
}

TEST(Scrubber, LeavesOtherTextAlone) {
  es::Scrubber scrubber({rule()});
  const std::string text = "nothing to see " + kValue.substr(0, 20) + " here";
  EXPECT_EQ(scrubber.scrub(text), text);
  EXPECT_EQ(scrubber.replacements(), 0u);
  es::Scrubber none({});
  EXPECT_EQ(none.longest_pattern(), 0u);
  EXPECT_EQ(none.feed("abc"), "abc");
  EXPECT_EQ(none.finish(), "");
}

TEST(Scrubber, ScrubsSeveralSecrets) {
  auto a = rule();
  es::SecretRule b = a;
  b.name = "OTHER";
  b.value = "another-secret-value-012345678";  // 30 bytes: its base64 has no edge digits
  b.placeholder = "xnother-sxcret-vxlue-987654321";
  es::Scrubber scrubber({a, b});
  EXPECT_EQ(scrubber.scrub(a.value + "|" + b.value + "|" + base64_encode(b.value)),
            a.placeholder + "|" + b.placeholder + "|" + base64_encode(b.placeholder));
}

TEST(Scrubber, RefusesAPlaceholderOfAnotherLength) {
  auto s = rule();
  s.placeholder += "x";
  EXPECT_THROW(es::Scrubber({s}), std::invalid_argument);
}

TEST(Scrubber, AnySplitGivesWhatTheWholeGives) {
  const auto text = every_form_text();
  es::Scrubber whole_scrubber({rule()});
  const auto whole = whole_scrubber.scrub(text);
  ASSERT_EQ(whole.size(), text.size());
  EXPECT_EQ(whole.find(kValue), std::string::npos);
  EXPECT_GE(whole_scrubber.replacements(), 14u);
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    es::Scrubber scrubber({rule()});
    ASSERT_EQ(streamed(scrubber, text, {cut}), whole) << "cut at " << cut;
    EXPECT_EQ(scrubber.replacements(), whole_scrubber.replacements());
  }
  for (std::size_t first = 0; first <= text.size(); first += 3) {
    for (std::size_t second = first; second <= text.size(); second += 17) {
      es::Scrubber scrubber({rule()});
      ASSERT_EQ(streamed(scrubber, text, {first, second}), whole) << first << " " << second;
    }
  }
  std::vector<std::size_t> every_byte;
  for (std::size_t cut = 1; cut < text.size(); ++cut) every_byte.push_back(cut);
  es::Scrubber scrubber({rule()});
  EXPECT_EQ(streamed(scrubber, text, every_byte), whole);
}

TEST(Scrubber, HoldsBackLessThanTheLongestPattern) {
  es::Scrubber scrubber({rule()});
  const std::string text(1000, 'a');
  const auto out = scrubber.feed(text);
  EXPECT_EQ(out.size(), text.size() - (scrubber.longest_pattern() - 1));
  EXPECT_EQ(out + scrubber.finish(), text);
}

TEST(Inflater, InflatesGzipZlibAndRawDeflateInAnyChunks) {
  std::string body;
  for (int i = 0; i < 200; ++i)
    body += "{\"n\": " + std::to_string(i) + ", \"token\": \"" + kValue + "\"}\n";
  for (const int window_bits : {15 + 16, 15, -15}) {
    const auto compressed = deflated(body, window_bits);
    for (const std::size_t chunk : {1u, 2u, 7u, 1000u, 100000u}) {
      es::Inflater inflater;
      es::Scrubber scrubber({rule()});
      std::string out;
      for (std::size_t at = 0; at < compressed.size(); at += chunk)
        out += scrubber.feed(inflater.feed(std::string_view(compressed).substr(at, chunk)));
      out += scrubber.finish();
      EXPECT_TRUE(inflater.done()) << window_bits << " " << chunk;
      ASSERT_EQ(out.size(), body.size());
      EXPECT_EQ(out.find(kValue), std::string::npos);
      EXPECT_EQ(scrubber.replacements(), 200u);
      EXPECT_EQ(inflater.feed("trailing bytes"), "");
    }
  }
}

TEST(Inflater, InflatesWhatZlibCompressWrites) {
  const std::string body = "token " + kValue;
  uLongf size = compressBound(body.size());
  std::string compressed(size, '\0');
  ASSERT_EQ(compress(reinterpret_cast<Bytef*>(compressed.data()), &size,
                     reinterpret_cast<const Bytef*>(body.data()), body.size()),
            Z_OK);
  compressed.resize(size);
  es::Inflater inflater;
  EXPECT_EQ(inflater.feed(compressed), body);
  EXPECT_TRUE(inflater.done());
}

TEST(Inflater, StopsAtItsLimitAndOnCorruptInput) {
  const auto bomb = deflated(std::string(1 << 20, '\0'), 15 + 16);
  es::Inflater small(1000);
  EXPECT_THROW((void)small.feed(bomb), std::runtime_error);

  auto corrupt = deflated("some body that is long enough to matter", 15 + 16);
  corrupt[12] = static_cast<char>(corrupt[12] ^ 0x55);
  corrupt[13] = static_cast<char>(0xff);
  es::Inflater inflater;
  EXPECT_THROW(
      {
        (void)inflater.feed(corrupt);
        (void)inflater.feed(std::string(64, '\xff'));
      },
      std::runtime_error);

  es::Inflater unfinished;
  const auto whole = deflated("abc", 15 + 16);
  EXPECT_EQ(unfinished.feed(std::string_view(whole).substr(0, whole.size() - 4)), "abc");
  EXPECT_FALSE(unfinished.done());
}
