// See request_rewrite.hpp. Two choices the header leaves open:
// - A path prefix matches on a segment boundary: "/need-auth" matches "/need-auth" and
//   "/need-auth/x", not "/need-authX" (a prefix ending in '/' matches whatever follows it).
// - A secret injected into a matching header is reported injected even when its placeholder is also
//   in the request target or in a header the rule does not name: those copies go unchanged to the
//   same host, which the rule allows. Withheld means no copy was replaced.
#include "execmcp/egress_secrets/request_rewrite.hpp"

#include <algorithm>
#include <string>
#include <string_view>

#include "execmcp/common/base64.hpp"

namespace execmcp::egress_secrets {
namespace {

using common::base64_decode;
using common::base64_encode;

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return lower(x) == lower(y); });
}

bool contains(std::string_view text, std::string_view part) {
  return !part.empty() && text.find(part) != std::string_view::npos;
}

// Replaces every `from` in `text` by `to`; whether it replaced any.
bool replace_all(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty()) return false;
  bool any = false;
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
    any = true;
  }
  return any;
}

bool is_authorization(std::string_view name) {
  return iequals(name, "Authorization") || iequals(name, "Proxy-Authorization");
}

// The credentials of a Basic authorization value, strictly decoded, and where they start.
std::optional<std::pair<std::size_t, std::string>> basic_credentials(std::string_view value) {
  constexpr std::string_view kScheme = "basic";
  if (value.size() <= kScheme.size() || !iequals(value.substr(0, kScheme.size()), kScheme) ||
      value[kScheme.size()] != ' ')
    return std::nullopt;
  std::size_t start = kScheme.size();
  while (start < value.size() && value[start] == ' ') ++start;
  const auto b64 = value.substr(start);
  auto decoded = base64_decode(b64);
  if (!decoded || decoded->empty() || base64_encode(*decoded) != b64) return std::nullopt;
  return std::make_pair(start, std::move(*decoded));
}

bool carries(const std::pair<std::string, std::string>& header, std::string_view placeholder) {
  if (contains(header.second, placeholder)) return true;
  if (!is_authorization(header.first)) return false;
  const auto credentials = basic_credentials(header.second);
  return credentials && contains(credentials->second, placeholder);
}

bool path_matches(std::string_view path, std::string_view prefix) {
  if (!path.starts_with(prefix)) return false;
  return path.size() == prefix.size() || prefix.ends_with('/') || path[prefix.size()] == '/';
}

// Why `secret` may not go into this request, or "" when it may (header aside).
std::string mismatch(const SecretRule& secret, const RequestHead& head, std::string_view host,
                     bool tls) {
  if (std::find(secret.hosts.begin(), secret.hosts.end(), host) == secret.hosts.end())
    return "host";
  if (!tls && !secret.plain_http) return "plain http";
  if (!secret.methods.empty() &&
      std::find(secret.methods.begin(), secret.methods.end(), head.method) == secret.methods.end())
    return "method";
  const auto path = canonical_path(head.target);
  if (!path) return "path not canonical";
  if (!secret.paths.empty() &&
      std::none_of(secret.paths.begin(), secret.paths.end(),
                   [&](const std::string& prefix) { return path_matches(*path, prefix); }))
    return "path";
  return {};
}

// The outcome for one secret, with its placeholder replaced in the matching headers; nullopt when
// the request does not carry its placeholder.
std::optional<SecretOutcome> apply(const SecretRule& secret, RequestHead& head,
                                   std::string_view host, bool tls) {
  const std::string_view placeholder = secret.placeholder;
  const bool in_target = contains(head.target, placeholder);
  const bool in_header =
      std::any_of(head.headers.begin(), head.headers.end(),
                  [&](const auto& header) { return carries(header, placeholder); });
  if (!in_target && !in_header) return std::nullopt;
  SecretOutcome outcome{secret.name, false, mismatch(secret, head, host, tls)};
  if (!outcome.why.empty()) return outcome;
  for (auto& [name, value] : head.headers) {
    if (!secret.header.empty() && !iequals(name, secret.header)) continue;
    if (is_authorization(name)) {
      if (auto replaced = replace_in_basic(value, placeholder, secret.value)) {
        value = std::move(*replaced);
        outcome.injected = true;
      }
    }
    outcome.injected = replace_all(value, placeholder, secret.value) || outcome.injected;
  }
  if (!outcome.injected) outcome.why = in_header ? "header" : "in the request target";
  return outcome;
}

