// The certificates of one agent start's egress interception: a CA made for that start alone,
// name-constrained to the hosts its secrets name, and a leaf for each of those hosts. The CA's
// key is thrown away once the leaves are signed, so nothing can sign another name with it.
#pragma once

#include <string>
#include <vector>

#include "execmcp/egress_secrets/secret_rule.hpp"

namespace execmcp::plugins::docker_common {

struct AgentCertificates {
  std::string ca_cert_pem;  // public: what the sandbox trusts beside the system's roots
  std::vector<egress_secrets::LeafCertificate> leaves;  // one per host, in the given order
};

// Validity of the CA: from 5 minutes ago (clocks a little behind) for 30 days.
inline constexpr long kAgentCaBackdateSeconds = 5 * 60;
inline constexpr long kAgentCaDays = 30;

// A fresh P-256 CA: random 128-bit serial, CN "execmcp egress CA <label>" (cut to 64 bytes),
// basicConstraints critical CA:TRUE pathlen:0, keyUsage critical keyCertSign cRLSign, SKI, and
// nameConstraints critical permitted DNS:<each host>; and for each host a leaf with a key of its
// own (P-256), subjectAltName DNS:host only, extendedKeyUsage serverAuth, keyUsage critical
// digitalSignature, AKI, validity inside the CA's, all signed with SHA-256. `hosts`: lower-case
// DNS names (the egress settings' checks), at least one. Throws std::runtime_error naming the
// OpenSSL step that failed.
AgentCertificates mint_agent_certificates(const std::vector<std::string>& hosts,
                                          const std::string& label);

}  // namespace execmcp::plugins::docker_common
