// Checks bearer tokens (SHA-256, constant-time) and JWT access tokens (libjwt), then the agent.
#include "auth/authenticator.hpp"

#include <algorithm>
#include <cctype>
#include <memory>
#include <regex>
#include <stdexcept>

#include <jwt.h>
#include <openssl/crypto.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

namespace execmcp::host::auth {

struct Authenticator::Refusal {
  int status = 401;
  std::string error;        // RFC 6750 code; empty when the request had no credentials
  std::string description;  // what went wrong and what to do; never any part of the token
};

namespace {

struct JwtFree {
  void operator()(jwt_t* jwt) const { jwt_free(jwt); }
};

// A copy of a secret that is wiped when it goes out of scope.
class WipedString {
 public:
  explicit WipedString(std::string_view text) : text_(text) {}
  ~WipedString() { OPENSSL_cleanse(text_.data(), text_.size()); }
  WipedString(const WipedString&) = delete;
  WipedString& operator=(const WipedString&) = delete;
  [[nodiscard]] const char* c_str() const { return text_.c_str(); }

 private:
  std::string text_;
};

bool is_safe_id(std::string_view id) {
  static const std::regex kIdPattern("[A-Za-z0-9][A-Za-z0-9_.-]{0,62}");
  return std::regex_match(id.begin(), id.end(), kIdPattern);
}

// The agent id as it may appear in a header, a body or a log line: only when well-formed, since it
// comes from the request's URL.
std::string shown_agent(std::string_view agent_id) {
  return is_safe_id(agent_id) ? "'" + std::string(agent_id) + "'" : "(a malformed agent id)";
}

// RFC 6750 §3: error_description may hold %x20-21 / %x23-5B / %x5D-7E only.
std::string header_safe(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u >= 0x20 && u <= 0x7E && c != '"' && c != '\\' ? c : '\'');
  }
  return out;
}

// The principal of a JWT's subject: "jwt:" and `sub` with every byte outside a small safe set
// ('%' and '~' included) percent-encoded. The encoding is injective, so distinct subjects are
// distinct principals (sessions, audit lines and metrics are bound to the name), and the name is
// printable ASCII that no log line, JSON string or metrics label has to escape. One issuer is
// trusted and `sub` is unique within its issuer (RFC 7519 §4.1.2), so `sub` alone names the user.
// A long subject keeps a readable prefix, then '~' (never in a short name) and the SHA-256 of
// the whole subject, so two long subjects differ however late they differ.
std::string subject_principal(std::string_view sub) {
  constexpr std::size_t kMaxEncoded = 96;
  constexpr std::size_t kLongPrefix = 64;
  constexpr char kHex[] = "0123456789ABCDEF";
  std::string encoded;
  for (char c : sub) {
    const auto u = static_cast<unsigned char>(c);
    const bool safe = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
                      c == '_' || c == '.' || c == '-' || c == '@' || c == ':' || c == '|';
    if (safe) {
      encoded.push_back(c);
    } else {
      encoded += {'%', kHex[u >> 4], kHex[u & 0xF]};
    }
  }
  if (encoded.size() <= kMaxEncoded) return "jwt:" + encoded;
  std::size_t cut = kLongPrefix;
  // Never half an escape: a '%' in the last two kept characters starts one.
  if (const auto percent = encoded.rfind('%', cut - 1);
      percent != std::string::npos && percent + 3 > cut)
    cut = percent;
  return "jwt:" + encoded.substr(0, cut) + "~" + digest_hex(sha256_digest(sub));
}

enum class BearerParse { Missing, OtherScheme, Malformed, Token };

// Splits "Bearer <token>" (scheme case-insensitive, RFC 7235); `token` views into `header`.
BearerParse parse_bearer(std::string_view header, std::string_view& token) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  header = trim(header);
  if (header.empty()) return BearerParse::Missing;
  const auto space = header.find_first_of(" \t");
  const std::string_view scheme = header.substr(0, space);
  constexpr std::string_view kBearer = "bearer";
  bool is_bearer = scheme.size() == kBearer.size();
  for (std::size_t i = 0; is_bearer && i < scheme.size(); ++i)
    is_bearer = std::tolower(static_cast<unsigned char>(scheme[i])) == kBearer[i];
  if (!is_bearer) return BearerParse::OtherScheme;
  if (space == std::string_view::npos) return BearerParse::Malformed;
  token = trim(header.substr(space));
  if (token.empty() || token.size() > Authenticator::kMaxTokenBytes) return BearerParse::Malformed;
  for (char c : token) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7F) return BearerParse::Malformed;
  }
  return BearerParse::Token;
}

