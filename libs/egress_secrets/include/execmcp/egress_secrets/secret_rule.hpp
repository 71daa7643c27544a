// What the egress injector knows of one secret: the value it puts into matching requests, the
// placeholder the sandbox holds instead, and where the value may go. Shared by the docker backends
// (which read the settings and resolve the values) and execmcp-egress-injector (which applies
// them).
#pragma once

#include <string>
#include <vector>

namespace execmcp::egress_secrets {

struct SecretRule {
  std::string name;         // the variable the sandbox sees, e.g. GITHUB_TOKEN
  std::string value;        // the real value: only in the server's memory and the injector's
  std::string placeholder;  // what the sandbox holds: same length as `value` (make_placeholder)
  std::vector<std::string> hosts;    // exact host names, lower-case; never wildcards
  std::string header;                // a request header's name (any case); "" = any header
  std::vector<std::string> methods;  // upper-case methods; empty = any
  std::vector<std::string> paths;    // path prefixes, each starting with '/'; empty = any
  bool plain_http = false;           // also injected into plain-HTTP requests (port 80 allowed)
};

// A certificate the injector presents for one intercepted host: a leaf for exactly that name,
// signed by the agent's own CA (whose key the injector never sees).
struct LeafCertificate {
  std::string host;      // lower-case name, the leaf's only subjectAltName
  std::string cert_pem;  // the leaf
  std::string key_pem;   // its private key
};

// Everything the server hands the injector at (re)start, over the injector's control socket.
struct SecretBundle {
  std::string label;                    // the agent, as the proxy's log lines name it
  std::string ca_cert_pem;              // the agent's CA certificate (sent after each leaf)
  std::vector<LeafCertificate> leaves;  // one per host named by a secret
  std::vector<SecretRule> secrets;
  std::string upstream_ca_pem;  // roots trusted beyond the system's; may be empty
};

}  // namespace execmcp::egress_secrets
