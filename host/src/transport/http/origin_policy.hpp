// Which browser origins and Host names may call the server: loopback ones always, others only
// when listed (a defence against DNS rebinding and cross-site requests from a browser on the
// operator's host).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace execmcp::host::http {

class OriginPolicy {
 public:
  explicit OriginPolicy(std::vector<std::string> allowed);

  // Whether a request carrying this Origin header may be served (compared case-insensitively).
  [[nodiscard]] bool allows(std::string_view origin) const;

  // http(s)://localhost|127.0.0.1|[::1] with an optional port, nothing else (no path, no user).
  [[nodiscard]] static bool is_loopback(std::string_view origin);

 private:
  std::vector<std::string> allowed_;  // lower-case, without a trailing '/'
};

// A browser sends the name it resolved as Host, so a page of evil.example whose name was rebound
// to 127.0.0.1 says Host: evil.example, even on same-origin requests that carry no Origin.
class HostPolicy {
 public:
  // Entries "name" (any port) or "name:port", IPv6 literals in brackets.
  explicit HostPolicy(std::vector<std::string> allowed);

  // Whether a request carrying this Host header may be served (compared case-insensitively).
  [[nodiscard]] bool allows(std::string_view host) const;
  [[nodiscard]] bool has_list() const { return !allowed_.empty(); }

  // localhost, 127.x.x.x or [::1] with an optional port, nothing else.
  [[nodiscard]] static bool is_loopback(std::string_view host);

 private:
  struct Entry {
    std::string name;  // lower-case
    std::string port;  // empty: any
  };
  std::vector<Entry> allowed_;
};

}  // namespace execmcp::host::http
