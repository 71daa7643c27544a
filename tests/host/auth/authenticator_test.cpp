// Tests of Authenticator: bearer tokens, the JWT matrix, 401 vs 403 answers, metadata, quiet logs.
#include "auth/authenticator.hpp"
#include "auth/log_throttle.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "auth/jwt_factory.hpp"
#include "test_support.hpp"

namespace execmcp::host::auth {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr long long kNow = 1'800'000'000;  // the fixed clock of these tests
const std::string kIssuer = "https://auth.example.com";
const std::string kPublicUrl = "https://mcp.example.com";
const std::string kSecretA = "secret-for-agent-a-0123456789abcdef";
const std::string kSecretAll = "secret-for-every-agent-0123456789";

Clock fixed_clock() {
  return [] { return std::chrono::system_clock::time_point(std::chrono::seconds(kNow)); };
}

std::string header_value(const AuthDecision& decision, const std::string& name) {
  for (const auto& [key, value] : decision.headers)
    if (key == name) return value;
  return "(no " + name + ")";
}

nlohmann::json body_of(const AuthDecision& decision) {
  return nlohmann::json::parse(decision.body);
}

// Captures everything spdlog's default logger writes, at every level, for one scope.
class CapturedLog {
 public:
  CapturedLog()
      : previous_(spdlog::default_logger()),
        sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)) {
    auto logger = std::make_shared<spdlog::logger>("captured", sink_);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
  [[nodiscard]] std::string text() const { return text_.str(); }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

ServerConfig static_tokens() {
  ServerConfig config;
  config.tokens.push_back({"ci-bot", sha256_digest(kSecretA), {"agent_a"}, {}});
  config.tokens.push_back({"admin", sha256_digest(kSecretAll), {"*"}, {}});
  return config;
}

TEST(Authenticator, WithoutTokensOrOAuthEveryoneIsAnonymous) {
  const Authenticator auth(ServerConfig{});
  EXPECT_FALSE(auth.enabled());
  const auto decision = auth.authorize("", "agent_a");
  EXPECT_TRUE(decision.allowed);
  EXPECT_EQ(decision.principal.name, "anonymous");
}

TEST(Authenticator, NoCredentialsIs401WithAPlainChallenge) {
  const Authenticator auth(static_tokens());
  EXPECT_TRUE(auth.enabled());
  const auto decision = auth.authorize("", "agent_a");
  EXPECT_FALSE(decision.allowed);
  EXPECT_EQ(decision.status, 401);
  // RFC 6750 §3.1: a request without credentials gets no error code.
  EXPECT_EQ(header_value(decision, "WWW-Authenticate"), "Bearer realm=\"execmcp\"");
  EXPECT_EQ(body_of(decision)["error"], "unauthorized");
  EXPECT_THAT(body_of(decision)["error_description"].get<std::string>(),
              HasSubstr("send 'Authorization: Bearer <token>'"));
}

TEST(Authenticator, StaticTokenBoundToItsAgent) {
  const Authenticator auth(static_tokens());
  const auto allowed = auth.authorize("Bearer " + kSecretA, "agent_a");
  EXPECT_TRUE(allowed.allowed);
  EXPECT_EQ(allowed.status, 200);
  EXPECT_EQ(allowed.principal.name, "ci-bot");
  EXPECT_TRUE(allowed.headers.empty());

  const auto other = auth.authorize("Bearer " + kSecretA, "agent_b");
  EXPECT_FALSE(other.allowed);
  EXPECT_EQ(other.status, 403);
  EXPECT_EQ(other.principal.name, "ci-bot");
  EXPECT_EQ(header_value(other, "WWW-Authenticate"),
            "Bearer realm=\"execmcp\", error=\"insufficient_scope\", error_description=\"these "
            "credentials do not allow agent 'agent_b'; ask the operator to add it to the token's "
            "agents\"");
  EXPECT_EQ(body_of(other)["error"], "insufficient_scope");
  EXPECT_THAT(other.body, HasSubstr("agent_b"));
  EXPECT_THAT(other.body, Not(HasSubstr("ci-bot")));
  EXPECT_THAT(other.body, Not(HasSubstr(kSecretA)));
}

TEST(Authenticator, StarTokenReachesEveryAgent) {
  const Authenticator auth(static_tokens());
  for (const char* agent : {"agent_a", "agent_b", "anything"}) {
    const auto decision = auth.authorize("Bearer " + kSecretAll, agent);
    EXPECT_TRUE(decision.allowed) << agent;
    EXPECT_EQ(decision.principal.name, "admin");
  }
}

TEST(Authenticator, WrongOrGarbledTokensAre401InvalidToken) {
  const Authenticator auth(static_tokens());
  for (const std::string& header : std::vector<std::string>{
           "Bearer " + kSecretA + "x", "Bearer " + kSecretA.substr(1), "Bearer wrong",
           "Bearer " + kSecretA + " " + kSecretA, "Bearer", "Bearer \x01\x02",
           "Bearer " + std::string(Authenticator::kMaxTokenBytes + 1, 'a')}) {
    SCOPED_TRACE(header.substr(0, 40));
    const auto decision = auth.authorize(header, "agent_a");
    EXPECT_FALSE(decision.allowed);
    EXPECT_EQ(decision.status, 401);
    EXPECT_THAT(header_value(decision, "WWW-Authenticate"),
                HasSubstr("Bearer realm=\"execmcp\", error=\"invalid_token\""));
    EXPECT_EQ(body_of(decision)["error"], "invalid_token");
    EXPECT_THAT(decision.body, Not(HasSubstr(kSecretA)));
  }
}

// A stranger's flood of refused requests costs the log a bounded number of lines, not one each.
TEST(Authenticator, RefusalsFloodTheLogAtMostABurstPerWindow) {
  const Authenticator auth(static_tokens());
  const CapturedLog log;
  for (int i = 0; i < 5000; ++i) {
    EXPECT_EQ(auth.authorize(i % 2 ? "" : "Bearer wrong", "agent_a").status, 401);
    EXPECT_EQ(auth.authorize("Bearer " + kSecretA, "agent_b").status, 403);
  }
  const std::string text = log.text();
  const auto lines = std::count(text.begin(), text.end(), '\n');
  // 5000 refusals of each kind; at most a burst of each is logged within one window.
  EXPECT_GE(lines, 2);
  EXPECT_LE(lines, 2 * 20);
}

TEST(LogThrottle, LogsABurstPerWindowThenSaysHowManyWereLeftOut) {
  auto now = std::chrono::steady_clock::now();
  LogThrottle budget("refused requests", 3, std::chrono::seconds(10), [&] { return now; });
  const CapturedLog log;
  int admitted = 0;
  for (int i = 0; i < 100; ++i) admitted += budget.admit() ? 1 : 0;
  EXPECT_EQ(admitted, 3);
  EXPECT_EQ(budget.left_out(), 97U);
  EXPECT_EQ(log.text(), "");
  now += std::chrono::seconds(11);
  EXPECT_TRUE(budget.admit());
  EXPECT_THAT(log.text(), HasSubstr("97 more refused requests were not logged in the last 11 s"));
  EXPECT_EQ(budget.left_out(), 0U);
}

TEST(Authenticator, SchemeIsCaseInsensitiveAndOtherSchemesGetAChallenge) {
  const Authenticator auth(static_tokens());
  EXPECT_TRUE(auth.authorize("bearer " + kSecretA, "agent_a").allowed);
  EXPECT_TRUE(auth.authorize("BEARER   " + kSecretA + "  ", "agent_a").allowed);
  const auto basic = auth.authorize("Basic dXNlcjpwYXNz", "agent_a");
  EXPECT_EQ(basic.status, 401);
  EXPECT_EQ(header_value(basic, "WWW-Authenticate"), "Bearer realm=\"execmcp\"");
  EXPECT_THAT(body_of(basic)["error_description"].get<std::string>(),
              HasSubstr("only Bearer credentials"));
}

TEST(Authenticator, AMalformedAgentIdFromTheUrlIsNeverEchoed) {
  const Authenticator auth(static_tokens());
  const std::string evil = "x\"\r\nSet-Cookie: a=b";
  const auto decision = auth.authorize("Bearer " + kSecretA, evil);
  EXPECT_EQ(decision.status, 403);
  const auto challenge = header_value(decision, "WWW-Authenticate");
  EXPECT_THAT(challenge, HasSubstr("(a malformed agent id)"));
  EXPECT_EQ(challenge.find_first_of("\r\n"), std::string::npos);
  EXPECT_THAT(decision.body, Not(HasSubstr("Set-Cookie")));
}

// OAuth: a JWKS with an RSA and an EC key, plus a fixed clock.
class OAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const nlohmann::json jwks = {{"keys", {rsa_.jwk("rsa-1"), ec_.jwk("ec-1")}}};
    tests::write_text(dir_.path() / "jwks.json", jwks.dump());
    config_ = static_tokens();
    config_.public_url = kPublicUrl;
    config_.oauth =
        OAuthConfig{kIssuer,          kPublicUrl + "/", (dir_.path() / "jwks.json").string(),
                    "execmcp_agents", {kIssuer},        {}};
  }

  [[nodiscard]] nlohmann::json claims() const {
    return {{"iss", kIssuer},   {"aud", kPublicUrl + "/"}, {"sub", "user-1"},
            {"iat", kNow - 10}, {"exp", kNow + 600},       {"execmcp_agents", {"agent_a"}}};
  }
  [[nodiscard]] std::string rs256(const nlohmann::json& claims,
                                  const std::string& kid = "rsa-1") const {
    return tests::sign_jwt(claims, JWT_ALG_RS256, rsa_.private_pem(), kid);
  }
  [[nodiscard]] std::string es256(const nlohmann::json& claims,
                                  const std::string& kid = "ec-1") const {
    return tests::sign_jwt(claims, JWT_ALG_ES256, ec_.private_pem(), kid);
  }

  tests::TempDir dir_;
  tests::KeyPair rsa_ = tests::KeyPair::rsa();
  tests::KeyPair ec_ = tests::KeyPair::ec("P-256");
  ServerConfig config_;
};

