// Tests of reading JWT verification keys from JWKS and PEM files, and of base64url decoding.
#include "auth/verification_keys.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "auth/jwt_factory.hpp"
#include "test_support.hpp"

namespace execmcp::host::auth {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string load_error(const std::string& file) {
  try {
    load_verification_keys(file);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Base64Url, DecodesEveryPaddingLength) {
  EXPECT_EQ(base64url_decode(""), "");
  EXPECT_EQ(base64url_decode("Zg"), "f");
  EXPECT_EQ(base64url_decode("Zm8"), "fo");
  EXPECT_EQ(base64url_decode("Zm9v"), "foo");
  EXPECT_EQ(base64url_decode("Zm9vYg=="), "foob");
  EXPECT_EQ(base64url_decode("_-8"), "\xff\xef");
  EXPECT_EQ(base64url_decode("Z"), std::nullopt) << "one character cannot encode a byte";
  EXPECT_EQ(base64url_decode("Zm+v"), std::nullopt) << "'+' is base64, not base64url";
  EXPECT_EQ(base64url_decode("Zm 9v"), std::nullopt);
  for (const std::string& text :
       std::vector<std::string>{"", "a", "ab", "abc", "\x01\xff\x80 binary\n"})
    EXPECT_EQ(base64url_decode(tests::base64url_encode(text)), text);
}

TEST(VerificationKeys, JwksWithRsaAndEcKeysKeepsKidsAndAlgs) {
  tests::TempDir dir;
  const auto rsa = tests::KeyPair::rsa();
  const auto ec = tests::KeyPair::ec("P-256");
  const auto ec384 = tests::KeyPair::ec("P-384");
  auto enc = rsa.jwk("enc-1");
  enc["use"] = "enc";
  const nlohmann::json jwks = {{"keys",
                                {rsa.jwk("rsa-1"),
                                 ec.jwk("ec-1"),
                                 ec384.jwk("ec-384"),
                                 enc,
                                 {{"kty", "OKP"},
                                  {"crv", "Ed25519"},
                                  {"x", "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}}}}};
  tests::write_text(dir.path() / "jwks.json", jwks.dump(2));
  const auto keys = load_verification_keys((dir.path() / "jwks.json").string());
  ASSERT_EQ(keys.size(), 3u) << "the encryption key and the OKP key are skipped";
  EXPECT_EQ(keys[0].kid, "rsa-1");
  EXPECT_THAT(keys[0].algs, ElementsAre("RS256", "RS384", "RS512"));
  EXPECT_EQ(keys[0].pem, rsa.public_pem()) << "the JWK becomes the same public key";
  EXPECT_EQ(keys[1].kid, "ec-1");
  EXPECT_THAT(keys[1].algs, ElementsAre("ES256"));
  EXPECT_EQ(keys[1].pem, ec.public_pem());
  EXPECT_THAT(keys[2].algs, ElementsAre("ES384"));
}

TEST(VerificationKeys, PemPublicKeyFile) {
  tests::TempDir dir;
  const auto ec = tests::KeyPair::ec("P-256");
  tests::write_text(dir.path() / "key.pem", ec.public_pem());
  const auto keys = load_verification_keys((dir.path() / "key.pem").string());
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0].kid, "");
  EXPECT_THAT(keys[0].algs, ElementsAre("ES256"));
}

TEST(VerificationKeys, AJwkAlgNarrowsTheKey) {
  tests::TempDir dir;
  auto jwk = tests::KeyPair::rsa().jwk("k");
  jwk["alg"] = "RS512";
  tests::write_text(dir.path() / "jwks.json", nlohmann::json{{"keys", {jwk}}}.dump());
  EXPECT_THAT(load_verification_keys((dir.path() / "jwks.json").string())[0].algs,
              ElementsAre("RS512"));
  jwk["alg"] = "HS256";
  tests::write_text(dir.path() / "jwks.json", nlohmann::json{{"keys", {jwk}}}.dump());
  EXPECT_THAT(load_error((dir.path() / "jwks.json").string()),
              HasSubstr("keys[0]: \"alg\" \"HS256\" does not fit a key of this type"));
}

TEST(VerificationKeys, UnusableFilesAreNamed) {
  tests::TempDir dir;
  const std::string base = dir.str() + "/";
  EXPECT_THAT(load_error(base + "missing.json"),
              HasSubstr("cannot read the OAuth keys file " + base + "missing.json"));

  tests::write_text(dir.path() / "private.pem", tests::KeyPair::rsa().private_pem());
  EXPECT_THAT(load_error(base + "private.pem"),
              HasSubstr(base + "private.pem is neither a JWKS nor a PEM public key"));

  tests::write_text(dir.path() / "weak.pem", tests::KeyPair::rsa(1024).public_pem());
  EXPECT_THAT(load_error(base + "weak.pem"),
              HasSubstr(base + "weak.pem holds an RSA key of 1024 bits (at least 2048"));

  tests::write_text(dir.path() / "k224.pem", tests::KeyPair::ec("P-224").public_pem());
  EXPECT_THAT(load_error(base + "k224.pem"), HasSubstr("an EC key on curve secp224r1"));

  tests::write_text(dir.path() / "empty.json", R"({"keys": []})");
  EXPECT_THAT(load_error(base + "empty.json"),
              HasSubstr(base + "empty.json holds no RSA or EC signing key"));

  tests::write_text(dir.path() / "list.json", R"([1, 2])");
  EXPECT_THAT(load_error(base + "list.json"), HasSubstr("neither a JWKS"));

  tests::write_text(dir.path() / "object.json", R"({"kty": "RSA"})");
  EXPECT_THAT(load_error(base + "object.json"), HasSubstr(base + "object.json is not a JWKS"));

  auto bad_point = tests::KeyPair::ec("P-256").jwk("ec");
  bad_point["y"] = bad_point["x"];  // (x, x) is not on the curve
  tests::write_text(dir.path() / "point.json", nlohmann::json{{"keys", {bad_point}}}.dump());
  EXPECT_THAT(load_error(base + "point.json"),
              HasSubstr(base + "point.json: keys[0]: not a valid EC public key"));

  auto no_n = tests::KeyPair::rsa().jwk("r");
  no_n.erase("n");
  tests::write_text(dir.path() / "no_n.json", nlohmann::json{{"keys", {no_n}}}.dump());
  EXPECT_THAT(load_error(base + "no_n.json"),
              HasSubstr("no_n.json: keys[0]: member \"n\" is missing or not a string"));
}

}  // namespace
}  // namespace execmcp::host::auth
