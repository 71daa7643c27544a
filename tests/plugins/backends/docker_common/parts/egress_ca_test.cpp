// Tests of the agent's interception certificates: each leaf verifies against its CA for its own
// name and no other, the CA is name-constrained to exactly the hosts (critical; a CA with that
// extension refuses a leaf for another name), the extensions and validity are as specified, the
// CA's key is never handed out, and two starts never share a CA. Prints the time to mint.
#include "docker_common/parts/egress_ca.hpp"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "docker_common/parts/egress_secrets.hpp"

namespace execmcp::plugins::docker_common {
namespace {

struct CertFree {
  void operator()(X509* p) const { X509_free(p); }
};
using Cert = std::unique_ptr<X509, CertFree>;
struct KeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;

Cert read_cert(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  return Cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

Key read_key(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  return Key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

// X509_verify_cert's answer for `leaf` with `ca` as the only trusted root, as `openssl verify`.
int verify(X509* ca, X509* leaf, const char* host = nullptr) {
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), &X509_STORE_free);
  X509_STORE_add_cert(store.get(), ca);
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(),
                                                                      &X509_STORE_CTX_free);
  X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER);
  if (host != nullptr) X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx.get()), host, 0);
  if (X509_verify_cert(ctx.get()) == 1) return X509_V_OK;
  return X509_STORE_CTX_get_error(ctx.get());
}

std::vector<std::string> permitted_dns(X509* ca, int& critical) {
  std::vector<std::string> out;
  auto* nc = static_cast<NAME_CONSTRAINTS*>(
      X509_get_ext_d2i(ca, NID_name_constraints, &critical, nullptr));
  if (nc == nullptr) return out;
  EXPECT_EQ(nc->excludedSubtrees, nullptr);
  for (int i = 0; i < sk_GENERAL_SUBTREE_num(nc->permittedSubtrees); ++i) {
    const GENERAL_SUBTREE* tree = sk_GENERAL_SUBTREE_value(nc->permittedSubtrees, i);
    EXPECT_EQ(tree->base->type, GEN_DNS);
    const ASN1_IA5STRING* dns = tree->base->d.dNSName;
    out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)),
                     static_cast<std::size_t>(ASN1_STRING_length(dns)));
  }
  NAME_CONSTRAINTS_free(nc);
  return out;
}

std::vector<std::string> san_dns(X509* cert) {
  std::vector<std::string> out;
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    EXPECT_EQ(name->type, GEN_DNS);
    if (name->type == GEN_DNS)
      out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(name->d.dNSName)),
                       static_cast<std::size_t>(ASN1_STRING_length(name->d.dNSName)));
  }
  GENERAL_NAMES_free(names);
  return out;
}

bool critical(X509* cert, int nid) {
  const int at = X509_get_ext_by_NID(cert, nid, -1);
  return at >= 0 && X509_EXTENSION_get_critical(X509_get_ext(cert, at)) == 1;
}

const std::vector<std::string> kHosts = {"api.test", "git.test", "pypi.test"};

TEST(EgressCa, EachLeafVerifiesAgainstTheCaForItsOwnNameOnly) {
  const auto made = mint_agent_certificates(kHosts, "agent-1");
  const Cert ca = read_cert(made.ca_cert_pem);
  ASSERT_TRUE(ca);
  ASSERT_EQ(made.leaves.size(), kHosts.size());
  for (std::size_t i = 0; i < kHosts.size(); ++i) {
    const auto& leaf_pem = made.leaves[i];
    EXPECT_EQ(leaf_pem.host, kHosts[i]);
    const Cert leaf = read_cert(leaf_pem.cert_pem);
    ASSERT_TRUE(leaf);
    EXPECT_EQ(verify(ca.get(), leaf.get()), X509_V_OK) << kHosts[i];
    EXPECT_EQ(verify(ca.get(), leaf.get(), kHosts[i].c_str()), X509_V_OK);
    EXPECT_EQ(verify(ca.get(), leaf.get(), "evil.test"), X509_V_ERR_HOSTNAME_MISMATCH);
    EXPECT_EQ(X509_check_host(leaf.get(), kHosts[i].data(), kHosts[i].size(), 0, nullptr), 1);
    EXPECT_EQ(X509_check_host(leaf.get(), "evil.test", 0, 0, nullptr), 0);
    const std::string other = kHosts[(i + 1) % kHosts.size()];
    EXPECT_EQ(X509_check_host(leaf.get(), other.data(), other.size(), 0, nullptr), 0);
    // Its key is its own and belongs to it.
    const Key key = read_key(leaf_pem.key_pem);
    ASSERT_TRUE(key);
    EXPECT_EQ(X509_check_private_key(leaf.get(), key.get()), 1);
    EXPECT_EQ(EVP_PKEY_get_bits(key.get()), 256);
  }
  EXPECT_NE(made.leaves[0].key_pem, made.leaves[1].key_pem);
}

