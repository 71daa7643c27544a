// Public keys that verify JWT access tokens, read once from a JWKS or PEM file and kept as PEM.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "execmcp/common/base64.hpp"

namespace execmcp::host::auth {

// One public key, as libjwt takes it, with the JWS algorithms it may verify.
struct VerificationKey {
  std::string kid;                // empty for a PEM file or a JWK without one
  std::string pem;                // SubjectPublicKeyInfo PEM
  std::vector<std::string> algs;  // RS256/RS384/RS512 for RSA; the one ES* of an EC key's curve
};

// Reads `file`: a JWKS (JSON with "keys") or a PEM public key. RSA keys (2048 bits or more) and EC
// keys on P-256, P-384, P-521 are kept; JWKs with `use` other than "sig" or another `kty` are
// skipped. Throws std::runtime_error naming the file (and the key's index) on anything unusable,
// and when no key is left.
std::vector<VerificationKey> load_verification_keys(const std::string& file);

// base64url without padding (RFC 7515 §2); trailing '=' tolerated. nullopt on any other byte.
inline std::optional<std::string> base64url_decode(std::string_view text) {
  return common::base64_decode(text, common::Base64Alphabet::Url);
}

}  // namespace execmcp::host::auth
