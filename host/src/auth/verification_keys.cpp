// Turns JWKS entries and PEM files into PEM public keys with OpenSSL 3's key-building APIs.
#include "auth/verification_keys.hpp"

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <nlohmann/json.hpp>

namespace execmcp::host::auth {

namespace {

// A keys file is a handful of keys; a larger file is the wrong file.
constexpr std::size_t kMaxKeysFileBytes = 1024 * 1024;
constexpr int kMinRsaBits = 2048;

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* ctx) const { EVP_PKEY_CTX_free(ctx); }
};
struct ParamBldFree {
  void operator()(OSSL_PARAM_BLD* bld) const { OSSL_PARAM_BLD_free(bld); }
};
struct ParamFree {
  void operator()(OSSL_PARAM* params) const { OSSL_PARAM_free(params); }
};
struct BnFree {
  void operator()(BIGNUM* bn) const { BN_free(bn); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Bignum = std::unique_ptr<BIGNUM, BnFree>;

std::string read_keys_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the OAuth keys file " + file);
  std::string text(kMaxKeysFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw std::runtime_error("cannot read the OAuth keys file " + file);
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxKeysFileBytes)
    throw std::runtime_error("the OAuth keys file " + file + " is larger than 1 MiB");
  return text;
}

std::string to_pem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), key) != 1)
    throw std::runtime_error("OpenSSL could not write the public key as PEM");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

// The algorithms a key may verify, or a reason it may verify none.
std::vector<std::string> algs_for(EVP_PKEY* key, std::string& why_not) {
  if (EVP_PKEY_is_a(key, "RSA")) {
    if (EVP_PKEY_get_bits(key) < kMinRsaBits) {
      why_not = "an RSA key of " + std::to_string(EVP_PKEY_get_bits(key)) +
                " bits (at least 2048 are needed)";
      return {};
    }
    return {"RS256", "RS384", "RS512"};
  }
  if (EVP_PKEY_is_a(key, "EC")) {
    char group[64] = {};
    std::size_t length = 0;
    if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group,
                                       &length) != 1) {
      why_not = "an EC key without a named curve";
      return {};
    }
    const std::string name(group, length);
    if (name == "prime256v1") return {"ES256"};
    if (name == "secp384r1") return {"ES384"};
    if (name == "secp521r1") return {"ES512"};
    why_not = "an EC key on curve " + name + " (P-256, P-384 or P-521 are supported)";
    return {};
  }
  why_not = "a key of a type other than RSA or EC";
  return {};
}

Bignum bignum_member(const nlohmann::json& jwk, const char* member, const std::string& where) {
  const auto it = jwk.find(member);
  if (it == jwk.end() || !it->is_string())
    throw std::runtime_error(where + ": member \"" + member + "\" is missing or not a string");
  const auto bytes = base64url_decode(it->get<std::string>());
  if (!bytes || bytes->empty())
    throw std::runtime_error(where + ": member \"" + member + "\" is not base64url");
  Bignum bn(BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes->data()),
                      static_cast<int>(bytes->size()), nullptr));
  if (!bn) throw std::runtime_error(where + ": OpenSSL could not read \"" + member + "\"");
  return bn;
}

// Builds a public key from OSSL_PARAMs, then checks it is one (an EC point on its curve).
Pkey key_from_params(const char* type, OSSL_PARAM_BLD* bld, const std::string& where) {
  std::unique_ptr<OSSL_PARAM, ParamFree> params(OSSL_PARAM_BLD_to_param(bld));
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
      EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
  EVP_PKEY* raw = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params.get()) != 1)
    throw std::runtime_error(where + ": not a valid " + std::string(type) + " public key");
  Pkey key(raw);
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> check(
      EVP_PKEY_CTX_new_from_pkey(nullptr, key.get(), nullptr));
  if (!check || EVP_PKEY_public_check(check.get()) != 1)
    throw std::runtime_error(where + ": not a valid " + std::string(type) + " public key");
  return key;
}

Pkey rsa_from_jwk(const nlohmann::json& jwk, const std::string& where) {
  const Bignum n = bignum_member(jwk, "n", where);
  const Bignum e = bignum_member(jwk, "e", where);
  std::unique_ptr<OSSL_PARAM_BLD, ParamBldFree> bld(OSSL_PARAM_BLD_new());
  if (!bld || OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, n.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, e.get()) != 1)
    throw std::runtime_error(where + ": OpenSSL could not hold the RSA key");
  return key_from_params("RSA", bld.get(), where);
}

