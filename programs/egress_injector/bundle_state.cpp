// Parses a delivered bundle into what the sessions use: the rules, parsed leaves, TLS contexts.
#include "bundle_state.hpp"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstring>
#include <stdexcept>

#include "execmcp/egress_secrets/secret_bundle.hpp"

namespace execmcp::egress_injector {
namespace {

namespace ssl = boost::asio::ssl;
constexpr const char* kSystemRoots = "/etc/ssl/certs/ca-certificates.crt";

struct BioFree {
  void operator()(BIO* bio) const noexcept { BIO_free(bio); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

BioPtr memory_bio(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) throw std::runtime_error("out of memory reading a PEM block");
  return bio;
}

X509Ptr read_cert(const std::string& pem, const std::string& field) {
  auto bio = memory_bio(pem);
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!cert) throw std::runtime_error(field + ": not a PEM certificate");
  return cert;
}

PkeyPtr read_key(const std::string& pem, const std::string& field) {
  auto bio = memory_bio(pem);
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!key) throw std::runtime_error(field + ": not a PEM private key");
  return key;
}

int sni_must_match(SSL* ssl, int* alert, void*) {
  const auto* expected =
      static_cast<const std::string*>(SSL_get_ex_data(ssl, expected_host_index()));
  const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (expected == nullptr || sni == nullptr || strcasecmp(sni, expected->c_str()) != 0) {
    *alert = SSL_AD_UNRECOGNIZED_NAME;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  return SSL_TLSEXT_ERR_OK;
}

// Only HTTP/1.1 is relayed: a client offering h2 and http/1.1 gets http/1.1; one offering no
// http/1.1 gets no ALPN answer (and speaks HTTP/1.1 or fails).
int select_http11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                  unsigned int inlen, void*) {
  static constexpr unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kHttp11, sizeof kHttp11, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

void limit_versions(SSL_CTX* ctx) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
}

void add_upstream_roots(SSL_CTX* ctx, const std::string& pem) {
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  struct stat st {};
  if (::stat(kSystemRoots, &st) == 0 && X509_STORE_load_file(store, kSystemRoots) != 1)
    throw std::runtime_error(std::string("cannot load the system roots ") + kSystemRoots);
  ERR_clear_error();
  if (pem.empty()) return;
  auto bio = memory_bio(pem);
  int added = 0;
  while (X509Ptr cert{PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)}) {
    if (X509_STORE_add_cert(store, cert.get()) != 1)
      throw std::runtime_error("upstream-ca: certificate " + std::to_string(added + 1) +
                               " cannot be added to the trust store");
    ++added;
  }
  ERR_clear_error();
  if (added == 0) throw std::runtime_error("upstream-ca: no PEM certificate in it");
}

}  // namespace

int expected_host_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

BundleState::BundleState(std::string_view text)
    : bundle_(egress_secrets::parse_bundle(text)),
      server_ctx_(ssl::context::tls_server),
      client_ctx_(ssl::context::tls_client) {
  if (bundle_.ca_cert_pem.empty()) throw std::runtime_error("ca: missing");
  ca_ = read_cert(bundle_.ca_cert_pem, "ca");
  for (const auto& leaf : bundle_.leaves) {
    Leaf parsed{read_cert(leaf.cert_pem, "leaf " + leaf.host),
                read_key(leaf.key_pem, "leaf " + leaf.host)};
    if (X509_check_private_key(parsed.cert.get(), parsed.key.get()) != 1) {
      ERR_clear_error();
      throw std::runtime_error("leaf " + leaf.host + ": the key does not match the certificate");
    }
    leaves_[leaf.host] = std::move(parsed);
  }
  SSL_CTX* server = server_ctx_.native_handle();
  limit_versions(server);
  SSL_CTX_set_tlsext_servername_callback(server, sni_must_match);
  SSL_CTX_set_alpn_select_cb(server, select_http11, nullptr);

  SSL_CTX* client = client_ctx_.native_handle();
  limit_versions(client);
  add_upstream_roots(client, bundle_.upstream_ca_pem);
  SSL_CTX_set_verify(client, SSL_VERIFY_PEER, nullptr);
  static constexpr unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(client, kHttp11, sizeof kHttp11);
}

BundleState::~BundleState() {
  for (auto& secret : bundle_.secrets) OPENSSL_cleanse(secret.value.data(), secret.value.size());
  for (auto& leaf : bundle_.leaves) OPENSSL_cleanse(leaf.key_pem.data(), leaf.key_pem.size());
}

bool BundleState::prepare_server(SSL* ssl, const std::string& host) const {
  const auto it = leaves_.find(host);
  if (it == leaves_.end()) return false;
  SSL_set_ex_data(ssl, expected_host_index(), const_cast<std::string*>(&host));
  return SSL_use_certificate(ssl, it->second.cert.get()) == 1 &&
         SSL_use_PrivateKey(ssl, it->second.key.get()) == 1 &&
         SSL_add1_chain_cert(ssl, ca_.get()) == 1;
}

}  // namespace execmcp::egress_injector
