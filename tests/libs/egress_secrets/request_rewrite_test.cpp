// The injector's decision per request: where a placeholder becomes its value, where it stays and
// why, the requests refused outright, and the header changes every intercepted request gets.
#include "execmcp/egress_secrets/request_rewrite.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "execmcp/common/base64.hpp"

namespace es = execmcp::egress_secrets;
using execmcp::common::base64_encode;

namespace {

constexpr const char* kValue = "ghp_RealValue0123456789abcdef";
constexpr const char* kPlaceholder = "ghp_Xy7Kq2Lm9Pz4Wt1Rv8Ns3Bc6D";

es::SecretRule rule() {
  es::SecretRule s;
  s.name = "GITHUB_TOKEN";
  s.value = kValue;
  s.placeholder = kPlaceholder;
  s.hosts = {"api.test"};
  return s;
}

es::RequestHead head(std::string method, std::string target,
                     std::vector<std::pair<std::string, std::string>> headers) {
  return {std::move(method), std::move(target), std::move(headers)};
}

std::string header(const es::RequestHead& h, std::string_view name) {
  for (const auto& [n, v] : h.headers)
    if (n == name) return v;
  return "<none>";
}

std::string bearer(const char* token) {
  return std::string("Bearer ") + token;
}

// The single outcome of `h` against `s` over TLS to api.test.
es::SecretOutcome one(es::RequestHead& h, const es::SecretRule& s, std::string host = "api.test",
                      bool tls = true) {
  const auto result = es::rewrite_request(h, host, tls, {s});
  EXPECT_FALSE(result.refusal) << *result.refusal;
  EXPECT_EQ(result.outcomes.size(), 1u);
  return result.outcomes.empty() ? es::SecretOutcome{} : result.outcomes[0];
}

}  // namespace

TEST(CanonicalPath, TakesThePathBeforeTheQuery) {
  EXPECT_EQ(es::canonical_path("/repos/a/b?x=1/../"), "/repos/a/b");
  EXPECT_EQ(es::canonical_path("/"), "/");
  EXPECT_EQ(es::canonical_path("/a/b/"), "/a/b/");
  EXPECT_EQ(es::canonical_path("/a%20b/.x/..y/%41"), "/a%20b/.x/..y/%41");
}

TEST(CanonicalPath, RefusesPathsThatCouldMeanAnotherPath) {
  for (const char* target : {"", "*", "http://api.test/", "a/b", "/a/../b", "/a/./b", "/..",
                             "/a/..", "/a/.", "/a//b", "//a", "/a\\b", "/a/%2e%2E/b", "/a%2Fb",
                             "/a%2fb", "/a%5Cb", "/a%5cb", "/a/%2E/b", "/a#frag"}) {
    EXPECT_FALSE(es::canonical_path(target)) << target;
  }
}

TEST(RequestRewrite, InjectsIntoAnyHeaderAndKeepsTheRest) {
  auto h = head("GET", "/user",
                {{"Host", "api.test"},
                 {"Authorization", bearer(kPlaceholder)},
                 {"X-Other", std::string("a ") + kPlaceholder + " b " + kPlaceholder},
                 {"User-Agent", "curl"}});
  const auto outcome = one(h, rule());
  EXPECT_TRUE(outcome.injected);
  EXPECT_EQ(outcome.secret, "GITHUB_TOKEN");
  EXPECT_EQ(header(h, "Authorization"), bearer(kValue));
  EXPECT_EQ(header(h, "X-Other"), std::string("a ") + kValue + " b " + kValue);
  EXPECT_EQ(header(h, "User-Agent"), "curl");
  EXPECT_EQ(h.target, "/user");
}

TEST(RequestRewrite, InjectsOnlyIntoTheNamedHeaderInAnyCase) {
  auto s = rule();
  s.header = "authorization";
  auto h = head("GET", "/", {{"AUTHORIZATION", bearer(kPlaceholder)}, {"X-Token", kPlaceholder}});
  EXPECT_TRUE(one(h, s).injected);
  EXPECT_EQ(header(h, "AUTHORIZATION"), bearer(kValue));
  EXPECT_EQ(header(h, "X-Token"), kPlaceholder);

  auto only_other = head("GET", "/", {{"X-Token", kPlaceholder}});
  const auto outcome = one(only_other, s);
  EXPECT_FALSE(outcome.injected);
  EXPECT_EQ(outcome.why, "header");
  EXPECT_EQ(header(only_other, "X-Token"), kPlaceholder);
}

