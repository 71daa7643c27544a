// The bundle the server hands the injector: a round trip, and each malformed form refused with the
// line and the field named and no value quoted.
#include "execmcp/egress_secrets/secret_bundle.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "execmcp/common/base64.hpp"

namespace es = execmcp::egress_secrets;
using execmcp::common::base64_encode;

namespace {

constexpr const char* kValue = "ghp_ValueValueValue0123456789";
constexpr const char* kPlaceholder = "ghp_PlacePlacePlace9876543210";

es::SecretBundle sample() {
  es::SecretBundle b;
  b.label = "agent one";
  b.ca_cert_pem = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
  b.leaves.push_back({"api.test", "leaf cert 1\n", "leaf key 1\n"});
  b.leaves.push_back({"git.test", "leaf cert 2\n", "leaf key 2\n"});
  es::SecretRule s;
  s.name = "GITHUB_TOKEN";
  s.value = kValue;
  s.placeholder = kPlaceholder;
  s.hosts = {"api.test", "git.test"};
  s.header = "Authorization";
  s.methods = {"GET", "POST"};
  s.paths = {"/repos/", "/user"};
  s.plain_http = true;
  b.secrets.push_back(s);
  es::SecretRule t;
  t.name = "_other2";
  t.value = "a value with spaces, commas and : ;";
  t.placeholder = "b vxxxx yyyy zzzzzz, aaaaaa bbb : ;";
  t.hosts = {"git.test"};
  b.secrets.push_back(t);
  b.upstream_ca_pem = "roots\n";
  return b;
}

void expect_equal(const es::SecretBundle& a, const es::SecretBundle& b) {
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.ca_cert_pem, b.ca_cert_pem);
  EXPECT_EQ(a.upstream_ca_pem, b.upstream_ca_pem);
  ASSERT_EQ(a.leaves.size(), b.leaves.size());
  for (std::size_t i = 0; i < a.leaves.size(); ++i) {
    EXPECT_EQ(a.leaves[i].host, b.leaves[i].host);
    EXPECT_EQ(a.leaves[i].cert_pem, b.leaves[i].cert_pem);
    EXPECT_EQ(a.leaves[i].key_pem, b.leaves[i].key_pem);
  }
  ASSERT_EQ(a.secrets.size(), b.secrets.size());
  for (std::size_t i = 0; i < a.secrets.size(); ++i) {
    const auto &x = a.secrets[i], &y = b.secrets[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.value, y.value);
    EXPECT_EQ(x.placeholder, y.placeholder);
    EXPECT_EQ(x.hosts, y.hosts);
    EXPECT_EQ(x.header, y.header);
    EXPECT_EQ(x.methods, y.methods);
    EXPECT_EQ(x.paths, y.paths);
    EXPECT_EQ(x.plain_http, y.plain_http);
  }
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The error's words; fails the test when parsing succeeds.
std::string error_of(const std::string& text) {
  try {
    (void)es::parse_bundle(text);
  } catch (const es::BundleError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted:\n" << text;
  return {};
}

}  // namespace

TEST(SecretBundle, RoundTrips) {
  const auto bundle = sample();
  const auto text = es::serialize_bundle(bundle);
  EXPECT_EQ(text.rfind("execmcp-secrets 1\n", 0), 0u);
  EXPECT_EQ(text.find(kValue), std::string::npos) << "values travel in base64";
  expect_equal(es::parse_bundle(text), bundle);
  EXPECT_EQ(es::serialize_bundle(es::parse_bundle(text)), text);
}

TEST(SecretBundle, RoundTripsAnEmptyBundle) {
  const es::SecretBundle empty;
  const auto text = es::serialize_bundle(empty);
  EXPECT_EQ(text, "execmcp-secrets 1\nlabel -\nca -\nupstream-ca -\nend\n");
  expect_equal(es::parse_bundle(text), empty);
  EXPECT_NO_THROW((void)es::parse_bundle("execmcp-secrets 1\nlabel -\nca -\nupstream-ca -\nend"));
}

TEST(SecretBundle, RefusesMalformedBundlesNamingLineAndFieldNeverTheValue) {
  const auto good = es::serialize_bundle(sample());
  const std::string value_b64 = base64_encode(kValue);
  const std::string placeholder_b64 = base64_encode(kPlaceholder);
  const std::string secret_line = good.substr(good.find("secret GITHUB_TOKEN"));
  const std::string same_length = std::string(kValue).replace(4, 1, "X");
  struct Case {
    std::string text;
    std::string expected;  // what the message must contain
  };
  const std::vector<Case> cases = {
      {"", "line 1: header"},
      {replaced(good, "execmcp-secrets 1", "execmcp-secrets 2"), "line 1: header"},
      {replaced(good, "label ", "label  "), "line 2: line"},
      {replaced(good, "label ", "labels "), "line 2: label"},
      {replaced(good, "\nca ", "\nca x"), "line 3: ca"},
      {replaced(good, "leaf api.test", "leaf API.test"), "line 4: leaf host"},
      {replaced(good, "leaf api.test", "leaf -api.test"), "line 4: leaf host"},
      {replaced(good, "leaf git.test", "leaf api.test"), "line 5: leaf host"},
      {replaced(good, "leaf api.test ", "leaf api.test x"), "line 4: leaf certificate"},
      {replaced(good, "GITHUB_TOKEN", "1TOKEN"), "line 6: secret name"},
      {replaced(good, "_other2", "GITHUB_TOKEN"), "line 7: secret name"},
      {replaced(good, value_b64, value_b64 + "="), "line 6: secret value"},
      {replaced(good, value_b64, "-"), "line 6: secret value"},
      {replaced(good, value_b64, base64_encode(std::string(kValue) + "\r\nX: y")),
       "line 6: secret value"},
      {replaced(good, value_b64, base64_encode(std::string(kValue) + "x")),
       "line 6: secret placeholder"},
      {replaced(good, placeholder_b64, value_b64), "line 6: secret placeholder"},
      {replaced(good, "api.test,git.test", "api.test,other.test"), "line 6: secret hosts"},
      {replaced(good, "api.test,git.test", "api.test,api.test"), "line 6: secret hosts"},
      {replaced(good, "api.test,git.test", "*.test"), "line 6: secret hosts"},
      {replaced(good, " Authorization ", " Author:ization "), "line 6: secret header"},
      {replaced(good, "GET,POST", "GET,post"), "line 6: secret methods"},
      {replaced(good, "GET,POST", "GET,,POST"), "line 6: secret methods"},
      {replaced(good, base64_encode("/user"), base64_encode("user")), "line 6: secret paths"},
      {replaced(good, base64_encode("/user"), base64_encode("/us er")), "line 6: secret paths"},
      {replaced(good, " 1\nsecret", " 2\nsecret"), "line 6: secret plain_http"},
      {replaced(good, " 1\nsecret", "\nsecret"), "line 6: secret"},
      {replaced(good, "leaf git.test", "secret X"), "line 5: secret"},
      {replaced(good, secret_line, "upstream-ca -\nend\nmore\n"), "line 8: end"},
      {replaced(good, "\nend\n", "\n"), "end: missing"},
      {replaced(good, "\nca " + base64_encode(sample().ca_cert_pem), "\nca -"), "ca"},
      {std::string(es::kMaxBundleBytes + 1, 'x'), "larger than 1 MiB"},
      {replaced(good, value_b64, base64_encode(same_length)), ""},  // a good one, for contrast
  };
  for (const auto& c : cases) {
    if (c.expected.empty()) {
      EXPECT_NO_THROW((void)es::parse_bundle(c.text));
      continue;
    }
    const auto what = error_of(c.text);
    EXPECT_NE(what.find(c.expected), std::string::npos) << what << "\nwanted: " << c.expected;
    EXPECT_EQ(what.find(kValue), std::string::npos) << what;
    EXPECT_EQ(what.find(value_b64), std::string::npos) << what;
    EXPECT_EQ(what.find(kPlaceholder), std::string::npos) << what;
    EXPECT_EQ(what.find("CERTIFICATE"), std::string::npos) << what;
  }
}

TEST(SecretBundle, BoundsTheNumberOfSecrets) {
  es::SecretBundle b;
  b.ca_cert_pem = "ca";
  b.leaves.push_back({"api.test", "c", "k"});
  for (std::size_t i = 0; i <= es::kMaxSecrets; ++i) {
    es::SecretRule s;
    s.name = "S" + std::to_string(i);
    s.value = "value-" + std::to_string(1000 + i);
    s.placeholder = "xalue-" + std::to_string(1000 + i);
    s.hosts = {"api.test"};
    b.secrets.push_back(s);
  }
  EXPECT_NE(error_of(es::serialize_bundle(b)).find("too many secrets"), std::string::npos);
  b.secrets.pop_back();
  EXPECT_EQ(es::parse_bundle(es::serialize_bundle(b)).secrets.size(), es::kMaxSecrets);
}