Pkey ec_from_jwk(const nlohmann::json& jwk, const std::string& where) {
  const auto crv = jwk.value("crv", std::string());
  const char* group = nullptr;
  std::size_t field_bytes = 0;
  if (crv == "P-256") {
    group = "prime256v1";
    field_bytes = 32;
  } else if (crv == "P-384") {
    group = "secp384r1";
    field_bytes = 48;
  } else if (crv == "P-521") {
    group = "secp521r1";
    field_bytes = 66;
  } else {
    throw std::runtime_error(where + ": curve \"" + crv +
                             "\" is not supported (P-256, P-384 or P-521)");
  }
  std::string point =
      "\x04";  // uncompressed: 04 || x || y, each the field's width (RFC 7518 §6.2.1)
  for (const char* member : {"x", "y"}) {
    const auto it = jwk.find(member);
    const auto bytes = it != jwk.end() && it->is_string() ? base64url_decode(it->get<std::string>())
                                                          : std::nullopt;
    if (!bytes || bytes->size() != field_bytes)
      throw std::runtime_error(where + ": member \"" + member + "\" is not " +
                               std::to_string(field_bytes) + " base64url bytes");
    point += *bytes;
  }
  std::unique_ptr<OSSL_PARAM_BLD, ParamBldFree> bld(OSSL_PARAM_BLD_new());
  if (!bld ||
      OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, 0) != 1 ||
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       point.size()) != 1)
    throw std::runtime_error(where + ": OpenSSL could not hold the EC key");
  return key_from_params("EC", bld.get(), where);
}

std::vector<VerificationKey> keys_from_jwks(const std::string& text, const std::string& file) {
  const auto jwks = nlohmann::json::parse(text, nullptr, false);
  if (jwks.is_discarded() || !jwks.is_object() || !jwks.contains("keys") ||
      !jwks["keys"].is_array())
    throw std::runtime_error("the OAuth keys file " + file +
                             " is not a JWKS (a JSON object with a \"keys\" list)");
  std::vector<VerificationKey> keys;
  const auto& list = jwks["keys"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = file + ": keys[" + std::to_string(i) + "]";
    const auto& jwk = list[i];
    if (!jwk.is_object()) throw std::runtime_error(where + ": not a JSON object");
    if (jwk.contains("use") && jwk["use"] != "sig") continue;  // an encryption key
    const auto kty = jwk.value("kty", std::string());
    Pkey key;
    if (kty == "RSA") {
      key = rsa_from_jwk(jwk, where);
    } else if (kty == "EC") {
      key = ec_from_jwk(jwk, where);
    } else {
      continue;  // OKP, oct, ...: not ours to verify with
    }
    VerificationKey entry;
    if (jwk.contains("kid")) {
      if (!jwk["kid"].is_string()) throw std::runtime_error(where + ": \"kid\" is not a string");
      entry.kid = jwk["kid"].get<std::string>();
    }
    std::string why_not;
    entry.algs = algs_for(key.get(), why_not);
    if (entry.algs.empty()) throw std::runtime_error(where + ": " + why_not);
    if (jwk.contains("alg")) {
      // A JWK that names its algorithm verifies that one only.
      const auto alg = jwk["alg"].is_string() ? jwk["alg"].get<std::string>() : std::string();
      bool fits = false;
      for (const auto& a : entry.algs) fits = fits || a == alg;
      if (!fits)
        throw std::runtime_error(where + ": \"alg\" " + jwk["alg"].dump() +
                                 " does not fit a key of this type");
      entry.algs = {alg};
    }
    entry.pem = to_pem(key.get());
    keys.push_back(std::move(entry));
  }
  if (keys.empty())
    throw std::runtime_error("the OAuth keys file " + file +
                             " holds no RSA or EC signing key (kty RSA or EC, use sig)");
  return keys;
}

std::vector<VerificationKey> key_from_pem(const std::string& text, const std::string& file) {
  Bio bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  Pkey key(bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key)
    throw std::runtime_error(
        "the OAuth keys file " + file +
        " is neither a JWKS nor a PEM public key (-----BEGIN PUBLIC KEY-----)");
  VerificationKey entry;
  std::string why_not;
  entry.algs = algs_for(key.get(), why_not);
  if (entry.algs.empty())
    throw std::runtime_error("the OAuth keys file " + file + " holds " + why_not);
  entry.pem = to_pem(key.get());
  return {std::move(entry)};
}

}  // namespace

std::vector<VerificationKey> load_verification_keys(const std::string& file) {
  const std::string text = read_keys_file(file);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return keys_from_jwks(text, file);
  return key_from_pem(text, file);
}

}  // namespace execmcp::host::auth