TEST(RequestRewrite, InjectsInsideBasicCredentials) {
  const auto basic = [](const std::string& password) {
    return "Basic " + base64_encode("x-access-token:" + password);
  };
  for (const char* name : {"Authorization", "proxy-authorization"}) {
    auto h = head("POST", "/git/r.git/git-receive-pack", {{name, basic(kPlaceholder)}});
    EXPECT_TRUE(one(h, rule()).injected);
    EXPECT_EQ(header(h, name), basic(kValue));
    EXPECT_EQ(header(h, name).size(), basic(kPlaceholder).size());
  }
  auto s = rule();
  s.header = "X-Token";
  auto h = head("GET", "/", {{"Authorization", basic(kPlaceholder)}});
  EXPECT_EQ(one(h, s).why, "header");
  EXPECT_EQ(header(h, "Authorization"), basic(kPlaceholder));
}

TEST(ReplaceInBasic, DecodesStrictlyAndKeepsTheScheme) {
  const std::string from = "placeholder", to = "VALUEVALUEV";
  const auto creds = base64_encode("user:placeholder");
  EXPECT_EQ(es::replace_in_basic("Basic " + creds, from, to),
            "Basic " + base64_encode("user:VALUEVALUEV"));
  EXPECT_EQ(es::replace_in_basic("bAsIc   " + creds, from, to),
            "bAsIc   " + base64_encode("user:VALUEVALUEV"));
  EXPECT_FALSE(es::replace_in_basic("Bearer " + creds, from, to));
  EXPECT_FALSE(es::replace_in_basic("Basic" + creds, from, to));
  EXPECT_FALSE(es::replace_in_basic("Basic " + base64_encode("user:other"), from, to));
  EXPECT_FALSE(es::replace_in_basic("Basic " + creds.substr(0, creds.size() - 1), from, to));
  EXPECT_FALSE(es::replace_in_basic("Basic " + creds + " ", from, to));
  EXPECT_FALSE(es::replace_in_basic("Basic dXNlcjpwYXNzd29yZA=x", from, to));
  // One '=' short, and non-zero bits after the last byte: both decode, neither is canonical.
  EXPECT_FALSE(es::replace_in_basic("Basic dXNlcjpwbGFjZWhvbGRlcg=", "placeholder", to));
  EXPECT_FALSE(es::replace_in_basic("Basic dXNlcjpwbGFjZWhvbGRlcj==", "placeholder", to));
}

TEST(RequestRewrite, WithholdsAndSaysWhy) {
  auto s = rule();
  s.methods = {"GET"};
  s.paths = {"/need-auth", "/repos/"};
  struct Case {
    std::string method, target, host;
    bool tls;
    std::string why;
  };
  for (const auto& c : std::vector<Case>{
           {"GET", "/need-auth", "pass.test", true, "host"},
           {"GET", "/need-auth", "api.test", false, "plain http"},
           {"POST", "/need-auth", "api.test", true, "method"},
           {"get", "/need-auth", "api.test", true, "method"},
           {"GET", "/need-authX", "api.test", true, "path"},
           {"GET", "/other", "api.test", true, "path"},
           {"GET", "/x/../need-auth", "api.test", true, "path not canonical"},
           {"GET", "/need-auth/%2e%2e/admin", "api.test", true, "path not canonical"},
           {"GET", "/repos//a", "api.test", true, "path not canonical"},
       }) {
    auto h = head(c.method, c.target, {{"Host", c.host}, {"Authorization", bearer(kPlaceholder)}});
    const auto outcome = one(h, s, c.host, c.tls);
    EXPECT_FALSE(outcome.injected) << c.target;
    EXPECT_EQ(outcome.why, c.why) << c.method << " " << c.target << " " << c.host;
    EXPECT_EQ(header(h, "Authorization"), bearer(kPlaceholder));
  }
  for (const char* target : {"/need-auth", "/need-auth/x", "/need-auth?q=1", "/repos/a/b"}) {
    auto h = head("GET", target, {{"Authorization", bearer(kPlaceholder)}});
    EXPECT_TRUE(one(h, s).injected) << target;
  }
}

