// Mints an agent start's interception CA and its leaves with OpenSSL (egress_ca.hpp).
#include "docker_common/parts/egress_ca.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>
#include <stdexcept>

#include "docker_common/parts/egress_secrets.hpp"

namespace execmcp::plugins::docker_common {
namespace {

template <typename T, void (*Free)(T*)>
struct Freer {
  void operator()(T* p) const { Free(p); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Freer<EVP_PKEY, EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, Freer<X509, X509_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Freer<X509_EXTENSION, X509_EXTENSION_free>>;
using BioPtr = std::unique_ptr<BIO, Freer<BIO, BIO_free_all>>;
using BnPtr = std::unique_ptr<BIGNUM, Freer<BIGNUM, BN_free>>;

// Throws naming the step and OpenSSL's first error (never key material: OpenSSL's messages hold
// none).
[[noreturn]] void fail(const std::string& step) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  std::string why = step;
  if (code != 0) {
    char text[256] = {};
    ERR_error_string_n(code, text, sizeof text);
    why += ": " + std::string(text);
  }
  throw std::runtime_error("egress certificates: " + why);
}

void check(int ok, const std::string& step) {
  if (ok != 1) fail(step);
}

KeyPtr p256_key() {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) fail("making a P-256 key");
  return key;
}

// A random positive 128-bit serial: unpredictable, so no two certificates share one.
void set_random_serial(X509* cert) {
  BnPtr serial(BN_new());
  if (!serial) fail("allocating a serial");
  check(BN_rand(serial.get(), 128, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY), "a random serial");
  if (BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert)) == nullptr)
    fail("setting the serial");
}

void set_validity(X509* cert, std::time_t now, long from_seconds, long to_seconds) {
  std::time_t at = now;
  if (X509_time_adj_ex(X509_getm_notBefore(cert), 0, from_seconds, &at) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(cert), 0, to_seconds, &at) == nullptr)
    fail("setting the validity");
}

void set_common_name(X509* cert, const std::string& cn) {
  X509_NAME* name = X509_get_subject_name(cert);
  check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>(cn.data()),
                                   static_cast<int>(cn.size()), -1, 0),
        "setting the common name");
}

void add_extension(X509* cert, X509V3_CTX& ctx, int nid, const std::string& value) {
  ExtPtr ext(X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext) fail(std::string("making extension ") + OBJ_nid2sn(nid) + " = " + value);
  check(X509_add_ext(cert, ext.get(), -1), std::string("adding extension ") + OBJ_nid2sn(nid));
}

std::string pem_of(const CertPtr& cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert.get()) != 1) fail("writing a certificate");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

// The private key in PKCS#8 PEM, through a buffer OpenSSL wipes when it frees it.
std::string pem_of(const KeyPtr& key) {
  BioPtr bio(BIO_new(BIO_s_secmem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
    fail("writing a private key");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

// "CN" is at most 64 characters (RFC 5280's ub-common-name); printable ASCII only.
std::string ca_common_name(const std::string& label) {
  std::string cn = "execmcp egress CA " + label;
  for (char& c : cn)
    if (c < ' ' || c > '~') c = '_';
  if (cn.size() > 64) cn.resize(64);
  return cn;
}

CertPtr make_ca(const std::vector<std::string>& hosts, const std::string& label, EVP_PKEY* key,
                std::time_t now) {
  CertPtr ca(X509_new());
  if (!ca) fail("allocating the CA certificate");
  check(X509_set_version(ca.get(), X509_VERSION_3), "setting the CA's version");
  set_random_serial(ca.get());
  set_validity(ca.get(), now, -kAgentCaBackdateSeconds, kAgentCaDays * 24 * 3600);
  set_common_name(ca.get(), ca_common_name(label));
  check(X509_set_issuer_name(ca.get(), X509_get_subject_name(ca.get())), "the CA's issuer");
  check(X509_set_pubkey(ca.get(), key), "the CA's public key");
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, ca.get(), ca.get(), nullptr, nullptr, 0);
  add_extension(ca.get(), ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
  add_extension(ca.get(), ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
  add_extension(ca.get(), ctx, NID_subject_key_identifier, "hash");
  std::string permitted = "critical";
  for (const auto& host : hosts) permitted += ",permitted;DNS:" + host;
  add_extension(ca.get(), ctx, NID_name_constraints, permitted);
  if (X509_sign(ca.get(), key, EVP_sha256()) == 0) fail("signing the CA certificate");
  return ca;
}

egress_secrets::LeafCertificate make_leaf(const std::string& host, X509* ca, EVP_PKEY* ca_key,
                                          std::time_t now) {
  const KeyPtr key = p256_key();
  CertPtr leaf(X509_new());
  if (!leaf) fail("allocating a leaf certificate");
  check(X509_set_version(leaf.get(), X509_VERSION_3), "setting a leaf's version");
  set_random_serial(leaf.get());
  // Inside the CA's validity, which a verifier may also require.
  set_validity(leaf.get(), now, -kAgentCaBackdateSeconds + 60, kAgentCaDays * 24 * 3600 - 60);
  // The name is in the subjectAltName, which clients match; a CN longer than 64 cannot be
  // written, and then the subject is empty and the SAN critical (RFC 5280, 4.2.1.6).
  const bool with_cn = host.size() <= 64;
  if (with_cn) set_common_name(leaf.get(), host);
  check(X509_set_issuer_name(leaf.get(), X509_get_subject_name(ca)), "a leaf's issuer");
  check(X509_set_pubkey(leaf.get(), key.get()), "a leaf's public key");
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, ca, leaf.get(), nullptr, nullptr, 0);
  add_extension(leaf.get(), ctx, NID_basic_constraints, "critical,CA:FALSE");
  add_extension(leaf.get(), ctx, NID_key_usage, "critical,digitalSignature");
  add_extension(leaf.get(), ctx, NID_ext_key_usage, "serverAuth");
  add_extension(leaf.get(), ctx, NID_subject_alt_name,
                std::string(with_cn ? "" : "critical,") + "DNS:" + host);
  add_extension(leaf.get(), ctx, NID_subject_key_identifier, "hash");
  add_extension(leaf.get(), ctx, NID_authority_key_identifier, "keyid:always");
  if (X509_sign(leaf.get(), ca_key, EVP_sha256()) == 0) fail("signing the leaf of " + host);
  return {host, pem_of(leaf), pem_of(key)};
}

}  // namespace

AgentCertificates mint_agent_certificates(const std::vector<std::string>& hosts,
                                          const std::string& label) {
  if (hosts.empty()) throw std::invalid_argument("egress certificates: no host to make one for");
  const std::time_t now = std::time(nullptr);
  AgentCertificates out;
  // The CA's key lives in this scope only: once the leaves are signed it is freed (OpenSSL
  // clears an EC key's private scalar when it frees it), and no other name can ever be signed.
  const KeyPtr ca_key = p256_key();
  const CertPtr ca = make_ca(hosts, label, ca_key.get(), now);
  out.ca_cert_pem = pem_of(ca);
  try {
    for (const auto& host : hosts)
      out.leaves.push_back(make_leaf(host, ca.get(), ca_key.get(), now));
  } catch (...) {
    for (auto& leaf : out.leaves) cleanse(leaf.key_pem);
    throw;
  }
  return out;
}

}  // namespace execmcp::plugins::docker_common