TEST(EgressCa, TheCaIsConstrainedToExactlyTheHosts) {
  const auto made = mint_agent_certificates(kHosts, "agent-1");
  const Cert ca = read_cert(made.ca_cert_pem);
  ASSERT_TRUE(ca);
  int crit = -1;
  EXPECT_EQ(permitted_dns(ca.get(), crit), kHosts);
  EXPECT_EQ(crit, 1);
  EXPECT_TRUE(critical(ca.get(), NID_basic_constraints));
  EXPECT_TRUE(critical(ca.get(), NID_key_usage));
  EXPECT_EQ(X509_check_ca(ca.get()), 1);
  EXPECT_EQ(X509_get_pathlen(ca.get()), 0);
  EXPECT_TRUE(X509_get_key_usage(ca.get()) & KU_KEY_CERT_SIGN);
  EXPECT_NE(X509_get0_subject_key_id(ca.get()), nullptr);
  char cn[128] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(ca.get()), NID_commonName, cn, sizeof cn);
  EXPECT_STREQ(cn, "execmcp egress CA agent-1");
  // Public only: no key of the CA in what is handed out.
  EXPECT_EQ(made.ca_cert_pem.find("PRIVATE KEY"), std::string::npos);
  EXPECT_EQ(made.ca_cert_pem.find("-----BEGIN CERTIFICATE-----"), 0u);
}

// The CA's key is gone, so a leaf for another name is signed here by a twin: the same certificate
// with a key of the test's own. The constraint, as encoded, makes a verifier refuse that leaf.
TEST(EgressCa, ItsNameConstraintRefusesALeafForAnotherName) {
  const auto made = mint_agent_certificates({"api.test"}, "agent-1");
  const Cert ca = read_cert(made.ca_cert_pem);
  Key twin_key(EVP_EC_gen("P-256"));
  Cert twin(X509_dup(ca.get()));
  ASSERT_TRUE(twin && twin_key);
  ASSERT_EQ(X509_set_pubkey(twin.get(), twin_key.get()), 1);
  ASSERT_NE(X509_sign(twin.get(), twin_key.get(), EVP_sha256()), 0);
  const auto leaf_for = [&](const std::string& host) {
    Key key(EVP_EC_gen("P-256"));
    Cert leaf(X509_new());
    X509_set_version(leaf.get(), X509_VERSION_3);
    ASN1_INTEGER_set(X509_get_serialNumber(leaf.get()), 7);
    X509_gmtime_adj(X509_getm_notBefore(leaf.get()), -60);
    X509_gmtime_adj(X509_getm_notAfter(leaf.get()), 3600);
    X509_set_issuer_name(leaf.get(), X509_get_subject_name(twin.get()));
    X509_set_pubkey(leaf.get(), key.get());
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, twin.get(), leaf.get(), nullptr, nullptr, 0);
    X509_EXTENSION* san =
        X509V3_EXT_nconf_nid(nullptr, &ctx, NID_subject_alt_name, ("DNS:" + host).c_str());
    X509_add_ext(leaf.get(), san, -1);
    X509_EXTENSION_free(san);
    X509_sign(leaf.get(), twin_key.get(), EVP_sha256());
    return leaf;
  };
  EXPECT_EQ(verify(twin.get(), leaf_for("api.test").get()), X509_V_OK);
  EXPECT_EQ(verify(twin.get(), leaf_for("evil.test").get()), X509_V_ERR_PERMITTED_VIOLATION);
  EXPECT_EQ(verify(twin.get(), leaf_for("api.test.evil.test").get()),
            X509_V_ERR_PERMITTED_VIOLATION);
}

