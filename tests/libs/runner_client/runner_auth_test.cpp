// The handshake's pure functions (supervision/runner_auth.hpp): both sides agree, a wrong key or
// a replayed answer is refused, and the MACs are HMAC-SHA256 as the wire format says (checked
// against OpenSSL's HMAC(), an implementation the handshake does not use).
#include "supervision/runner_auth.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <gtest/gtest.h>

#include <cstring>

namespace execmcp::plugins::supervision::runner_auth {
namespace {

std::string key_bytes(const RunnerKey& key) {
  return std::string(reinterpret_cast<const char*>(key.data()), kKeySize);
}

std::string nonce_bytes(const Nonce& n) {
  return std::string(reinterpret_cast<const char*>(n.data()), n.size());
}

std::string openssl_hmac(const RunnerKey& key, const std::string& message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(kKeySize),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

TEST(RunnerAuth, BothSidesAgreeAndTheMacsAreHmacSha256OfTheWireFormat) {
  ASSERT_TRUE(init());
  const RunnerKey key = RunnerKey::random();
  const Nonce nonce_r = random_nonce(), nonce_s = random_nonce();
  EXPECT_NE(nonce_bytes(nonce_r), nonce_bytes(nonce_s));

  const std::string hello = runner_hello(nonce_r);
  ASSERT_EQ(hello.size(), kRunnerHelloSize);
  EXPECT_EQ(hello.substr(0, 5), std::string("EXMR\x01"));
  HelloError error = HelloError::kVersion;
  const auto parsed = parse_runner_hello(hello, error);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(error, HelloError::kNone);
  EXPECT_EQ(nonce_bytes(*parsed), nonce_bytes(nonce_r));

  const std::string answer = server_answer(key, nonce_r, nonce_s);
  ASSERT_EQ(answer.size(), kServerAnswerSize);
  EXPECT_EQ(answer.substr(0, kNonceSize), nonce_bytes(nonce_s));
  EXPECT_EQ(answer.substr(kNonceSize),
            openssl_hmac(
                key, "execmcp-runner/auth1 server" + nonce_bytes(nonce_r) + nonce_bytes(nonce_s)));
  const auto got_s = check_server_answer(key, nonce_r, answer);
  ASSERT_TRUE(got_s);
  EXPECT_EQ(nonce_bytes(*got_s), nonce_bytes(nonce_s));

  const std::string reply = runner_answer(key, nonce_s, nonce_r);
  EXPECT_EQ(reply, openssl_hmac(key, "execmcp-runner/auth1 runner" + nonce_bytes(nonce_s) +
                                         nonce_bytes(nonce_r)));
  EXPECT_TRUE(check_runner_answer(key, nonce_s, nonce_r, reply));
}

TEST(RunnerAuth, AWrongKeyAReplayOrATamperedByteIsRefused) {
  const RunnerKey key = RunnerKey::random(), other = RunnerKey::random();
  EXPECT_NE(key_bytes(key), key_bytes(other));
  const Nonce nonce_r = random_nonce(), nonce_s = random_nonce();
  const std::string answer = server_answer(key, nonce_r, nonce_s);
  EXPECT_FALSE(check_server_answer(other, nonce_r, answer));
  // Recorded on one connection, played on another: that one's nonce_r differs.
  EXPECT_FALSE(check_server_answer(key, random_nonce(), answer));
  for (std::size_t i = 0; i < answer.size(); i += 7) {
    std::string bad = answer;
    bad[i] = static_cast<char>(bad[i] ^ 1);
    EXPECT_FALSE(check_server_answer(key, nonce_r, bad)) << i;
  }
  EXPECT_FALSE(check_server_answer(key, nonce_r, answer.substr(1)));
  EXPECT_FALSE(check_server_answer(key, nonce_r, answer + "x"));
  // The runner's answer is not the server's with the roles swapped.
  const std::string reply = runner_answer(key, nonce_s, nonce_r);
  EXPECT_FALSE(check_runner_answer(other, nonce_s, nonce_r, reply));
  EXPECT_FALSE(check_runner_answer(key, nonce_r, nonce_s, reply));
  EXPECT_FALSE(check_runner_answer(key, nonce_s, nonce_r, answer.substr(kNonceSize)));
  EXPECT_FALSE(check_runner_answer(key, nonce_s, nonce_r, ""));
}

TEST(RunnerAuth, AHelloOfAnotherKindOrVersionIsNamed) {
  HelloError error = HelloError::kNone;
  EXPECT_FALSE(parse_runner_hello("", error));
  EXPECT_EQ(error, HelloError::kNotARunner);
  std::string hello = runner_hello(random_nonce());
  EXPECT_FALSE(parse_runner_hello(hello.substr(1), error));
  EXPECT_EQ(error, HelloError::kNotARunner);
  hello[0] = 'X';
  EXPECT_FALSE(parse_runner_hello(hello, error));
  EXPECT_EQ(error, HelloError::kNotARunner);
  hello = runner_hello(random_nonce());
  hello[4] = 2;
  EXPECT_FALSE(parse_runner_hello(hello, error));
  EXPECT_EQ(error, HelloError::kVersion);
}

TEST(RunnerAuth, AKeyIsExactly32Bytes) {
  EXPECT_FALSE(RunnerKey::from_bytes(std::string(31, 'k')));
  EXPECT_FALSE(RunnerKey::from_bytes(std::string(33, 'k')));
  const auto key = RunnerKey::from_bytes(std::string(32, 'k'));
  ASSERT_TRUE(key);
  EXPECT_EQ(key_bytes(*key), std::string(32, 'k'));
  const RunnerKey copy = *key;
  EXPECT_EQ(key_bytes(copy), std::string(32, 'k'));
}

}  // namespace
}  // namespace execmcp::plugins::supervision::runner_auth