bool is_tchar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Why the request may not be forwarded at all, or nullopt.
std::optional<std::string> refusal(const RequestHead& head, std::string_view host) {
  std::size_t content_length = 0, transfer_encoding = 0, hosts = 0;
  for (const auto& [name, value] : head.headers) {
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_tchar))
      return "a header name that is not a token";
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
      return "a header value holding a CR, LF or NUL";
    if (iequals(name, "Content-Length")) ++content_length;
    if (iequals(name, "Transfer-Encoding")) ++transfer_encoding;
    if (iequals(name, "Upgrade")) return "an Upgrade header: no protocol switch on this host";
    if (iequals(name, "Host")) {
      ++hosts;
      std::string_view name_part = value;
      if (const auto colon = name_part.rfind(':');
          colon != std::string_view::npos && colon + 1 < name_part.size() &&
          std::all_of(name_part.begin() + colon + 1, name_part.end(),
                      [](char c) { return c >= '0' && c <= '9'; }))
        name_part = name_part.substr(0, colon);
      if (!iequals(name_part, host)) return "a Host header that is not the host connected to";
    }
  }
  if (content_length > 1) return "two Content-Length headers";
  if (content_length > 0 && transfer_encoding > 0)
    return "both Content-Length and Transfer-Encoding";
  if (hosts > 1) return "two Host headers";
  return std::nullopt;
}

// Identity responses only, and whole ones: what the scrubber can read.
void set_scrubbable(RequestHead& head) {
  std::erase_if(head.headers, [](const auto& header) {
    const auto& name = header.first;
    return iequals(name, "Accept-Encoding") || iequals(name, "Range") ||
           iequals(name, "If-Range") || iequals(name, "TE");
  });
  head.headers.emplace_back("Accept-Encoding", "identity");
}

}  // namespace

std::optional<std::string_view> canonical_path(std::string_view target) {
  const auto path = target.substr(0, target.find('?'));
  if (path.empty() || path.front() != '/') return std::nullopt;
  if (path.find("//") != std::string_view::npos ||
      path.find_first_of("\\#") != std::string_view::npos)
    return std::nullopt;
  for (std::size_t at = path.find('%'); at != std::string_view::npos; at = path.find('%', at + 1)) {
    const auto code = path.substr(at + 1, 2);
    if (iequals(code, "2e") || iequals(code, "2f") || iequals(code, "5c")) return std::nullopt;
  }
  for (std::size_t start = 1; start <= path.size();) {
    const auto end = std::min(path.find('/', start), path.size());
    const auto segment = path.substr(start, end - start);
    if (segment == "." || segment == "..") return std::nullopt;
    start = end + 1;
  }
  return path;
}

RewriteResult rewrite_request(RequestHead& head, std::string_view host, bool tls,
                              const std::vector<SecretRule>& secrets) {
  RewriteResult result;
  result.refusal = refusal(head, host);
  if (result.refusal) return result;
  set_scrubbable(head);
  for (const auto& secret : secrets)
    if (auto outcome = apply(secret, head, host, tls))
      result.outcomes.push_back(std::move(*outcome));
  return result;
}

std::optional<std::string> replace_in_basic(std::string_view authorization, std::string_view from,
                                            std::string_view to) {
  auto credentials = basic_credentials(authorization);
  if (!credentials || !replace_all(credentials->second, from, to)) return std::nullopt;
  return std::string(authorization.substr(0, credentials->first)) +
         base64_encode(credentials->second);
}

}  // namespace execmcp::egress_secrets