bool contains(const std::vector<std::string>& list, std::string_view value) {
  for (const auto& item : list)
    if (item == value) return true;
  return false;
}

bool same_url(std::string_view a, std::string_view b) {
  // "https://x" and "https://x/" name the same resource; clients differ in which they send.
  if (!a.empty() && a.back() == '/') a.remove_suffix(1);
  if (!b.empty() && b.back() == '/') b.remove_suffix(1);
  return a == b;
}

// RFC 9728 §3.1: the well-known segment goes between the host and the resource's path.
std::pair<std::string, std::string> metadata_location(const std::string& public_url) {
  constexpr std::string_view kWellKnown = "/.well-known/oauth-protected-resource";
  const auto scheme_end = public_url.find("://");
  const auto path_start =
      scheme_end == std::string::npos ? std::string::npos : public_url.find('/', scheme_end + 3);
  std::string origin = public_url.substr(0, path_start);
  std::string path = path_start == std::string::npos ? "" : public_url.substr(path_start);
  while (!path.empty() && path.back() == '/') path.pop_back();
  std::string route = std::string(kWellKnown) + path;
  return {origin + route, route};
}

// A NumericDate as a time point, clamped to years 0..5000 so no conversion can overflow.
std::chrono::system_clock::time_point numeric_date(const nlohmann::json& value) {
  const double seconds = std::clamp(value.get<double>(), -62e9, 95e9);
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::duration<double>(seconds)));
}

}  // namespace

std::string jwt_user_key(std::string_view issuer, std::string_view subject) {
  std::string text(issuer);
  text += '\n';
  text += subject;
  return "jwt-" + digest_hex(sha256_digest(text)).substr(0, 32);
}

Authenticator::Authenticator(const ServerConfig& config, Clock clock)
    : config_(config), clock_(std::move(clock)) {
  if (config_.oauth) {
    keys_ = load_verification_keys(config_.oauth->keys_file);
    auto [url, path] = metadata_location(config_.public_url);
    metadata_url_ = std::move(url);
    metadata_path_ = std::move(path);
    spdlog::info("auth: {} key(s) from {} verify access tokens of {}", keys_.size(),
                 config_.oauth->keys_file, config_.oauth->issuer);
  }
}

bool Authenticator::enabled() const {
  return !config_.tokens.empty() || config_.oauth.has_value();
}

AuthDecision Authenticator::refuse(const Refusal& refusal, std::string_view agent_id,
                                   std::string_view principal_name) const {
  AuthDecision decision;
  decision.allowed = false;
  decision.status = refusal.status;
  std::string challenge = "Bearer ";
  challenge += config_.oauth ? "resource_metadata=\"" + metadata_url_ + "\"" : "realm=\"execmcp\"";
  if (!refusal.error.empty())
    challenge += ", error=\"" + refusal.error + "\", error_description=\"" +
                 header_safe(refusal.description) + "\"";
  decision.headers.emplace_back("WWW-Authenticate", std::move(challenge));
  decision.body = nlohmann::json{{"error", refusal.error.empty() ? "unauthorized" : refusal.error},
                                 {"error_description", refusal.description}}
                      .dump();
  // The principal's name (a token name or jwt:<encoded sub>), never the credentials themselves.
  // A refusal costs the log a line only within a budget: a stranger's flood, or a principal's
  // calls to an agent it may not use, would otherwise write a line per request.
  LogThrottle& throttle = refusal.status == 403 ? forbidden_log_ : unauthorized_log_;
  if (!throttle.admit()) return decision;
  spdlog::info(
      "auth: {} refused for agent {} ({}): {}",
      principal_name.empty() ? std::string("request") : "'" + std::string(principal_name) + "'",
      shown_agent(agent_id), refusal.status, refusal.description);
  return decision;
}

