// Which browser origins may call the server: loopback ones always, others only when listed
// (a defence against DNS rebinding and cross-site requests from a browser on the operator's host).
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

}  // namespace execmcp::host::http