TEST(EgressCa, LeavesHaveOnlyTheirNameAndServerUseInsideTheCasValidity) {
  const std::string long_host = std::string(60, 'a') + ".long.test";  // no CN: over 64
  const auto made = mint_agent_certificates({"api.test", long_host}, "x");
  const Cert ca = read_cert(made.ca_cert_pem);
  for (const auto& leaf_pem : made.leaves) {
    const Cert leaf = read_cert(leaf_pem.cert_pem);
    EXPECT_EQ(san_dns(leaf.get()), std::vector<std::string>{leaf_pem.host});
    EXPECT_EQ(X509_check_ca(leaf.get()), 0);
    EXPECT_TRUE(X509_get_extended_key_usage(leaf.get()) & XKU_SSL_SERVER);
    EXPECT_EQ(X509_get_extended_key_usage(leaf.get()) & ~XKU_SSL_SERVER, 0u);
    EXPECT_EQ(X509_get_key_usage(leaf.get()), static_cast<std::uint32_t>(KU_DIGITAL_SIGNATURE));
    EXPECT_TRUE(critical(leaf.get(), NID_key_usage));
    EXPECT_NE(X509_get0_authority_key_id(leaf.get()), nullptr);
    EXPECT_EQ(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(leaf.get()),
                                    X509_get0_subject_key_id(ca.get())),
              0);
    EXPECT_EQ(X509_get_signature_nid(leaf.get()), NID_ecdsa_with_SHA256);
    int day = 0, sec = 0;
    ASSERT_EQ(
        ASN1_TIME_diff(&day, &sec, X509_get0_notBefore(ca.get()), X509_get0_notBefore(leaf.get())),
        1);
    EXPECT_GE(day * 86400 + sec, 0);
    ASSERT_EQ(
        ASN1_TIME_diff(&day, &sec, X509_get0_notAfter(leaf.get()), X509_get0_notAfter(ca.get())),
        1);
    EXPECT_GE(day * 86400 + sec, 0);
  }
  EXPECT_TRUE(critical(read_cert(made.leaves[1].cert_pem).get(), NID_subject_alt_name));
  // The CA: from 5 minutes ago for 30 days.
  int day = 0, sec = 0;
  ASSERT_EQ(ASN1_TIME_diff(&day, &sec, X509_get0_notBefore(ca.get()), X509_get0_notAfter(ca.get())),
            1);
  EXPECT_EQ(day * 86400 + sec, 30 * 86400 + 300);
  EXPECT_EQ(X509_get_signature_nid(ca.get()), NID_ecdsa_with_SHA256);
}

TEST(EgressCa, TwoStartsNeverShareACa) {
  const auto a = mint_agent_certificates({"api.test"}, "agent");
  const auto b = mint_agent_certificates({"api.test"}, "agent");
  EXPECT_NE(a.ca_cert_pem, b.ca_cert_pem);
  const Cert ca_a = read_cert(a.ca_cert_pem);
  const Cert ca_b = read_cert(b.ca_cert_pem);
  EXPECT_NE(
      ASN1_INTEGER_cmp(X509_get0_serialNumber(ca_a.get()), X509_get0_serialNumber(ca_b.get())), 0);
  EXPECT_NE(EVP_PKEY_eq(X509_get0_pubkey(ca_a.get()), X509_get0_pubkey(ca_b.get())), 1);
  // One's leaf does not verify against the other's CA.
  EXPECT_NE(verify(ca_b.get(), read_cert(a.leaves[0].cert_pem).get()), X509_V_OK);
}

TEST(EgressCa, NoHostIsAnError) {
  EXPECT_THROW((void)mint_agent_certificates({}, "agent"), std::invalid_argument);
}

TEST(EgressCa, TheCaReadsAsUpstreamRoots) {
  const auto made = mint_agent_certificates({"api.test"}, "agent");
  const auto path = std::filesystem::temp_directory_path() /
                    ("execmcp-roots-" + std::to_string(::getpid()) + ".pem");
  std::ofstream(path) << made.ca_cert_pem << made.leaves[0].cert_pem;
  std::string pem;
  EXPECT_EQ(read_upstream_ca(path.string(), pem), "");
  EXPECT_EQ(pem, made.ca_cert_pem + made.leaves[0].cert_pem);
  std::filesystem::remove(path);
}

TEST(EgressCa, TimeToMint) {
  for (const std::size_t count : {std::size_t{1}, std::size_t{5}}) {
    std::vector<std::string> hosts;
    for (std::size_t i = 0; i < count; ++i) hosts.push_back("h" + std::to_string(i) + ".test");
    const auto started = std::chrono::steady_clock::now();
    const auto made = mint_agent_certificates(hosts, "timing");
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::steady_clock::now() - started)
                        .count();
    EXPECT_EQ(made.leaves.size(), count);
    std::printf("mint_agent_certificates: CA + %zu leaf(s) in %.2f ms\n", count,
                static_cast<double>(us) / 1000.0);
  }
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
