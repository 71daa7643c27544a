// Reads the native schema's `server:` section: origins, static bearer tokens and the OAuth
// settings.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <vector>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "config/config_parsers.hpp"

namespace execmcp::host {

TokenDigest sha256_digest(std::string_view text) {
  TokenDigest digest{};
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != digest.size())
    throw std::runtime_error("SHA-256 failed in OpenSSL");
  return digest;
}

std::string digest_hex(const TokenDigest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * digest.size());
  for (const unsigned char byte : digest) {
    text += kHex[byte >> 4];
    text += kHex[byte & 15];
  }
  return text;
}

namespace config_detail {

namespace {

// A token file is a few dozen bytes; anything larger is a mistake (a key, a whole secrets dir).
constexpr std::size_t kMaxTokenFileBytes = 16 * 1024;
// Shorter secrets can be guessed by whoever can reach the port.
constexpr std::size_t kMinTokenLength = 16;

bool is_safe_name(const std::string& name) {
  static const std::regex kNamePattern("[A-Za-z0-9][A-Za-z0-9_.-]{0,62}");
  return std::regex_match(name, kNamePattern);
}

// "https://host[:port]" with an optional path and no query or fragment.
bool is_http_url(const std::string& url, bool allow_path) {
  static const std::regex kWithPath(R"(https?://[^/?#\s"]+(/[^?#\s"]*)?)");
  static const std::regex kOriginOnly(R"(https?://[^/?#\s"]+)");
  return std::regex_match(url, allow_path ? kWithPath : kOriginOnly);
}

// A Host header value to allow: "name" or "name:port", an IPv6 literal in brackets.
bool is_host(const std::string& host) {
  static const std::regex kHost(R"((\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:[0-9]{1,5})?)");
  return std::regex_match(host, kHost);
}

std::optional<TokenDigest> parse_hex_digest(const std::string& hex) {
  if (hex.size() != 64) return std::nullopt;
  TokenDigest digest{};
  for (std::size_t i = 0; i < digest.size(); ++i) {
    unsigned value = 0;
    for (char c : {hex[2 * i], hex[2 * i + 1]}) {
      value <<= 4;
      if (c >= '0' && c <= '9') {
        value |= static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        value |= static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        value |= static_cast<unsigned>(c - 'A' + 10);
      } else {
        return std::nullopt;
      }
    }
    digest[i] = static_cast<unsigned char>(value);
  }
  return digest;
}

// Trailing newlines are dropped: `echo secret > file` and `docker secret` both leave one.
std::size_t trimmed_length(const char* data, std::size_t size) {
  while (size > 0 && (data[size - 1] == '\n' || data[size - 1] == '\r')) --size;
  return size;
}

// Hashes the secret in `buffer` and wipes it; returns nullopt (and records why) when it is
// unusable. Messages name where the secret came from, never any part of it.
std::optional<TokenDigest> digest_secret(YamlReader& reader, const YAML::Node& node,
                                         const std::string& path, const std::string& source,
                                         char* data, std::size_t size, Config& config,
                                         const std::string& token_name) {
  const std::size_t length = trimmed_length(data, size);
  std::optional<TokenDigest> digest;
  if (length == 0) {
    reader.error(node, path, source + " is empty");
  } else {
    digest = sha256_digest(std::string_view(data, length));
    if (length < kMinTokenLength)
      config.warnings.push_back("token '" + token_name + "' (" + source + ") is shorter than " +
                                std::to_string(kMinTokenLength) +
                                " characters: use a long random secret (openssl rand -hex 32)");
  }
  OPENSSL_cleanse(data, size);
  return digest;
}

std::optional<TokenDigest> read_env_token(YamlReader& reader, const YAML::Node& node,
                                          const std::string& path, Config& config,
                                          ServerConfig& server, const std::string& token_name) {
  auto name = reader.get_string(node, path);
  if (!name) return std::nullopt;
  static const std::regex kEnvName("[A-Za-z_][A-Za-z0-9_]*");
  if (!std::regex_match(*name, kEnvName)) {
    reader.error(node, path, "'" + *name + "' is not an environment variable name");
    return std::nullopt;
  }
  const char* value = std::getenv(name->c_str());
  if (value == nullptr) {
    reader.error(node, path,
                 "environment variable " + *name +
                     " is not set (it should hold the token; or use sha256: or file:)");
    return std::nullopt;
  }
  server.secret_env.push_back(*name);
  // Copied into a buffer this function owns so the copy can be wiped; the environment's own copy
  // is the serve command's to remove (ServerConfig::secret_env).
  std::vector<char> buffer(value, value + std::char_traits<char>::length(value));
  return digest_secret(reader, node, path, "environment variable " + *name, buffer.data(),
                       buffer.size(), config, token_name);
}

std::optional<TokenDigest> read_file_token(YamlReader& reader, const YAML::Node& node,
                                           const std::string& path, const std::string& base_dir,
                                           Config& config, const std::string& token_name) {
  auto file = get_path(reader, node, path, base_dir);
  if (!file) return std::nullopt;
  std::ifstream in(*file, std::ios::binary);
  if (!in) {
    reader.error(node, path, "cannot read token file " + *file);
    return std::nullopt;
  }
  // One fixed buffer, read once: no reallocation leaves copies of the secret behind.
  std::vector<char> buffer(kMaxTokenFileBytes + 1);
  in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  const auto got = static_cast<std::size_t>(in.gcount());
  if (in.bad()) {
    OPENSSL_cleanse(buffer.data(), buffer.size());
    reader.error(node, path, "cannot read token file " + *file);
    return std::nullopt;
  }
  if (got > kMaxTokenFileBytes) {
    OPENSSL_cleanse(buffer.data(), buffer.size());
    reader.error(node, path,
                 "token file " + *file + " is larger than " + std::to_string(kMaxTokenFileBytes) +
                     " bytes (it should hold just the token)");
    return std::nullopt;
  }
  auto digest = digest_secret(reader, node, path, "token file " + *file, buffer.data(), got, config,
                              token_name);
  OPENSSL_cleanse(buffer.data(), buffer.size());
  return digest;
}

// `agents:` of a token: ids of this config's agents, or "*" alone.
std::optional<std::vector<std::string>> read_token_agents(YamlReader& reader,
                                                          const YAML::Node& node,
                                                          const std::string& path,
                                                          const Config& config) {
  auto agents = reader.get_string_list(node, path);
  if (!agents) return std::nullopt;
  if (agents->empty()) {
    reader.error(node, path, "the list is empty (name the agents this token may use, or \"*\")");
    return std::nullopt;
  }
  bool ok = true;
  for (std::size_t i = 0; i < agents->size(); ++i) {
    const auto& id = (*agents)[i];
    if (id == "*") {
      if (agents->size() > 1) {
        reader.error(node[i], index_key(path, i), "\"*\" (every agent) must stand alone");
        ok = false;
      }
      continue;
    }
    bool known = false;
    for (const auto& agent : config.agents) known = known || agent.id == id;
    if (!known) {
      std::string ids;
      for (const auto& agent : config.agents) ids += (ids.empty() ? "" : ", ") + agent.id;
      reader.error(node[i], index_key(path, i),
                   "no agent '" + id + "' in this config (agents: " + ids + ")");
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return agents;
}

void read_token(YamlReader& reader, const YAML::Node& node, const std::string& path,
                const std::string& base_dir, Config& config, ServerConfig& server,
                std::set<std::string>& names) {
  if (!reader.expect_map(node, path)) return;
  reader.reject_unknown_keys(node, path, {"name", "sha256", "env", "file", "agents"});
  TokenConfig token;
  token.location = reader.location(node);
  bool ok = true;
  const std::string name_path = join_key(path, "name");
  if (!node["name"]) {
    reader.error(node, name_path, "required key is missing (shown in logs instead of the token)");
    ok = false;
  } else if (auto name = reader.get_string(node["name"], name_path)) {
    if (!is_safe_name(*name)) {
      reader.error(node["name"], name_path,
                   "token name '" + *name +
                       "' must start with a letter or digit and contain only letters, digits, "
                       "'_', '.', '-' (at most 63 characters)");
      ok = false;
    } else if (std::regex_match(*name, std::regex("jwt-[0-9a-f]{32}"))) {
      reader.error(node["name"], name_path,
                   "token name '" + *name +
                       "' is reserved: 'jwt-' and 32 hex digits is the user key of a JWT's "
                       "subject (per-user agents)");
      ok = false;
    } else if (!names.insert(*name).second) {
      reader.error(node["name"], name_path, "duplicate token name '" + *name + "'");
      ok = false;
    } else {
      token.name = *name;
    }
  } else {
    ok = false;
  }

  int sources = 0;
  for (const char* key : {"sha256", "env", "file"}) sources += node[key] ? 1 : 0;
  if (sources != 1) {
    reader.error(node, path,
                 sources == 0 ? "the token is missing: give one of sha256:, env: or file:"
                              : "give only one of sha256:, env: or file:");
    ok = false;
  } else if (const auto hex_node = node["sha256"]) {
    if (auto hex = reader.get_string(hex_node, join_key(path, "sha256"))) {
      if (auto digest = parse_hex_digest(*hex)) {
        token.sha256 = *digest;
      } else {
        // The value is not echoed: someone may have pasted the token itself here.
        reader.error(hex_node, join_key(path, "sha256"),
                     "expected 64 hex digits (the SHA-256 of the token: printf %s TOKEN | "
                     "sha256sum)");
        ok = false;
      }
    } else {
      ok = false;
    }
  } else if (const auto env_node = node["env"]) {
    auto digest =
        read_env_token(reader, env_node, join_key(path, "env"), config, server, token.name);
    ok = ok && digest.has_value();
    if (digest) token.sha256 = *digest;
  } else {
    auto digest =
        read_file_token(reader, node["file"], join_key(path, "file"), base_dir, config, token.name);
    ok = ok && digest.has_value();
    if (digest) token.sha256 = *digest;
  }

  const std::string agents_path = join_key(path, "agents");
  if (!node["agents"]) {
    reader.error(node, agents_path, "required key is missing (the agents this token may use)");
    ok = false;
  } else if (auto agents = read_token_agents(reader, node["agents"], agents_path, config)) {
    token.agents = std::move(*agents);
  } else {
    ok = false;
  }
  if (ok) server.tokens.push_back(std::move(token));
}

std::optional<std::string> read_url(YamlReader& reader, const YAML::Node& node,
                                    const std::string& path) {
  auto url = reader.get_string(node, path);
  if (!url) return std::nullopt;
  if (!is_http_url(*url, true)) {
    reader.error(
        node, path,
        "expected an http:// or https:// URL without query or fragment, found '" + *url + "'");
    return std::nullopt;
  }
  return url;
}

void read_oauth(YamlReader& reader, const YAML::Node& node, const std::string& path,
                const std::string& base_dir, ServerConfig& server) {
  if (!reader.expect_map(node, path)) return;
  reader.reject_unknown_keys(
      node, path, {"issuer", "audience", "keys", "agents_claim", "authorization_servers"});
  OAuthConfig oauth;
  oauth.location = reader.location(node);
  bool ok = true;
  if (!node["issuer"]) {
    reader.error(node, join_key(path, "issuer"),
                 "required key is missing (the authorization server's issuer URL)");
    ok = false;
  } else if (auto issuer = read_url(reader, node["issuer"], join_key(path, "issuer"))) {
    oauth.issuer = *issuer;
  } else {
    ok = false;
  }
  if (node["audience"]) {
    if (auto audience = reader.get_string(node["audience"], join_key(path, "audience"))) {
      if (audience->empty()) {
        reader.error(node["audience"], join_key(path, "audience"), "the audience is empty");
        ok = false;
      }
      oauth.audience = *audience;
    } else {
      ok = false;
    }
  } else if (server.public_url.empty()) {
    reader.error(node, join_key(path, "audience"),
                 "required key is missing (or set server.public_url, its default)");
    ok = false;
  } else {
    oauth.audience = server.public_url;
  }
  if (!node["keys"]) {
    reader.error(node, join_key(path, "keys"),
                 "required key is missing (a JWKS file or a PEM public key file)");
    ok = false;
  } else if (auto keys = get_path(reader, node["keys"], join_key(path, "keys"), base_dir)) {
    oauth.keys_file = *keys;
  } else {
    ok = false;
  }
  if (node["agents_claim"]) {
    auto claim = reader.get_string(node["agents_claim"], join_key(path, "agents_claim"));
    if (claim && !claim->empty()) {
      oauth.agents_claim = *claim;
    } else {
      if (claim)
        reader.error(node["agents_claim"], join_key(path, "agents_claim"), "the claim is empty");
      ok = false;
    }
  }
  if (const auto servers = node["authorization_servers"]) {
    const std::string servers_path = join_key(path, "authorization_servers");
    if (reader.expect_list(servers, servers_path)) {
      for (std::size_t i = 0; i < servers.size(); ++i) {
        if (auto url = read_url(reader, servers[i], index_key(servers_path, i))) {
          oauth.authorization_servers.push_back(*url);
        } else {
          ok = false;
        }
      }
    } else {
      ok = false;
    }
  }
  if (oauth.authorization_servers.empty() && !oauth.issuer.empty())
    oauth.authorization_servers.push_back(oauth.issuer);
  if (server.public_url.empty()) {
    // The 401 challenge must point clients at absolute metadata, which needs this server's URL.
    reader.error(node, path,
                 "server.oauth needs server.public_url (the URL clients reach this server at; "
                 "the 401 answer points at <public_url>/.well-known/oauth-protected-resource)");
    ok = false;
  }
  if (ok) server.oauth = std::move(oauth);
}

}  // namespace

void parse_server(const YAML::Node& node, YamlReader& reader, Config& config,
                  const std::string& base_dir) {
  if (!reader.expect_map(node, "server")) return;
  reader.reject_unknown_keys(
      node, "server",
      {"allowed_origins", "allowed_hosts", "allow_local_agents", "public_url", "tokens", "oauth"});
  ServerConfig server;
  server.location = reader.location(node);
  if (const auto origins = node["allowed_origins"]) {
    if (auto list = reader.get_string_list(origins, "server.allowed_origins")) {
      for (std::size_t i = 0; i < list->size(); ++i) {
        std::string origin = (*list)[i];
        if (!is_http_url(origin, false)) {
          reader.error(origins[i], index_key("server.allowed_origins", i),
                       "expected an origin like https://app.example.com (scheme, host, optional "
                       "port; no path), found '" +
                           origin + "'");
          continue;
        }
        for (auto& c : origin) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        server.allowed_origins.push_back(std::move(origin));
      }
    }
  }
  if (const auto hosts = node["allowed_hosts"]) {
    if (auto list = reader.get_string_list(hosts, "server.allowed_hosts")) {
      for (std::size_t i = 0; i < list->size(); ++i) {
        std::string host = (*list)[i];
        if (!is_host(host)) {
          reader.error(hosts[i], index_key("server.allowed_hosts", i),
                       "expected a host name like mcp.example.com or mcp.example.com:8443 (no "
                       "scheme, no path), found '" +
                           host + "'");
          continue;
        }
        for (auto& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        server.allowed_hosts.push_back(std::move(host));
      }
    }
  }
  if (const auto value = node["allow_local_agents"]) {
    if (auto allow = reader.get_bool(value, "server.allow_local_agents"))
      server.allow_local_agents = *allow;
  }
  if (const auto value = node["public_url"]) {
    if (auto url = read_url(reader, value, "server.public_url")) {
      while (url->size() > 1 && url->back() == '/') url->pop_back();
      server.public_url = *url;
    }
  }
  if (const auto tokens = node["tokens"]) {
    if (reader.expect_list(tokens, "server.tokens")) {
      std::set<std::string> names;
      for (std::size_t i = 0; i < tokens.size(); ++i)
        read_token(reader, tokens[i], index_key("server.tokens", i), base_dir, config, server,
                   names);
      // One secret under two names would make the name in the audit trail a guess.
      for (std::size_t i = 0; i < server.tokens.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (server.tokens[i].sha256 == server.tokens[j].sha256)
            reader.error_at(server.tokens[i].location.line, "server.tokens",
                            "tokens '" + server.tokens[j].name + "' and '" + server.tokens[i].name +
                                "' are the same secret");
    }
  }
  if (const auto oauth = node["oauth"]) read_oauth(reader, oauth, "server.oauth", base_dir, server);
  config.server = std::move(server);
}

}  // namespace config_detail

}  // namespace execmcp::host
