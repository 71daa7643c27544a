// Test keys and tokens made on the spot with OpenSSL and libjwt: RSA/EC key pairs, JWKS, signed
// JWTs.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <nlohmann/json.hpp>

namespace execmcp::tests {

inline std::string base64url_encode(const std::string& bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(buffer >> bits) & 0x3F]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(buffer << (6 - bits)) & 0x3F]);
  return out;
}

// A freshly generated key pair: "RSA" (2048 bits) or "EC" (curve P-256 / P-384).
class KeyPair {
 public:
  static KeyPair rsa(int bits = 2048) {
    return KeyPair(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(bits)));
  }
  static KeyPair ec(const char* curve = "P-256") {
    return KeyPair(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", curve));
  }

  [[nodiscard]] std::string public_pem() const {
    return write([&](BIO* bio) { return PEM_write_bio_PUBKEY(bio, key_.get()); });
  }
  [[nodiscard]] std::string private_pem() const {
    return write([&](BIO* bio) {
      return PEM_write_bio_PrivateKey(bio, key_.get(), nullptr, nullptr, 0, nullptr, nullptr);
    });
  }

  // The public key as a JWK (RFC 7517/7518), with `kid` when not empty.
  [[nodiscard]] nlohmann::json jwk(const std::string& kid) const {
    nlohmann::json jwk;
    if (EVP_PKEY_is_a(key_.get(), "RSA")) {
      jwk = {{"kty", "RSA"},
             {"n", bn_param(OSSL_PKEY_PARAM_RSA_N)},
             {"e", bn_param(OSSL_PKEY_PARAM_RSA_E)}};
    } else {
      unsigned char point[200];
      size_t length = 0;
      if (EVP_PKEY_get_octet_string_param(key_.get(), OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point,
                                          &length) != 1 ||
          point[0] != 0x04)
        throw std::runtime_error("no uncompressed EC point");
      const size_t half = (length - 1) / 2;
      const std::string bytes(reinterpret_cast<char*>(point), length);
      jwk = {{"kty", "EC"},
             {"crv", half == 32   ? "P-256"
                     : half == 48 ? "P-384"
                                  : "P-521"},
             {"x", base64url_encode(bytes.substr(1, half))},
             {"y", base64url_encode(bytes.substr(1 + half, half))}};
    }
    if (!kid.empty()) jwk["kid"] = kid;
    jwk["use"] = "sig";
    return jwk;
  }

 private:
  struct PkeyFree {
    void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
  };
  explicit KeyPair(EVP_PKEY* key) : key_(key, PkeyFree{}) {
    if (!key_) throw std::runtime_error("key generation failed");
  }
  template <typename Write>
  std::string write(Write write_to) const {
    BIO* bio = BIO_new(BIO_s_mem());
    if (write_to(bio) != 1) throw std::runtime_error("PEM write failed");
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    std::string pem(data, static_cast<size_t>(size));
    BIO_free(bio);
    return pem;
  }
  [[nodiscard]] std::string bn_param(const char* name) const {
    BIGNUM* bn = nullptr;
    if (EVP_PKEY_get_bn_param(key_.get(), name, &bn) != 1) throw std::runtime_error("no bn param");
    std::string bytes(static_cast<size_t>(BN_num_bytes(bn)), '\0');
    BN_bn2bin(bn, reinterpret_cast<unsigned char*>(bytes.data()));
    BN_free(bn);
    return base64url_encode(bytes);
  }
  std::shared_ptr<EVP_PKEY> key_;
};

inline long long unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Signs `claims` with libjwt (the same library the server verifies with, used the other way).
inline std::string sign_jwt(const nlohmann::json& claims, jwt_alg_t alg, const std::string& key,
                            const std::string& kid = "") {
  jwt_t* jwt = nullptr;
  if (jwt_new(&jwt) != 0) throw std::runtime_error("jwt_new");
  std::unique_ptr<jwt_t, void (*)(jwt_t*)> owner(jwt, jwt_free);
  if (jwt_add_grants_json(jwt, claims.dump().c_str()) != 0)
    throw std::runtime_error("jwt_add_grants_json");
  if (!kid.empty() && jwt_add_header(jwt, "kid", kid.c_str()) != 0)
    throw std::runtime_error("jwt_add_header");
  if (jwt_set_alg(jwt, alg, reinterpret_cast<const unsigned char*>(key.data()),
                  static_cast<int>(key.size())) != 0)
    throw std::runtime_error("jwt_set_alg");
  char* text = jwt_encode_str(jwt);
  if (text == nullptr) throw std::runtime_error("jwt_encode_str");
  std::string token(text);
  free(text);  // NOLINT: libjwt allocates with malloc
  return token;
}

// A token put together by hand: any header, any payload, any signature (for forgeries).
inline std::string raw_jwt(const nlohmann::json& header, const nlohmann::json& claims,
                           const std::string& signature) {
  return base64url_encode(header.dump()) + "." + base64url_encode(claims.dump()) + "." + signature;
}

}  // namespace execmcp::tests