TEST(RequestRewrite, PlainHttpOnlyWhenTheRuleAllowsIt) {
  auto s = rule();
  s.plain_http = true;
  auto h = head("GET", "/", {{"Authorization", bearer(kPlaceholder)}});
  EXPECT_TRUE(one(h, s, "api.test", false).injected);
}

TEST(RequestRewrite, NeverInjectsIntoTheTarget) {
  auto h = head("GET", std::string("/x?token=") + kPlaceholder, {{"Host", "api.test"}});
  const auto outcome = one(h, rule());
  EXPECT_FALSE(outcome.injected);
  EXPECT_EQ(outcome.why, "in the request target");
  EXPECT_EQ(h.target, std::string("/x?token=") + kPlaceholder);

  auto both = head("GET", std::string("/x?token=") + kPlaceholder,
                   {{"Authorization", bearer(kPlaceholder)}});
  EXPECT_TRUE(one(both, rule()).injected);
  EXPECT_EQ(both.target, std::string("/x?token=") + kPlaceholder);
}

TEST(RequestRewrite, ReportsOnlySecretsTheRequestCarries) {
  auto other = rule();
  other.name = "OTHER";
  other.placeholder = "ghp_Zz7Kq2Lm9Pz4Wt1Rv8Ns3Bc6D";
  auto h = head("GET", "/", {{"Authorization", bearer(kPlaceholder)}});
  const auto result = es::rewrite_request(h, "api.test", true, {other, rule()});
  ASSERT_EQ(result.outcomes.size(), 1u);
  EXPECT_EQ(result.outcomes[0].secret, "GITHUB_TOKEN");
  EXPECT_TRUE(es::rewrite_request(h, "api.test", true, {other}).outcomes.empty());
}

TEST(RequestRewrite, RefusesRequestsThatCouldBeReadTwoWays) {
  using Headers = std::vector<std::pair<std::string, std::string>>;
  struct Case {
    Headers headers;
    std::string words;
  };
  for (const auto& c : std::vector<Case>{
           {{{"Content-Length", "5"}, {"transfer-encoding", "chunked"}}, "both Content-Length"},
           {{{"Content-Length", "5"}, {"content-length", "5"}}, "two Content-Length"},
           {{{"Upgrade", "websocket"}, {"Connection", "Upgrade"}}, "Upgrade"},
           {{{"Host", "evil.test"}}, "Host"},
           {{{"Host", "api.test.evil.test"}}, "Host"},
           {{{"Host", std::string(kPlaceholder)}}, "Host"},
           {{{"Host", "api.test"}, {"host", "api.test"}}, "two Host"},
           {{{"X-A", "a\r\nX-Injected: 1"}}, "CR, LF or NUL"},
           {{{"Bad Name", "x"}}, "not a token"},
       }) {
    auto h = head("GET", "/", c.headers);
    h.headers.emplace_back("Authorization", bearer(kPlaceholder));
    const auto result = es::rewrite_request(h, "api.test", true, {rule()});
    ASSERT_TRUE(result.refusal) << c.words;
    EXPECT_NE(result.refusal->find(c.words), std::string::npos) << *result.refusal;
    EXPECT_EQ(result.refusal->find(kPlaceholder), std::string::npos);
    EXPECT_TRUE(result.outcomes.empty());
    EXPECT_EQ(header(h, "Authorization"), bearer(kPlaceholder));
  }
  for (const char* host : {"api.test", "API.Test", "api.test:443"}) {
    auto h = head("GET", "/", {{"Host", host}});
    EXPECT_FALSE(es::rewrite_request(h, "api.test", true, {rule()}).refusal) << host;
  }
}

TEST(RequestRewrite, AsksForWholeIdentityResponses) {
  auto h = head("GET", "/",
                {{"Host", "api.test"},
                 {"accept-encoding", "gzip, br"},
                 {"Range", "bytes=0-10"},
                 {"if-range", "\"etag\""},
                 {"TE", "trailers"},
                 {"Accept", "*/*"}});
  EXPECT_TRUE(es::rewrite_request(h, "api.test", true, {}).outcomes.empty());
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"Host", "api.test"}, {"Accept", "*/*"}, {"Accept-Encoding", "identity"}};
  EXPECT_EQ(h.headers, expected);
}