TEST_F(OAuthTest, NoCredentialsPointAtTheResourceMetadata) {
  const Authenticator auth(config_, fixed_clock());
  const auto decision = auth.authorize("", "agent_a");
  EXPECT_EQ(decision.status, 401);
  EXPECT_EQ(header_value(decision, "WWW-Authenticate"),
            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/"
            "oauth-protected-resource\"");
  EXPECT_THAT(body_of(decision)["error_description"].get<std::string>(),
              HasSubstr("an access token from https://auth.example.com"));
  EXPECT_EQ(auth.resource_metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource");
  EXPECT_EQ(auth.resource_metadata_path(), "/.well-known/oauth-protected-resource");
}

TEST_F(OAuthTest, MetadataUrlOfAPublicUrlWithAPath) {
  config_.public_url = "https://example.com/execmcp";
  const Authenticator auth(config_, fixed_clock());
  // RFC 9728 §3.1: the well-known segment goes between host and path.
  EXPECT_EQ(auth.resource_metadata_url(),
            "https://example.com/.well-known/oauth-protected-resource/execmcp");
  EXPECT_EQ(auth.resource_metadata_path(), "/.well-known/oauth-protected-resource/execmcp");
}

TEST_F(OAuthTest, ProtectedResourceMetadataJson) {
  config_.oauth->authorization_servers = {kIssuer, "https://backup-auth.example.com"};
  const Authenticator auth(config_, fixed_clock());
  const auto metadata = nlohmann::json::parse(auth.protected_resource_metadata(kPublicUrl));
  EXPECT_EQ(metadata["resource"], kPublicUrl);
  EXPECT_EQ(metadata["authorization_servers"],
            nlohmann::json({kIssuer, "https://backup-auth.example.com"}));
  EXPECT_EQ(metadata["bearer_methods_supported"], nlohmann::json({"header"}));
  EXPECT_EQ(metadata["resource_name"], "execmcp");
}

TEST_F(OAuthTest, StaticTokensStillWorkBesideOAuth) {
  const Authenticator auth(config_, fixed_clock());
  EXPECT_TRUE(auth.authorize("Bearer " + kSecretA, "agent_a").allowed);
  const auto wrong = auth.authorize("Bearer not-a-known-token", "agent_a");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_THAT(header_value(wrong, "WWW-Authenticate"),
              HasSubstr("Bearer resource_metadata=\"https://mcp.example.com/.well-known/"
                        "oauth-protected-resource\", error=\"invalid_token\""));
}

struct JwtCase {
  std::string name;
  std::string token;
  std::string agent = "agent_a";
  int status;               // 200 when allowed
  std::string description;  // a part of error_description; empty when allowed
};

TEST_F(OAuthTest, JwtMatrix) {
  const Authenticator auth(config_, fixed_clock());
  const auto with = [&](const std::string& key, const nlohmann::json& value) {
    auto c = claims();
    c[key] = value;
    return c;
  };
  const auto without = [&](const std::string& key) {
    auto c = claims();
    c.erase(key);
    return c;
  };
  const std::string valid = rs256(claims());
  std::string bad_signature = valid;
  bad_signature[bad_signature.size() - 5] =
      bad_signature[bad_signature.size() - 5] == 'A' ? 'B' : 'A';
  const auto other_rsa = tests::KeyPair::rsa();
  const auto public_pem = rsa_.public_pem();

  const std::vector<JwtCase> cases = {
      {"RS256 valid", valid, "agent_a", 200, ""},
      {"ES256 valid", es256(claims()), "agent_a", 200, ""},
      {"RS384 valid", tests::sign_jwt(claims(), JWT_ALG_RS384, rsa_.private_pem(), "rsa-1"),
       "agent_a", 200, ""},
      {"no kid: the key that fits the alg", rs256(claims(), ""), "agent_a", 200, ""},
      {"audience in a list", rs256(with("aud", {"https://other.example", kPublicUrl})), "agent_a",
       200, ""},
      {"audience without the trailing slash", rs256(with("aud", kPublicUrl)), "agent_a", 200, ""},
      {"expired within the leeway", rs256(with("exp", kNow - 30)), "agent_a", 200, ""},
      {"nbf within the leeway", rs256(with("nbf", kNow + 30)), "agent_a", 200, ""},
      {"agents as a space-separated string", rs256(with("execmcp_agents", "agent_x agent_a")),
       "agent_a", 200, ""},
      {"every agent", rs256(with("execmcp_agents", {"*"})), "agent_b", 200, ""},
      {"expired", rs256(with("exp", kNow - 120)), "agent_a", 401,
       "the access token has expired; get a new access token from https://auth.example.com"},
      {"no exp", rs256(without("exp")), "agent_a", 401, "has no expiry (exp)"},
      {"not yet valid", rs256(with("nbf", kNow + 300)), "agent_a", 401, "is not valid yet (nbf)"},
      {"wrong issuer", rs256(with("iss", "https://evil.example.com")), "agent_a", 401,
       "was not issued by https://auth.example.com"},
      {"foreign audience", rs256(with("aud", "https://other.example.com")), "agent_a", 401,
       "is not meant for this server (its audience must be https://mcp.example.com/)"},
      {"no audience", rs256(without("aud")), "agent_a", 401, "is not meant for this server"},
      {"bad signature", bad_signature, "agent_a", 401, "signature does not verify"},
      {"signed by another key under our kid",
       tests::sign_jwt(claims(), JWT_ALG_RS256, other_rsa.private_pem(), "rsa-1"), "agent_a", 401,
       "signature does not verify"},
      {"ES256 token claiming the RSA kid", es256(claims(), "rsa-1"), "agent_a", 401,
       "no key of this server verifies the access token (its kid and alg ES256 match no "
       "configured key)"},
      {"unknown kid", rs256(claims(), "rsa-2"), "agent_a", 401, "match no configured key"},
      {"alg none", tests::raw_jwt({{"alg", "none"}, {"typ", "JWT"}}, claims(), ""), "agent_a", 401,
       "signed with 'none' are not accepted"},
      {"alg none with a signature",
       tests::raw_jwt({{"alg", "none"}, {"kid", "rsa-1"}}, claims(), "c2ln"), "agent_a", 401,
       "signed with 'none' are not accepted"},
      {"HS256 keyed with the public key",
       tests::sign_jwt(claims(), JWT_ALG_HS256, public_pem, "rsa-1"), "agent_a", 401,
       "signed with 'HS*' are not accepted"},
      {"critical header extension",
       tests::raw_jwt({{"alg", "RS256"}, {"crit", {"exp"}}}, claims(), "c2ln"), "agent_a", 401,
       "critical header extensions"},
      {"no signature", tests::raw_jwt({{"alg", "RS256"}, {"kid", "rsa-1"}}, claims(), ""),
       "agent_a", 401, "has no signature"},
      {"not a JWT", "a.b.c", "agent_a", 401, "header is not valid JSON"},
      {"four parts", valid + ".x", "agent_a", 401, "the bearer token is not one this server knows"},
      {"no subject", rs256(without("sub")), "agent_a", 401,
       "the access token has no subject (sub)"},
      {"empty subject", rs256(with("sub", "")), "agent_a", 401,
       "the access token has no subject (sub)"},
      {"subject not a string", rs256(with("sub", 42)), "agent_a", 401,
       "the access token has no subject (sub)"},
      {"missing agents claim", rs256(without("execmcp_agents")), "agent_a", 403,
       "the access token has no 'execmcp_agents' claim"},
      {"agents claim of the wrong type", rs256(with("execmcp_agents", 7)), "agent_a", 403,
       "the access token has no 'execmcp_agents' claim"},
      {"another agent", valid, "agent_b", 403,
       "these credentials do not allow agent 'agent_b'; ask the operator to add it to the "
       "token's agents (or to the 'execmcp_agents' claim)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto decision = auth.authorize("Bearer " + c.token, c.agent);
    EXPECT_EQ(decision.status, c.status);
    EXPECT_EQ(decision.allowed, c.status == 200);
    if (c.status == 200) {
      EXPECT_EQ(decision.principal.name, "jwt:user-1");
      continue;
    }
    const auto body = body_of(decision);
    EXPECT_EQ(body["error"], c.status == 401 ? "invalid_token" : "insufficient_scope");
    EXPECT_THAT(body["error_description"].get<std::string>(), HasSubstr(c.description));
    EXPECT_THAT(header_value(decision, "WWW-Authenticate"),
                HasSubstr("Bearer resource_metadata=\"" + auth.resource_metadata_url() +
                          "\", error=\"" + body["error"].get<std::string>() + "\""));
    const std::string signature = c.token.substr(c.token.rfind('.') + 1);
    if (signature.size() >= 16) {
      EXPECT_THAT(decision.body, Not(HasSubstr(signature)));
    }
  }
}

TEST_F(OAuthTest, DistinctSubjectsAreDistinctPrincipals) {
  const Authenticator auth(config_, fixed_clock());
  const std::string long_sub(300, 'a');
  const std::vector<std::string> subjects = {
      "alice bob",  "alice/bob",    "alice_bob",    "alice%20bob",  "alice%2Fbob",  "alice\nbob",
      "alice\tbob", "alice~bob",    "alicé",        "alice\"bob",   "alice\\bob",   "?",
      long_sub,     long_sub + "b", long_sub + "c", long_sub + "%", long_sub + "/", long_sub + "a"};
  std::set<std::string> names;
  for (const auto& sub : subjects) {
    SCOPED_TRACE(sub.substr(0, 40));
    auto c = claims();
    c["sub"] = sub;
    const auto decision = auth.authorize("Bearer " + rs256(c), "agent_a");
    ASSERT_TRUE(decision.allowed);
    const std::string& name = decision.principal.name;
    EXPECT_TRUE(names.insert(name).second) << "collides: " << name;
    EXPECT_EQ(name.rfind("jwt:", 0), 0U) << name;
    EXPECT_LE(name.size(), 160U) << name;
    for (char ch : name) {
      // Printable, and nothing a log line, a JSON string or a metrics label would have to escape.
      EXPECT_TRUE(ch > 0x20 && ch < 0x7F && ch != '"' && ch != '\\' && ch != '\'') << name;
    }
  }
  // A plain subject reads as itself; the rest are percent-encoded, readable enough to find the
  // user.
  auto c = claims();
  c["sub"] = "auth0|user.1@example.com";
  EXPECT_EQ(auth.authorize("Bearer " + rs256(c), "agent_a").principal.name,
            "jwt:auth0|user.1@example.com");
  EXPECT_EQ(names.count("jwt:alice%20bob"), 1U);
  EXPECT_EQ(names.count("jwt:alice%2Fbob"), 1U);
  EXPECT_EQ(names.count("jwt:alice_bob"), 1U);
  // Static tokens keep their configured names.
  EXPECT_EQ(auth.authorize("Bearer " + kSecretA, "agent_a").principal.name, "ci-bot");
  EXPECT_EQ(auth.authorize("Bearer " + kSecretAll, "agent_b").principal.name, "admin");
}

TEST_F(OAuthTest, GarbageIsRefusedWithAWellFormedChallenge) {
  const Authenticator auth(config_, fixed_clock());
  const CapturedLog quiet;  // 2000 refusals
  std::mt19937 random(8);   // fixed seed: the same inputs every run
  const std::string alphabet = "AZaz09-_.=+/ \t\"\\\r\n\x01\xff{}[]:,";
  std::vector<std::string> headers = {
      // Deep nesting in the header and the claims, within the 8 KiB bound.
      "Bearer " + tests::base64url_encode(std::string(3000, '[')) + ".e30.c2ln",
      "Bearer " + tests::raw_jwt({{"alg", "RS256"}, {"kid", "rsa-1"}}, claims(), "c2ln") + ".",
      "Bearer " + tests::base64url_encode(R"({"alg":"RS256","kid":"rsa-1"})") + "." +
          tests::base64url_encode(std::string(2000, '[')) + ".c2ln"};
  for (int i = 0; i < 2000; ++i) {
    std::string token(random() % 200, ' ');
    for (auto& c : token) c = alphabet[random() % alphabet.size()];
    headers.push_back("Bearer " + token);
  }
  for (const auto& header : headers) {
    const auto decision = auth.authorize(header, "agent_a");
    ASSERT_FALSE(decision.allowed) << header;
    ASSERT_EQ(decision.status, 401) << header;
    const auto challenge = header_value(decision, "WWW-Authenticate");
    ASSERT_EQ(challenge.find_first_of("\r\n"), std::string::npos) << header;
    ASSERT_TRUE(nlohmann::json::accept(decision.body)) << header;
  }
}

TEST_F(OAuthTest, ARememberedTokenStillExpiresAndStillNeedsItsAgent) {
  auto now = std::make_shared<std::atomic<long long>>(kNow);
  const Authenticator auth(config_, [now] {
    return std::chrono::system_clock::time_point(std::chrono::seconds(now->load()));
  });
  const std::string header = "Bearer " + rs256(claims());  // exp: kNow + 600
  EXPECT_TRUE(auth.authorize(header, "agent_a").allowed);
  EXPECT_TRUE(auth.authorize(header, "agent_a").allowed);
  const auto other = auth.authorize(header, "agent_b");
  EXPECT_EQ(other.status, 403);
  EXPECT_EQ(other.principal.name, "jwt:user-1");
  now->store(kNow + 600 + 59);
  EXPECT_TRUE(auth.authorize(header, "agent_a").allowed) << "within the leeway";
  now->store(kNow + 600 + 61);
  const auto expired = auth.authorize(header, "agent_a");
  EXPECT_EQ(expired.status, 401);
  EXPECT_THAT(body_of(expired)["error_description"].get<std::string>(),
              HasSubstr("the access token has expired"));
}

TEST_F(OAuthTest, PemKeyFile) {
  tests::write_text(dir_.path() / "key.pem", rsa_.public_pem());
  config_.oauth->keys_file = (dir_.path() / "key.pem").string();
  const Authenticator auth(config_, fixed_clock());
  EXPECT_TRUE(auth.authorize("Bearer " + rs256(claims(), ""), "agent_a").allowed);
  EXPECT_TRUE(auth.authorize("Bearer " + rs256(claims(), "whatever-kid"), "agent_a").allowed)
      << "a key without a kid verifies tokens with any kid";
  EXPECT_EQ(auth.authorize("Bearer " + es256(claims(), ""), "agent_a").status, 401);
}

TEST_F(OAuthTest, JwksKeysAreChosenByKid) {
  // Two RSA keys: each token verifies with the key its kid names, and with no other.
  const auto second = tests::KeyPair::rsa();
  const nlohmann::json jwks = {{"keys", {rsa_.jwk("rsa-1"), second.jwk("rsa-2")}}};
  tests::write_text(dir_.path() / "jwks.json", jwks.dump());
  const Authenticator auth(config_, fixed_clock());
  EXPECT_TRUE(auth.authorize("Bearer " + rs256(claims(), "rsa-1"), "agent_a").allowed);
  EXPECT_TRUE(auth.authorize("Bearer " + tests::sign_jwt(claims(), JWT_ALG_RS256,
                                                         second.private_pem(), "rsa-2"),
                             "agent_a")
                  .allowed);
  const auto swapped = auth.authorize(
      "Bearer " + tests::sign_jwt(claims(), JWT_ALG_RS256, second.private_pem(), "rsa-1"),
      "agent_a");
  EXPECT_EQ(swapped.status, 401);
}

TEST_F(OAuthTest, ConstructorNamesAnUnusableKeysFile) {
  config_.oauth->keys_file = dir_.str() + "/absent.json";
  try {
    const Authenticator auth(config_);
    FAIL() << "expected a throw";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr(dir_.str() + "/absent.json"));
  }
}

TEST_F(OAuthTest, NoSecretEverReachesTheLog) {
  const std::string jwt = rs256(claims());
  const std::string expired = rs256([&] {
    auto c = claims();
    c["exp"] = kNow - 3600;
    return c;
  }());
  const std::string env_secret = "env-token-never-logged-0123456789";
  tests::ScopedEnv env("EXECMCP_TEST_TOKEN_LOG", env_secret);
  CapturedLog log;
  {
    const auto config = load_config_text(R"(execmcp: 1
agents:
  - {id: agent_a, cwd: /tmp/a}
server:
  tokens:
    - {name: from-env, env: EXECMCP_TEST_TOKEN_LOG, agents: [agent_a]}
)",
                                         "/cfg/x.yaml");
    const Authenticator from_env(*config->server, fixed_clock());
    EXPECT_TRUE(from_env.authorize("Bearer " + env_secret, "agent_a").allowed);
    EXPECT_EQ(from_env.authorize("Bearer " + env_secret, "agent_b").status, 403);
  }
  const Authenticator auth(config_, fixed_clock());
  for (const std::string& header :
       std::vector<std::string>{"Bearer " + kSecretA, "Bearer " + kSecretA + "x", "Bearer " + jwt,
                                "Bearer " + expired, "Basic " + kSecretA, "Bearer " + kSecretAll}) {
    for (const char* agent : {"agent_a", "agent_b"}) (void)auth.authorize(header, agent);
  }
  const std::string text = log.text();
  // The log says who and why...
  EXPECT_THAT(text, HasSubstr("'ci-bot' refused for agent 'agent_b' (403)"));
  EXPECT_THAT(text, HasSubstr("'from-env' may use agent 'agent_a'"));
  EXPECT_THAT(text, HasSubstr("'jwt:user-1' may use agent 'agent_a'"));
  EXPECT_THAT(text, HasSubstr("the access token has expired"));
  // ...and never with what.
  for (const std::string& secret : std::vector<std::string>{
           kSecretA, kSecretAll, env_secret, jwt, jwt.substr(jwt.rfind('.') + 1),
           expired.substr(expired.rfind('.') + 1), jwt.substr(0, jwt.find('.') + 20)}) {
    EXPECT_THAT(text, Not(HasSubstr(secret)));
  }
}

