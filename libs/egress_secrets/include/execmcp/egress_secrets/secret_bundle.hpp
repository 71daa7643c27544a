// The text form of a SecretBundle, as the server writes it to the injector's stdin/control socket.
// Line based, every free-form field base64 (so no value needs quoting), bounded in size and count:
//   execmcp-secrets 1
//   label <b64>
//   ca <b64 PEM>
//   leaf <host> <b64 cert PEM> <b64 key PEM>
//   secret <NAME> <b64 value> <b64 placeholder> <hosts a,b> <header|-> <methods GET,POST|->
//          <paths b64,b64|-> <plain_http 0|1>                   (one line)
//   upstream-ca <b64 PEM>
//   end
// ("-" stands for an empty free-form field; secret_bundle.cpp has the details.)
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "execmcp/egress_secrets/secret_rule.hpp"

namespace execmcp::egress_secrets {

inline constexpr std::size_t kMaxBundleBytes = 1 << 20;  // a bundle larger than this is refused
inline constexpr std::size_t kMaxSecrets = 64;
inline constexpr std::size_t kMaxHostsPerSecret = 32;

// A malformed bundle. what() names the line number and the field, never a value or a PEM.
class BundleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[nodiscard]] std::string serialize_bundle(const SecretBundle& bundle);

// Strict inverse of serialize_bundle: every rule the injector relies on is checked here (names
// are [A-Za-z_][A-Za-z0-9_]*, hosts lower-case DNS names, value and placeholder non-empty, equal
// length and different, each secret's hosts have a leaf, sizes and counts bounded). Throws
// BundleError.
[[nodiscard]] SecretBundle parse_bundle(std::string_view text);

}  // namespace execmcp::egress_secrets