const TokenConfig* Authenticator::match_static(const TokenDigest& digest) const {
  const TokenConfig* found = nullptr;
  // Every digest is compared, in constant time each, so timing tells nothing about which came
  // close.
  for (const auto& candidate : config_.tokens) {
    const bool same = CRYPTO_memcmp(candidate.sha256.data(), digest.data(), digest.size()) == 0;
    if (same && found == nullptr) found = &candidate;
  }
  return found;
}

namespace {

// A compact JWS, split at its dots; its header parsed and checked before any key is tried.
struct JwtParts {
  std::string_view header_b64, payload_b64;
  std::string alg, kid;
  bool has_kid = false;
};

// "" or why `token` is not a JWS whose header this server accepts.
std::string check_jwt_header(std::string_view token, JwtParts& parts) {
  const auto first_dot = token.find('.');
  const auto second_dot =
      first_dot == std::string_view::npos ? first_dot : token.find('.', first_dot + 1);
  if (second_dot == std::string_view::npos || token.find('.', second_dot + 1) != token.npos)
    return "the bearer token is not one this server knows";
  parts.header_b64 = token.substr(0, first_dot);
  parts.payload_b64 = token.substr(first_dot + 1, second_dot - first_dot - 1);
  const auto header_text = base64url_decode(parts.header_b64);
  const auto header = header_text ? nlohmann::json::parse(*header_text, nullptr, false)
                                  : nlohmann::json(nlohmann::json::value_t::discarded);
  if (header.is_discarded() || !header.is_object() || !header.contains("alg") ||
      !header["alg"].is_string())
    return "the access token's header is not valid JSON with an \"alg\"";
  parts.alg = header["alg"].get<std::string>();
  // The algorithm is checked here, before libjwt sees the token: libjwt 1.10 verifies whatever
  // alg the token names, so an HS256 token keyed with our public key passes jwt_decode (seen with
  // Debian 12's 1.10.2), and its handling of alg "none" has changed between releases.
  if (parts.alg == "none" || parts.alg.rfind("HS", 0) == 0)
    return "access tokens signed with '" + std::string(parts.alg == "none" ? "none" : "HS*") +
           "' are not accepted (this server verifies RS256/ES256 signatures with public keys)";
  if (header.contains("crit"))
    return "the access token names critical header extensions this server does not understand";
  if (token.size() == second_dot + 1) return "the access token has no signature";
  parts.has_kid = header.contains("kid") && header["kid"].is_string();
  if (parts.has_kid) parts.kid = header["kid"].get<std::string>();
  return "";
}

// "" when a configured key that may sign tokens of this kid and alg verifies `token`, else why not.
std::string check_jwt_signature(std::string_view token, const JwtParts& parts,
                                const std::vector<VerificationKey>& keys) {
  const jwt_alg_t libjwt_alg = jwt_str_alg(parts.alg.c_str());
  const WipedString token_text(token);
  bool any_candidate = false;
  for (const auto& key : keys) {
    // A key without a kid (a PEM file) stands for whatever kid the issuer puts in its tokens.
    if ((parts.has_kid && !key.kid.empty() && key.kid != parts.kid) ||
        !contains(key.algs, parts.alg))
      continue;
    any_candidate = true;
    jwt_t* raw = nullptr;
    const int rc =
        jwt_decode(&raw, token_text.c_str(), reinterpret_cast<const unsigned char*>(key.pem.data()),
                   static_cast<int>(key.pem.size()));
    std::unique_ptr<jwt_t, JwtFree> decoded(raw);
    // libjwt reads the alg from the token itself; insist it verified with the one checked above.
    if (rc == 0 && decoded && libjwt_alg != JWT_ALG_INVAL &&
        jwt_get_alg(decoded.get()) == libjwt_alg)
      return "";
  }
  if (!any_candidate)
    return "no key of this server verifies the access token (its " +
           std::string(parts.has_kid ? "kid and alg " : "alg ") + header_safe(parts.alg) +
           (parts.has_kid ? " match" : " matches") + " no configured key)";
  return "the access token's signature does not verify";
}

bool audience_matches(const nlohmann::json& claims, const std::string& audience) {
  const auto aud = claims.find("aud");
  if (aud == claims.end()) return false;
  if (aud->is_string()) return same_url(aud->get<std::string>(), audience);
  if (!aud->is_array()) return false;
  for (const auto& item : *aud)
    if (item.is_string() && same_url(item.get<std::string>(), audience)) return true;
  return false;
}

// The agents a token grants: the configured claim, a list or a space-separated string (like
// `scope`).
std::vector<std::string> granted_agents(const nlohmann::json& claims, const std::string& claim) {
  std::vector<std::string> agents;
  const auto found = claims.find(claim);
  if (found != claims.end() && found->is_array()) {
    for (const auto& item : *found)
      if (item.is_string()) agents.push_back(item.get<std::string>());
  } else if (found != claims.end() && found->is_string()) {
    const std::string list = found->get<std::string>();
    std::size_t start = 0;
    while (start < list.size()) {
      const auto end = list.find(' ', start);
      const auto item = list.substr(start, end == std::string::npos ? end : end - start);
      if (!item.empty()) agents.push_back(item);
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return agents;
}

}  // namespace

std::string Authenticator::check_jwt_claims(const nlohmann::json& claims,
                                            std::chrono::system_clock::time_point& valid_until,
                                            const std::string& get_new) const {
  const auto& oauth = *config_.oauth;
  if (claims.is_discarded() || !claims.is_object())
    return "the access token's claims are not a JSON object" + get_new;
  if (!claims.contains("iss") || claims["iss"] != oauth.issuer)
    return "the access token was not issued by " + oauth.issuer + get_new;
  if (!audience_matches(claims, oauth.audience))
    return "the access token is not meant for this server (its audience must be " + oauth.audience +
           "); request it with resource=" + oauth.audience;
  const auto now = clock_();
  const auto exp = claims.find("exp");
  if (exp == claims.end() || !exp->is_number())
    return "the access token has no expiry (exp)" + get_new;
  valid_until = numeric_date(*exp) + kLeeway;
  if (now > valid_until) return "the access token has expired" + get_new;
  if (const auto nbf = claims.find("nbf"); nbf != claims.end()) {
    if (!nbf->is_number() || now + kLeeway < numeric_date(*nbf))
      return "the access token is not valid yet (nbf); check the clocks of this server and of " +
             oauth.issuer;
  }
  const auto sub = claims.find("sub");
  if (sub == claims.end() || !sub->is_string() || sub->get_ref<const std::string&>().empty()) {
    // Without a subject every such token would be one principal, sharing sessions and audit lines.
    return "the access token has no subject (sub): this server needs it to tell users apart; ask "
           "the administrator of " +
           oauth.issuer + " to issue tokens with a 'sub' claim";
  }
  return "";
}

Principal Authenticator::verify_jwt(std::string_view token, Refusal& refusal,
                                    std::chrono::system_clock::time_point& valid_until) const {
  const auto& oauth = *config_.oauth;
  refusal = {401, "invalid_token", ""};
  const std::string get_new = "; get a new access token from " + oauth.issuer;
  JwtParts parts;
  if (auto why = check_jwt_header(token, parts); !why.empty()) {
    refusal.description = why + get_new;
    return {};
  }
  if (auto why = check_jwt_signature(token, parts, keys_); !why.empty()) {
    refusal.description = why + get_new;
    return {};
  }
  const auto payload_text = base64url_decode(parts.payload_b64);
  const auto claims = payload_text ? nlohmann::json::parse(*payload_text, nullptr, false)
                                   : nlohmann::json(nlohmann::json::value_t::discarded);
  if (auto why = check_jwt_claims(claims, valid_until, get_new); !why.empty()) {
    refusal.description = why;
    return {};
  }
  Principal principal;
  principal.name = subject_principal(claims["sub"].get_ref<const std::string&>());
  principal.user_key = jwt_user_key(oauth.issuer, claims["sub"].get_ref<const std::string&>());
  principal.agents = granted_agents(claims, oauth.agents_claim);
  if (principal.agents.empty()) {
    refusal = {403, "insufficient_scope",
               "the access token has no '" + oauth.agents_claim +
                   "' claim listing the agents it may use; ask the administrator of " +
                   oauth.issuer + " to add it"};
    return principal;
  }
  refusal = {};
  return principal;
}

std::optional<Principal> Authenticator::cached_jwt(const TokenDigest& digest) const {
  if (!config_.oauth) return std::nullopt;
  const std::lock_guard lock(cache_mutex_);
  const auto it = jwt_cache_.find(digest);
  if (it == jwt_cache_.end()) return std::nullopt;
  if (clock_() > it->second.valid_until) {
    jwt_cache_.erase(it);  // verified again, so the answer says why it is refused
    return std::nullopt;
  }
  return it->second.principal;
}

void Authenticator::remember_jwt(const TokenDigest& digest, const Principal& principal,
                                 std::chrono::system_clock::time_point valid_until) const {
  const std::lock_guard lock(cache_mutex_);
  if (jwt_cache_.size() >= kJwtCacheEntries) {
    const auto now = clock_();
    std::erase_if(jwt_cache_, [&](const auto& entry) { return now > entry.second.valid_until; });
    if (jwt_cache_.size() >= kJwtCacheEntries) jwt_cache_.clear();
  }
  jwt_cache_[digest] = {principal, valid_until};
}

AuthDecision Authenticator::authorize(std::string_view authorization_header,
                                      std::string_view agent_id) const {
  if (!enabled()) {
    AuthDecision open;
    open.allowed = true;
    open.principal = {"anonymous", {"*"}, "anonymous"};
    return open;
  }
  const std::string how =
      config_.oauth ? "a token from server.tokens or an access token from " + config_.oauth->issuer
                    : "a token from server.tokens";
  std::string_view token;
  switch (parse_bearer(authorization_header, token)) {
    case BearerParse::Missing:
      return refuse({401, "",
                     "this endpoint needs credentials: send 'Authorization: Bearer <token>' "
                     "with " +
                         how},
                    agent_id);
    case BearerParse::OtherScheme:
      return refuse({401, "",
                     "only Bearer credentials are accepted: send 'Authorization: Bearer "
                     "<token>' with " +
                         how},
                    agent_id);
    case BearerParse::Malformed:
      return refuse({401, "invalid_token",
                     "the Authorization header is not 'Bearer <token>' (one token of printable "
                     "characters, at most 8 KiB)"},
                    agent_id);
    case BearerParse::Token:
      break;
  }

  const TokenDigest digest = sha256_digest(token);
  Principal principal;
  if (const TokenConfig* match = match_static(digest)) {
    principal = {match->name, match->agents, match->name};
  } else if (auto cached = cached_jwt(digest)) {
    principal = std::move(*cached);
  } else if (config_.oauth) {
    Refusal refusal;
    std::chrono::system_clock::time_point valid_until;
    principal = verify_jwt(token, refusal, valid_until);
    if (!refusal.error.empty()) {
      AuthDecision decision = refuse(refusal, agent_id, principal.name);
      decision.principal = std::move(principal);
      return decision;
    }
    remember_jwt(digest, principal, valid_until);
  } else {
    return refuse(
        {401, "invalid_token", "the bearer token is not one this server knows; use " + how},
        agent_id);
  }

  if (contains(principal.agents, "*") || contains(principal.agents, agent_id)) {
    spdlog::debug("auth: '{}' may use agent {}", principal.name, shown_agent(agent_id));
    AuthDecision decision;
    decision.allowed = true;
    decision.principal = std::move(principal);
    return decision;
  }
  AuthDecision decision = refuse(
      {403, "insufficient_scope",
       "these credentials do not allow agent " + shown_agent(agent_id) +
           "; ask the operator to add it to the token's agents" +
           (config_.oauth ? " (or to the '" + config_.oauth->agents_claim + "' claim)" : "")},
      agent_id, principal.name);
  decision.principal = std::move(principal);
  return decision;
}

std::string Authenticator::protected_resource_metadata(std::string_view resource_url) const {
  nlohmann::json metadata = {{"resource", std::string(resource_url)},
                             {"bearer_methods_supported", {"header"}},
                             {"resource_name", "execmcp"}};
  if (config_.oauth) metadata["authorization_servers"] = config_.oauth->authorization_servers;
  return metadata.dump();
}

}  // namespace execmcp::host::auth
