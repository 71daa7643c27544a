// OriginPolicy and HostPolicy: loopback origins and hosts, and the configured lists.
#include "transport/http/origin_policy.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

namespace execmcp::host::http {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string normalise(std::string_view origin) {
  std::string out = lower(origin);
  while (!out.empty() && out.back() == '/') out.pop_back();
  return out;
}

bool all_digits(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](unsigned char c) { return std::isdigit(c) != 0; });
}

// A Host value split into lower-case name and port ("" when none); nullopt when it is not
// host[:port] (RFC 9110 7.2: uri-host [ ":" port ], an IPv6 literal in brackets).
struct HostAndPort {
  std::string name;
  std::string port;
};
std::optional<HostAndPort> split_host(std::string_view text) {
  std::string_view name = text;
  std::string_view port;
  if (text.starts_with("[")) {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    name = text.substr(0, close + 1);
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port = rest.substr(1);
    }
  } else if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
    name = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (name.empty() || port.size() > 5 || !all_digits(port)) return std::nullopt;
  const bool bracketed = name.front() == '[';
  for (unsigned char c : bracketed ? name.substr(1, name.size() - 2) : name) {
    // reg-name and IPv4 characters (no userinfo, path or percent-encoding); hex, ':' and '.'
    // inside brackets.
    const bool ok =
        std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || (bracketed && c == ':');
    if (!ok) return std::nullopt;
  }
  return HostAndPort{lower(name), std::string(port)};
}

bool is_loopback_ipv4(std::string_view name) {
  int parts = 0;
  std::size_t start = 0;
  for (;;) {
    const std::size_t dot = name.find('.', start);
    const std::string_view part =
        name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (part.empty() || part.size() > 3 || !all_digits(part)) return false;
    const int value = std::stoi(std::string(part));
    if (value > 255 || (parts == 0 && value != 127)) return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts == 4;
}

}  // namespace

OriginPolicy::OriginPolicy(std::vector<std::string> allowed) {
  for (const auto& origin : allowed) allowed_.push_back(normalise(origin));
}

bool OriginPolicy::is_loopback(std::string_view origin) {
  const std::string text = lower(origin);
  std::string_view rest = text;
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
  } else {
    return false;
  }
  for (std::string_view host : {"localhost", "127.0.0.1", "[::1]"}) {
    if (!rest.starts_with(host)) continue;
    std::string_view port = rest.substr(host.size());
    if (port.empty()) return true;
    if (port.front() != ':' || port.size() < 2 || port.size() > 6) return false;
    port.remove_prefix(1);
    return std::all_of(port.begin(), port.end(),
                       [](unsigned char c) { return std::isdigit(c) != 0; });
  }
  return false;
}

bool OriginPolicy::allows(std::string_view origin) const {
  if (is_loopback(origin)) return true;
  const std::string wanted = normalise(origin);
  return std::find(allowed_.begin(), allowed_.end(), wanted) != allowed_.end();
}

HostPolicy::HostPolicy(std::vector<std::string> allowed) {
  for (const auto& host : allowed) {
    if (auto parts = split_host(host)) allowed_.push_back({parts->name, parts->port});
  }
}

bool HostPolicy::is_loopback(std::string_view host) {
  const auto parts = split_host(host);
  if (!parts) return false;
  return parts->name == "localhost" || parts->name == "[::1]" || is_loopback_ipv4(parts->name);
}

bool HostPolicy::allows(std::string_view host) const {
  const auto parts = split_host(host);
  if (!parts) return false;
  if (is_loopback(host)) return true;
  return std::any_of(allowed_.begin(), allowed_.end(), [&](const Entry& entry) {
    return entry.name == parts->name && (entry.port.empty() || entry.port == parts->port);
  });
}

}  // namespace execmcp::host::http
