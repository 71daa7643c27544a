// The secret bundle the injector serves with, once parsed: the rules, a leaf certificate per
// intercepted host, the TLS context the injector presents to clients and the one it verifies
// upstreams with. Replaced whole on each delivery; sessions keep the one they started with.
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "execmcp/egress_secrets/secret_rule.hpp"

namespace execmcp::egress_injector {

struct X509Free {
  void operator()(X509* cert) const noexcept { X509_free(cert); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

class BundleState {
 public:
  // Parses a bundle (serialize_bundle text) and builds its TLS contexts. Throws std::runtime_error
  // (BundleError included) whose text names a line or a field, never a value or a key.
  explicit BundleState(std::string_view text);
  ~BundleState();
  BundleState(const BundleState&) = delete;
  BundleState& operator=(const BundleState&) = delete;

  [[nodiscard]] const std::string& label() const noexcept { return bundle_.label; }
  [[nodiscard]] const std::vector<egress_secrets::SecretRule>& secrets() const noexcept {
    return bundle_.secrets;
  }
  [[nodiscard]] bool intercepts(const std::string& host) const { return leaves_.contains(host); }

  // Gives a server-side SSL object for a client that asked CONNECT `host` the leaf of that host
  // (and the CA after it), and makes the handshake fail unless the client's SNI is `host`.
  // False when the bundle has no leaf for `host`.
  bool prepare_server(SSL* ssl, const std::string& host) const;
  [[nodiscard]] boost::asio::ssl::context& server_context() const noexcept { return server_ctx_; }
  // Verifies upstreams against the system roots (when the image has them) and upstream_ca.
  [[nodiscard]] boost::asio::ssl::context& client_context() const noexcept { return client_ctx_; }

 private:
  struct Leaf {
    X509Ptr cert;
    PkeyPtr key;
  };
  egress_secrets::SecretBundle bundle_;
  std::map<std::string, Leaf> leaves_;
  X509Ptr ca_;
  mutable boost::asio::ssl::context server_ctx_;
  mutable boost::asio::ssl::context client_ctx_;
};

// The host a server-side SSL object was prepared for (the SNI check reads it).
int expected_host_index();

}  // namespace execmcp::egress_injector