TEST_F(OAuthTest, EachPrincipalHasAUserKeyThatNamesADirectory) {
  const Authenticator auth(config_, fixed_clock());
  EXPECT_EQ(auth.authorize("Bearer " + kSecretA, "agent_a").principal.user_key, "ci-bot");
  std::set<std::string> keys;
  for (const std::string& sub :
       std::vector<std::string>{"alice", "alice/../bob", std::string(300, 'a'), "alice\n"}) {
    auto c = claims();
    c["sub"] = sub;
    const auto decision = auth.authorize("Bearer " + rs256(c), "agent_a");
    ASSERT_TRUE(decision.allowed);
    const std::string& key = decision.principal.user_key;
    EXPECT_TRUE(keys.insert(key).second) << "collides: " << key;
    // "jwt-" and the first 32 hex digits of SHA-256(iss "\n" sub).
    EXPECT_EQ(key, jwt_user_key(config_.oauth->issuer, sub));
    EXPECT_EQ(key.size(), 36u);
    EXPECT_EQ(key.find_first_not_of("0123456789abcdef", 4), std::string::npos) << key;
  }
  EXPECT_EQ(jwt_user_key("https://issuer.example", "alice"),
            "jwt-" + digest_hex(sha256_digest("https://issuer.example\nalice")).substr(0, 32));
  // The same subject from another issuer is another user.
  EXPECT_NE(jwt_user_key("https://a.example", "alice"), jwt_user_key("https://b.example", "alice"));
  EXPECT_EQ(Authenticator(ServerConfig{}).authorize("", "agent_a").principal.user_key, "anonymous");
}

}  // namespace
}  // namespace execmcp::host::auth
