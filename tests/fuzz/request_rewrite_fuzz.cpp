// libFuzzer target: the injector's per-request rewrite, against an oracle written apart from it. A
// secret's value may appear in a rewritten header only when that secret's rule (host, transport,
// method, canonical path, header name) allows it there; the target is never changed; headers keep
// their order and length; and Basic credentials decode to the input with placeholder -> value.
//
// Input: one flag byte (bit 0: TLS; bits 1-2: the host), then "METHOD TARGET" and "Name: value"
// lines. Bytes 1, 2, 3 stand for secret A's, B's and C's placeholder, and 4, 5, 6 for
// "Basic <base64 of x:placeholder>" of A, B and C, so that the fuzzer reaches them at once.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "execmcp/common/base64.hpp"
#include "execmcp/egress_secrets/request_rewrite.hpp"

namespace es = execmcp::egress_secrets;
using execmcp::common::base64_decode;
using execmcp::common::base64_encode;

namespace {

const std::vector<es::SecretRule>& secrets() {
  static const std::vector<es::SecretRule> rules = [] {
    std::vector<es::SecretRule> r(3);
    r[0] = {"A",
            "ghp_AAAAvalue0123456789abcdef",
            "ghp_Zq8Lm3Xw7Pk2Rt9Vb4Nc6Yd1E",
            {"api.test"},
            "",
            {},
            {},
            false};
    r[1] = {"B",
            "glpat-BBBBvalue-0123456789ab",
            "glpat-Kd93mQ0x-Tz7Wp4Lr8Vs2n",
            {"api.test", "git.test"},
            "Authorization",
            {"GET", "POST"},
            {"/repos/", "/need-auth"},
            true};
    r[2] = {"C",
            "CCCC/value+0123456789=abcdef",
            "Hq2L/mX7p+K3w9R4b8v=NcT6yDz1",
            {"git.test"},
            "X-Token",
            {},
            {"/"},
            false};
    return r;
  }();
  return rules;
}

std::string expanded(std::string_view raw) {
  std::string out;
  for (const char c : raw) {
    if (c >= 1 && c <= 3) {
      out += secrets()[c - 1].placeholder;
    } else if (c >= 4 && c <= 6) {
      out += "Basic " + base64_encode("x:" + secrets()[c - 4].placeholder);
    } else {
      out += c;
    }
  }
  return out;
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return lower(x) == lower(y); });
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = lower(c);
  return out;
}

// The credentials of a Basic value, decoded leniently (the oracle sees more than the rewrite).
std::string basic_text(std::string_view value) {
  if (value.size() < 6 || lowered(value.substr(0, 6)) != "basic ") return {};
  value.remove_prefix(6);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  return base64_decode(value).value_or("");
}

bool has_value(std::string_view header_value, const es::SecretRule& s) {
  return header_value.find(s.value) != std::string_view::npos ||
         basic_text(header_value).find(s.value) != std::string::npos;
}

// The rule, read from its documentation: a path with dot segments, "//", '\\', '#' or an encoded
// '.', '/' or '\\' is never injected into; a prefix matches on a segment boundary.
bool allowed(const es::SecretRule& s, const es::RequestHead& h, std::string_view host, bool tls) {
  if (std::find(s.hosts.begin(), s.hosts.end(), host) == s.hosts.end()) return false;
  if (!tls && !s.plain_http) return false;
  if (!s.methods.empty() &&
      std::find(s.methods.begin(), s.methods.end(), h.method) == s.methods.end())
    return false;
  const std::string path = h.target.substr(0, h.target.find('?'));
  const std::string low = lowered(path);
  if (path.empty() || path[0] != '/' || path.find("//") != std::string::npos ||
      path.find_first_of("\\#") != std::string::npos || low.find("%2e") != std::string::npos ||
      low.find("%2f") != std::string::npos || low.find("%5c") != std::string::npos)
    return false;
  const std::string slashed = path + "/";
  if (slashed.find("/./") != std::string::npos || slashed.find("/../") != std::string::npos)
    return false;
  if (s.paths.empty()) return true;
  return std::any_of(s.paths.begin(), s.paths.end(), [&](const std::string& prefix) {
    return path.starts_with(prefix) &&
           (path.size() == prefix.size() || prefix.back() == '/' || path[prefix.size()] == '/');
  });
}

bool stripped(std::string_view name) {
  return same_name(name, "Accept-Encoding") || same_name(name, "Range") ||
         same_name(name, "If-Range") || same_name(name, "TE");
}

void check_basic(const es::RequestHead& h) {
  for (const auto& [name, value] : h.headers) {
    for (const auto& s : secrets()) {
      const auto replaced = es::replace_in_basic(value, s.placeholder, s.value);
      if (!replaced) continue;
      std::string expected = basic_text(value);
      for (auto at = expected.find(s.placeholder); at != std::string::npos;
           at = expected.find(s.placeholder, at + s.value.size()))
        expected.replace(at, s.placeholder.size(), s.value);
      if (replaced->size() != value.size() || basic_text(*replaced) != expected) std::abort();
    }
  }
}

void check(const es::RequestHead& before, const es::RequestHead& after, const es::RewriteResult& r,
           std::string_view host, bool tls) {
  if (r.refusal) {
    if (after.headers != before.headers || !r.outcomes.empty()) std::abort();
    return;
  }
  if (after.target != before.target || after.method != before.method) std::abort();
  std::vector<const std::pair<std::string, std::string>*> kept;
  for (const auto& header : before.headers)
    if (!stripped(header.first)) kept.push_back(&header);
  if (after.headers.size() != kept.size() + 1 || after.headers.back().first != "Accept-Encoding" ||
      after.headers.back().second != "identity")
    std::abort();
  for (const auto& outcome : r.outcomes) {
    const auto& s = *std::find_if(secrets().begin(), secrets().end(),
                                  [&](const auto& rule) { return rule.name == outcome.secret; });
    if (outcome.injected ? !allowed(s, before, host, tls) : outcome.why.empty()) std::abort();
  }
  for (std::size_t i = 0; i < kept.size(); ++i) {
    const auto& [name, value] = after.headers[i];
    if (name != kept[i]->first || value.size() != kept[i]->second.size()) std::abort();
    for (const auto& s : secrets()) {
      if (!has_value(value, s) || has_value(kept[i]->second, s)) continue;
      const bool header_ok = s.header.empty() || same_name(s.header, name);
      const bool reported = std::any_of(r.outcomes.begin(), r.outcomes.end(), [&](const auto& o) {
        return o.secret == s.name && o.injected;
      });
      if (!header_ok || !reported || !allowed(s, before, host, tls)) std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 8192) return 0;
  const bool tls = (data[0] & 1) != 0;
  static const char* const kHosts[] = {"api.test", "git.test", "pass.test", "other.test"};
  const std::string host = kHosts[(data[0] >> 1) & 3];
  const std::string text =
      expanded(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));

  es::RequestHead head;
  std::size_t start = 0;
  for (bool first = true; start <= text.size(); first = false) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = std::string_view(text).substr(start, end - start);
    start = end + 1;
    if (first) {
      const std::size_t space = line.find(' ');
      head.method = line.substr(0, space);
      head.target =
          space == std::string_view::npos ? std::string() : std::string(line.substr(space + 1));
      continue;
    }
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    head.headers.emplace_back(line.substr(0, colon), value);
  }
  check_basic(head);
  const es::RequestHead before = head;
  const auto result = es::rewrite_request(head, host, tls, secrets());
  check(before, head, result, host, tls);
  (void)es::canonical_path(before.target);
  return 0;
}
