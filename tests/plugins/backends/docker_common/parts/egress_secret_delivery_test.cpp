// Tests of the secrets' delivery to the egress proxy's injector against FakeEngine: the exec it
// runs, a receiver that is not ready yet tried again, and a failure that names the proxy and what
// the injector said, never a value.
#include "docker_common/parts/egress_secret_delivery.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "fake_engine.hpp"

namespace execmcp::plugins::docker_common {
namespace {

egress_secrets::SecretBundle bundle() {
  egress_secrets::SecretBundle b;
  b.label = "agent";
  b.ca_cert_pem = "-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n";
  b.leaves.push_back({"api.test", b.ca_cert_pem, "-----BEGIN PRIVATE KEY-----\nk\n"});
  egress_secrets::SecretRule rule;
  rule.name = "API_TOKEN";
  rule.value = "value-0123456789abcdefXYZ";
  rule.placeholder = "value-9876543210fedcbaQRS";
  rule.hosts = {"api.test"};
  b.secrets.push_back(rule);
  return b;
}

void run_proxy(FakeEngine& engine) {
  engine.containers["p"].state.running = true;
}

TEST(EgressSecretDelivery, TheInjectorRunsAsTheProxyUserWithItsProgramAndSquidAsItsChild) {
  EXPECT_EQ(injector_entrypoint(),
            (std::vector<std::string>{kInjectorPath, "--serve", "--", kEgressImageEntrypoint}));
  FakeEngine engine;
  run_proxy(engine);
  engine.exec_results.push_back({"ok 1 secrets\n", "", 0});
  EXPECT_EQ(deliver_bundle(engine, "p", bundle()), "");
  EXPECT_EQ(engine.last_exec.cmd, (std::vector<std::string>{kInjectorPath, "--receive"}));
  EXPECT_EQ(engine.last_exec.user, kEgressProxyUser);
  EXPECT_TRUE(engine.last_exec.attach_stdin);
  // Nothing of the bundle on the command line or in the environment.
  EXPECT_TRUE(engine.last_exec.env.empty());
}

TEST(EgressSecretDelivery, AReceiverThatFindsNoInjectorYetIsTriedAgain) {
  FakeEngine engine;
  run_proxy(engine);
  engine.exec_results.push_back({"", "execmcp-egress-injector: control socket not ready\n", 3});
  engine.exec_results.push_back({"ok 1 secrets\n", "", 0});
  EXPECT_EQ(deliver_bundle(engine, "p", bundle()), "");
  EXPECT_EQ(std::count(engine.calls.begin(), engine.calls.end(), "exec p"), 2);
}

TEST(EgressSecretDelivery, AFailureNamesTheProxyAndWhatTheInjectorSaidButNoValue) {
  FakeEngine engine;
  run_proxy(engine);
  engine.containers["p"].state.running = false;
  const auto why = deliver_bundle(engine, "p", bundle());
  EXPECT_NE(why.find("handing the egress proxy 'p' its secrets"), std::string::npos) << why;
  EXPECT_EQ(why.find("0123456789abcdef"), std::string::npos) << why;
  EXPECT_EQ(why.find("9876543210fedcba"), std::string::npos) << why;
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
