// Decides whether an HTTP request's credentials may call an agent: static bearer tokens and JWT
// access tokens (OAuth 2.1 resource server), with the 401/403 answers RFC 6750 and RFC 9728 ask
// for.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auth/log_throttle.hpp"
#include "auth/verification_keys.hpp"
#include "config/config.hpp"

namespace execmcp::host::auth {

// Who made a request, as logs, the audit trail and metrics show it. Never holds a secret.
struct Principal {
  // The token's name, "jwt:<sub>" (percent-encoded, long ones cut and hashed: one name per
  // subject, printable as is), or "anonymous" without auth. Token names have no ':'.
  std::string name;
  std::vector<std::string> agents;  // agent ids it may use; {"*"} for every agent
  // Names the user's sandbox of a per-user agent (its workspace directory): the token's name,
  // "jwt-" and 32 hex digits of SHA-256(iss "\n" sub) for a JWT, "anonymous" without auth.
  std::string user_key;
};

// The user key of a JWT's subject: collision-free across issuers and subjects, and a safe
// directory name.
std::string jwt_user_key(std::string_view issuer, std::string_view subject);

// The answer to one request. When refused, send `status` with `headers` and `body` as they are.
struct AuthDecision {
  bool allowed = false;
  Principal principal;  // set when the credentials were valid (also on a 403)
  int status = 200;     // 401 (no or bad credentials) or 403 (valid, but not for this agent)
  std::vector<std::pair<std::string, std::string>> headers;  // WWW-Authenticate
  std::string body;  // JSON {"error": ..., "error_description": ...} that says what to do
};

using Clock = std::function<std::chrono::system_clock::time_point()>;

// Built once from the validated config; authorize() may be called from any number of threads at
// once (the only mutable state, a cache of verified JWTs, has its own lock). Nothing it logs or
// returns contains a token or any part of one.
class Authenticator {
 public:
  // Reads server.oauth.keys (JWKS or PEM) now; throws std::runtime_error naming the file when the
  // keys cannot be used.
  explicit Authenticator(
      const ServerConfig& config, Clock clock = [] { return std::chrono::system_clock::now(); });

  // True when any token or OAuth is configured. When false authorize() allows every request as
  // "anonymous" (the serve command decides whether that is acceptable: --insecure-no-auth).
  [[nodiscard]] bool enabled() const;

  // `authorization_header` is the Authorization header's value (empty when absent); `agent_id` is
  // the agent of the URL (/mcp/<agent_id>), compared as is and never echoed unless it is a
  // well-formed id.
  [[nodiscard]] AuthDecision authorize(std::string_view authorization_header,
                                       std::string_view agent_id) const;

  // RFC 9728 protected-resource metadata (JSON text) for `resource_url`, normally public_url.
  [[nodiscard]] std::string protected_resource_metadata(std::string_view resource_url) const;
  // Where that metadata is served, per RFC 9728 §3.1: public_url with
  // "/.well-known/oauth-protected-resource" put between host and path. Empty without oauth.
  [[nodiscard]] const std::string& resource_metadata_url() const { return metadata_url_; }
  // The path part of resource_metadata_url(), for routing ("/.well-known/oauth-protected-resource"
  // when public_url has no path). Empty without oauth.
  [[nodiscard]] const std::string& resource_metadata_path() const { return metadata_path_; }

  // Tokens and JWTs longer than this are refused before any parsing.
  static constexpr std::size_t kMaxTokenBytes = 8 * 1024;
  // Allowed clock difference with the authorization server for `exp` and `nbf`.
  static constexpr std::chrono::seconds kLeeway{60};
  // Verified JWTs remembered at most (the cache is emptied when full of unexpired ones).
  static constexpr std::size_t kJwtCacheEntries = 4096;

 private:
  struct Refusal;
  [[nodiscard]] AuthDecision refuse(const Refusal& refusal, std::string_view agent_id,
                                    std::string_view principal_name = {}) const;
  [[nodiscard]] const TokenConfig* match_static(const TokenDigest& digest) const;
  // "" when a signed token's claims make it valid for this server now (issuer, audience, expiry,
  // not-before, subject), else why not; sets `valid_until`.
  [[nodiscard]] std::string check_jwt_claims(const nlohmann::json& claims,
                                             std::chrono::system_clock::time_point& valid_until,
                                             const std::string& get_new) const;
  [[nodiscard]] Principal verify_jwt(std::string_view token, Refusal& refusal,
                                     std::chrono::system_clock::time_point& valid_until) const;
  [[nodiscard]] std::optional<Principal> cached_jwt(const TokenDigest& digest) const;
  void remember_jwt(const TokenDigest& digest, const Principal& principal,
                    std::chrono::system_clock::time_point valid_until) const;

  ServerConfig config_;
  Clock clock_;
  std::vector<VerificationKey> keys_;
  std::string metadata_url_;
  std::string metadata_path_;

  // JWTs that passed every check, by the SHA-256 of the token, until exp + leeway: OpenSSL 3 takes
  // about a millisecond to read a PEM key, which libjwt does on every verification, and clients
  // send the same access token on every request. Only a verified token gets in; the agent is
  // still checked on every request.
  struct CachedJwt {
    Principal principal;
    std::chrono::system_clock::time_point valid_until;
  };
  mutable std::mutex cache_mutex_;
  mutable std::map<TokenDigest, CachedJwt> jwt_cache_;

  // Refusals logged: at most kRefusalsLogged per window of each kind, then a count (log_throttle).
  static constexpr std::size_t kRefusalsLogged = 20;
  mutable LogThrottle unauthorized_log_{"refused requests (401)", kRefusalsLogged,
                                        std::chrono::seconds(10)};
  mutable LogThrottle forbidden_log_{"refused requests (403)", kRefusalsLogged,
                                     std::chrono::seconds(10)};
};

}  // namespace execmcp::host::auth
