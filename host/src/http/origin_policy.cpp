// OriginPolicy: loopback origins and the configured list.
#include "http/origin_policy.hpp"

#include <algorithm>
#include <cctype>

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

}  // namespace execmcp::host::http
