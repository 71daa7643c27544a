// See secret_bundle.hpp. The lines, in this order, each ending in '\n' ("-" stands for an empty
// free-form field, since base64 of nothing is nothing):
//   execmcp-secrets 1
//   label <b64|->
//   ca <b64 PEM|->
//   leaf <host> <b64 cert PEM> <b64 key PEM>                       (any number)
//   secret <NAME> <b64 value> <b64 placeholder> <host,host> <header|-> <METHOD,METHOD|->
//          <b64 path,b64 path|-> <plain_http 0|1>                  (on one line; up to kMaxSecrets)
//   upstream-ca <b64 PEM|->
//   end
#include "execmcp/egress_secrets/secret_bundle.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "execmcp/common/base64.hpp"

namespace execmcp::egress_secrets {
namespace {

using common::base64_decode;
using common::base64_encode;

constexpr std::size_t kMaxValueBytes = 8 * 1024;
constexpr std::size_t kMaxLabelBytes = 256;
constexpr std::size_t kMaxNameBytes = 128;
constexpr std::size_t kMaxHeaderNameBytes = 256;
constexpr std::size_t kMaxMethods = 32;
constexpr std::size_t kMaxPaths = 64;
constexpr std::size_t kMaxPathBytes = 2048;
constexpr std::size_t kMaxLeaves = kMaxSecrets * kMaxHostsPerSecret;

[[noreturn]] void fail(std::size_t line, std::string_view field, std::string_view problem) {
  throw BundleError("secret bundle line " + std::to_string(line) + ": " + std::string(field) +
                    ": " + std::string(problem));
}

std::string field_b64(std::string_view bytes) {
  return bytes.empty() ? "-" : base64_encode(bytes);
}

std::string joined(const std::vector<std::string>& items, bool b64) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ',';
    out += b64 ? base64_encode(item) : item;
  }
  return out.empty() ? "-" : out;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

bool is_tchar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_env_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameBytes || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// A lower-case DNS name: labels of [a-z0-9-], 1..63 bytes, no '-' at either end, no empty label.
bool is_dns_name(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (const auto label : split(s, '.')) {
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
      return false;
    for (const char c : label)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

// The bytes of a base64 field; only the canonical encoding (the one serialize writes) is taken.
std::string decode(std::string_view token, std::size_t line, std::string_view field,
                   bool may_be_empty) {
  if (token == "-") {
    if (!may_be_empty) fail(line, field, "is empty");
    return {};
  }
  auto bytes = base64_decode(token);
  if (!bytes || base64_encode(*bytes) != token) fail(line, field, "is not canonical base64");
  return std::move(*bytes);
}

bool has_line_break_or_nul(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

void parse_hosts(std::string_view token, std::size_t line, SecretRule& rule,
                 const std::set<std::string, std::less<>>& leaf_hosts) {
  const auto hosts = split(token, ',');
  if (hosts.size() > kMaxHostsPerSecret) fail(line, "secret hosts", "too many hosts");
  for (const auto host : hosts) {
    if (!is_dns_name(host)) fail(line, "secret hosts", "not a lower-case DNS name");
    if (!leaf_hosts.contains(host)) fail(line, "secret hosts", "a host without a leaf line");
    if (std::find(rule.hosts.begin(), rule.hosts.end(), host) != rule.hosts.end())
      fail(line, "secret hosts", "a host named twice");
    rule.hosts.emplace_back(host);
  }
}

void parse_match(const std::vector<std::string_view>& f, std::size_t line, SecretRule& rule) {
  if (f[5] != "-") {
    if (f[5].size() > kMaxHeaderNameBytes || !std::all_of(f[5].begin(), f[5].end(), is_tchar))
      fail(line, "secret header", "not a header name");
    rule.header = f[5];
  }
  if (f[6] != "-") {
    const auto methods = split(f[6], ',');
    if (methods.size() > kMaxMethods) fail(line, "secret methods", "too many methods");
    for (const auto method : methods) {
      const bool token = !method.empty() && method.size() <= 32 &&
                         std::all_of(method.begin(), method.end(),
                                     [](char c) { return is_tchar(c) && !(c >= 'a' && c <= 'z'); });
      if (!token) fail(line, "secret methods", "not an upper-case method");
      rule.methods.emplace_back(method);
    }
  }
  if (f[7] != "-") {
    const auto paths = split(f[7], ',');
    if (paths.size() > kMaxPaths) fail(line, "secret paths", "too many paths");
    for (const auto b64 : paths) {
      auto path = decode(b64, line, "secret paths", false);
      const bool printable = std::all_of(path.begin(), path.end(), [](char c) {
        return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
      });
      if (path.size() > kMaxPathBytes || path.front() != '/' || !printable)
        fail(line, "secret paths", "not a path prefix starting with '/'");
      rule.paths.push_back(std::move(path));
    }
  }
  if (f[8] != "0" && f[8] != "1") fail(line, "secret plain_http", "not 0 or 1");
  rule.plain_http = f[8] == "1";
}

SecretRule parse_secret(const std::vector<std::string_view>& f, std::size_t line,
                        const std::set<std::string, std::less<>>& leaf_hosts) {
  if (f.size() != 9) fail(line, "secret", "needs 8 fields");
  SecretRule rule;
  if (!is_env_name(f[1])) fail(line, "secret name", "not a variable name");
  rule.name = f[1];
  rule.value = decode(f[2], line, "secret value", false);
  rule.placeholder = decode(f[3], line, "secret placeholder", false);
  if (rule.value.size() > kMaxValueBytes) fail(line, "secret value", "longer than 8 KiB");
  if (has_line_break_or_nul(rule.value)) fail(line, "secret value", "holds a CR, LF or NUL");
  if (has_line_break_or_nul(rule.placeholder))
    fail(line, "secret placeholder", "holds a CR, LF or NUL");
  if (rule.placeholder.size() != rule.value.size())
    fail(line, "secret placeholder", "not as long as the value");
  if (rule.placeholder == rule.value) fail(line, "secret placeholder", "equal to the value");
  parse_hosts(f[4], line, rule, leaf_hosts);
  parse_match(f, line, rule);
  return rule;
}

void parse_leaf(const std::vector<std::string_view>& f, std::size_t line, SecretBundle& bundle,
                std::set<std::string, std::less<>>& leaf_hosts) {
  if (f.size() != 4) fail(line, "leaf", "needs 3 fields");
  if (bundle.leaves.size() == kMaxLeaves) fail(line, "leaf", "too many leaves");
  LeafCertificate leaf;
  if (!is_dns_name(f[1])) fail(line, "leaf host", "not a lower-case DNS name");
  if (!leaf_hosts.emplace(f[1]).second) fail(line, "leaf host", "a second leaf for this host");
  leaf.host = f[1];
  leaf.cert_pem = decode(f[2], line, "leaf certificate", false);
  leaf.key_pem = decode(f[3], line, "leaf key", false);
  bundle.leaves.push_back(std::move(leaf));
}

// One field after a keyword: "<keyword> <b64|->".
std::string single(const std::vector<std::string_view>& f, std::size_t line,
                   std::string_view keyword) {
  if (f.size() != 2 || f[0] != keyword) fail(line, keyword, "expected here, with one field");
  return decode(f[1], line, keyword, true);
}

}  // namespace

std::string serialize_bundle(const SecretBundle& bundle) {
  std::string out = "execmcp-secrets 1\n";
  out += "label " + field_b64(bundle.label) + "\n";
  out += "ca " + field_b64(bundle.ca_cert_pem) + "\n";
  for (const auto& leaf : bundle.leaves)
    out +=
        "leaf " + leaf.host + " " + field_b64(leaf.cert_pem) + " " + field_b64(leaf.key_pem) + "\n";
  for (const auto& s : bundle.secrets) {
    out += "secret " + s.name + " " + field_b64(s.value) + " " + field_b64(s.placeholder) + " " +
           joined(s.hosts, false) + " " + (s.header.empty() ? "-" : s.header) + " " +
           joined(s.methods, false) + " " + joined(s.paths, true) + " " +
           (s.plain_http ? "1" : "0") + "\n";
  }
  out += "upstream-ca " + field_b64(bundle.upstream_ca_pem) + "\n";
  out += "end\n";
  return out;
}

SecretBundle parse_bundle(std::string_view text) {
  if (text.size() > kMaxBundleBytes) throw BundleError("secret bundle: larger than 1 MiB");
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  const auto lines = split(text, '\n');
  SecretBundle bundle;
  std::set<std::string, std::less<>> leaf_hosts, names;
  std::size_t at = 0;
  auto fields = [&](std::size_t index) {
    const auto f = split(lines[index], ' ');
    for (const auto field : f)
      if (field.empty()) fail(index + 1, "line", "an empty field (a space too many)");
    return f;
  };
  auto next = [&](std::string_view expected) {
    if (at == lines.size()) fail(at + 1, expected, "missing (the bundle ends early)");
    return fields(at++);
  };
  if (lines[0] != "execmcp-secrets 1") fail(1, "header", "not \"execmcp-secrets 1\"");
  ++at;
  auto f = next("label");
  bundle.label = single(f, at, "label");
  if (bundle.label.size() > kMaxLabelBytes || has_line_break_or_nul(bundle.label))
    fail(at, "label", "longer than 256 bytes or holds a CR, LF or NUL");
  f = next("ca");
  bundle.ca_cert_pem = single(f, at, "ca");
  for (f = next("upstream-ca"); f[0] == "leaf"; f = next("upstream-ca"))
    parse_leaf(f, at, bundle, leaf_hosts);
  for (; f[0] == "secret"; f = next("upstream-ca")) {
    if (bundle.secrets.size() == kMaxSecrets) fail(at, "secret", "too many secrets");
    auto rule = parse_secret(f, at, leaf_hosts);
    if (!names.emplace(rule.name).second) fail(at, "secret name", "a second secret of this name");
    bundle.secrets.push_back(std::move(rule));
  }
  bundle.upstream_ca_pem = single(f, at, "upstream-ca");
  f = next("end");
  if (f.size() != 1 || f[0] != "end") fail(at, "end", "expected here");
  if (at != lines.size()) fail(at + 1, "end", "text after the end line");
  if (!bundle.leaves.empty() && bundle.ca_cert_pem.empty())
    fail(3, "ca", "empty, but leaves follow");
  return bundle;
}

}  // namespace execmcp::egress_secrets
