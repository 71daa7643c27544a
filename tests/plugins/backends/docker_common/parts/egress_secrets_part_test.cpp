// Tests of `egress.secrets` in ContainerLifecycle against FakeEngine: the values are read and the
// certificates made at each start before anything is created, every command gets the placeholders
// and the trust variables (never the value, which reaches no spec, call or log), and a secret that
// cannot be read fails the config check or the start by its name.
#include "docker_common/parts/egress_secrets_part.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "docker_common/parts/egress_ca.hpp"
#include "docker_common/parts/egress_proxy.hpp"
#include "fake_engine.hpp"
#include "lifecycle_test_support.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using test_support::has;

constexpr const char* kSource = "EXECMCP_UNIT_SECRET_SOURCE";
constexpr const char* kValue = "ghp_S3cr3tValueThatMustNeverLeak0123456789";

class RecordingLog final : public sdk::LogSink {
 public:
  void log(sdk::LogLevel, std::string_view message) noexcept override {
    std::lock_guard lock(mutex_);
    text_ += std::string(message) + "\n";
  }
  std::string text() {
    std::lock_guard lock(mutex_);
    return text_;
  }

 private:
  std::mutex mutex_;
  std::string text_;
};

class EgressSecretsPartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/execmcp-egress-secrets-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    workspace_ = dir_ + "/workspace";
    std::filesystem::create_directories(workspace_);
    ::setenv(kSource, kValue, 1);
    init_.agent_id = "agent";
    init_.instance_id = "unit";
    init_.cwd = workspace_;
    init_.log = &log_;
    settings_.user = "1000:1000";
    settings_.exec_mode = ExecMode::Exec;
    settings_.network = "egress";
    settings_.egress = EgressPolicy{};
    settings_.egress->allow = {{EgressEntry::Kind::kHost, "api.test", "api.test"},
                               {EgressEntry::Kind::kHost, "git.test", "git.test"}};
    settings_.egress->upstream_network = "uplink";
    // The program copied into the proxy: any file will do for the fake engine.
    settings_.egress->injector_program = dir_ + "/injector";
    std::ofstream(settings_.egress->injector_program) << "#!/bin/sh\n";
    EgressSecretSetting secret;
    secret.name = "GITHUB_TOKEN";
    secret.from = {EgressSecretSource::Kind::kEnv, kSource};
    secret.hosts = {"api.test", "git.test"};
    secret.header = "Authorization";
    settings_.egress->secrets.push_back(secret);
    engine_.images.insert(settings_.image);
    engine_.images.insert(kEgressImage);
    engine_.networks["uplink"] = {"net-uplink", "uplink", "bridge", false, {}, {}, {}};
  }
  void TearDown() override {
    ::unsetenv(kSource);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  ContainerLifecycle make() { return ContainerLifecycle(init_, "docker-test", settings_, engine_); }

  static std::string value_of(const std::vector<std::string>& env, const std::string& name) {
    for (const auto& e : env)
      if (e.starts_with(name + "=")) return e.substr(name.size() + 1);
    return "<unset>";
  }
  // Everything the engine was asked, as text.
  std::string engine_text() const {
    std::string text;
    for (const auto& call : engine_.calls) text += call + "\n";
    for (const auto& e : engine_.last_spec.env) text += e + "\n";
    for (const auto& [name, info] : engine_.containers)
      for (const auto& [k, v] : info.labels) text += k + "=" + v + "\n";
    return text;
  }

  std::string dir_, workspace_;
  RecordingLog log_;
  sdk::BackendInit init_;
  DockerSettings settings_;
  FakeEngine engine_;
};

TEST_F(EgressSecretsPartTest, CommandsGetThePlaceholderAndTheTrustVariablesNeverTheValue) {
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  const auto env = lifecycle.call_env({});
  const std::string placeholder = value_of(env, "GITHUB_TOKEN");
  EXPECT_EQ(placeholder.size(), std::string(kValue).size());
  EXPECT_NE(placeholder, kValue);
  EXPECT_TRUE(placeholder.starts_with("ghp_"));
  for (const char* name : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                           "GIT_SSL_CAINFO", "PIP_CERT", "CARGO_HTTP_CAINFO"})
    EXPECT_EQ(value_of(env, name), "/.execmcp-trust/ca-bundle.pem") << name;
  EXPECT_EQ(value_of(env, "NODE_EXTRA_CA_CERTS"), "/.execmcp-trust/ca.pem");
  // The source variable is not passed, and the value is nowhere the sandbox or a log sees.
  EXPECT_EQ(value_of(env, kSource), "<unset>");
  for (const auto& e : env) EXPECT_FALSE(has(e, kValue)) << e;
  EXPECT_FALSE(has(engine_text(), kValue));
  EXPECT_FALSE(has(engine_text(), placeholder));  // per call only, never in the container's config
  EXPECT_FALSE(has(log_.text(), kValue));
  EXPECT_TRUE(has(log_.text(), "egress secrets: 1 (GITHUB_TOKEN) held by the proxy for 2 host(s)"))
      << log_.text();
}

TEST_F(EgressSecretsPartTest, TheBundleHoldsTheValueTheCaAndALeafPerHost) {
  auto lifecycle = make();
  EgressSecretsPart own(lifecycle, *settings_.egress);
  EXPECT_TRUE(own.bundle().secrets.empty());  // before a start
  ASSERT_EQ(own.prepare_start(), "");
  const auto& bundle = own.bundle();
  EXPECT_EQ(bundle.label, "agent");
  EXPECT_TRUE(bundle.ca_cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
  ASSERT_EQ(bundle.leaves.size(), 2u);
  EXPECT_EQ(bundle.leaves[0].host, "api.test");
  EXPECT_EQ(bundle.leaves[1].host, "git.test");
  EXPECT_TRUE(has(bundle.leaves[0].key_pem, "PRIVATE KEY"));
  ASSERT_EQ(bundle.secrets.size(), 1u);
  EXPECT_EQ(bundle.secrets[0].name, "GITHUB_TOKEN");
  EXPECT_EQ(bundle.secrets[0].value, kValue);
  EXPECT_EQ(bundle.secrets[0].header, "Authorization");
  EXPECT_EQ(bundle.secrets[0].hosts, (std::vector<std::string>{"api.test", "git.test"}));
  EXPECT_EQ(bundle.upstream_ca_pem, "");
  EXPECT_EQ(own.secrets()->rules()[0].placeholder, bundle.secrets[0].placeholder);

  // Each start: a new placeholder and a new CA.
  const std::string first_placeholder = bundle.secrets[0].placeholder;
  const std::string first_ca = bundle.ca_cert_pem;
  const auto held = own.secrets();
  ASSERT_EQ(own.prepare_start(), "");
  EXPECT_NE(own.bundle().secrets[0].placeholder, first_placeholder);
  EXPECT_NE(own.bundle().ca_cert_pem, first_ca);
  EXPECT_EQ(held->bundle().ca_cert_pem, first_ca);  // what a reader holds stays whole
}

TEST_F(EgressSecretsPartTest, AMissingValueFailsTheConfigCheckByName) {
  ::unsetenv(kSource);
  try {
    make();
    FAIL() << "constructed";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), std::string("secret GITHUB_TOKEN: env:") + kSource +
                                         " is not set in the server's environment");
  }
}

TEST_F(EgressSecretsPartTest, AValueGoneAtStartFailsItBeforeAnythingIsMade) {
  auto lifecycle = make();
  ::unsetenv(kSource);
  const auto err = lifecycle.start();
  EXPECT_TRUE(has(err, "secret GITHUB_TOKEN: env:")) << err;
  for (const auto& call : engine_.calls) EXPECT_FALSE(call.starts_with("create")) << call;
  EXPECT_EQ(value_of(lifecycle.call_env({}), "GITHUB_TOKEN"), "<unset>");
  EXPECT_EQ(value_of(lifecycle.call_env({}), "SSL_CERT_FILE"), "<unset>");
  // Back again: the next start works.
  ::setenv(kSource, kValue, 1);
  ASSERT_EQ(lifecycle.start(), "");
  EXPECT_NE(value_of(lifecycle.call_env({}), "GITHUB_TOKEN"), "<unset>");
}

TEST_F(EgressSecretsPartTest, AFileInTheWorkspaceIsRefused) {
  const std::string path = workspace_ + "/token";
  std::ofstream(path) << kValue << "\n";
  settings_.egress->secrets[0].from = {EgressSecretSource::Kind::kFile, path};
  try {
    make();
    FAIL() << "constructed";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(has(e.what(), "it lies inside '" + workspace_ + "'")) << e.what();
    EXPECT_FALSE(has(e.what(), kValue));
  }
  // Outside, it is read (one newline dropped).
  const std::string outside = dir_ + "/token";
  std::ofstream(outside) << kValue << "\n";
  settings_.egress->secrets[0].from = {EgressSecretSource::Kind::kFile, outside};
  auto lifecycle = make();
  EgressSecretsPart part(lifecycle, *settings_.egress);
  ASSERT_EQ(part.prepare_start(), "");
  EXPECT_EQ(part.bundle().secrets[0].value, kValue);
}

TEST_F(EgressSecretsPartTest, TheUpstreamRootsAreReadAtEachStart) {
  settings_.egress->upstream_ca = dir_ + "/roots.pem";
  try {
    make();
    FAIL() << "constructed";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "egress.upstream_ca '" + dir_ + "/roots.pem': No such file or directory");
  }
  // A CA of the test's as the roots.
  const auto roots = mint_agent_certificates({"roots.test"}, "roots").ca_cert_pem;
  std::ofstream(dir_ + "/roots.pem") << roots;
  auto lifecycle = make();
  EgressSecretsPart part(lifecycle, *settings_.egress);
  ASSERT_EQ(part.prepare_start(), "");
  EXPECT_EQ(part.bundle().upstream_ca_pem, roots);
  std::ofstream(dir_ + "/roots.pem") << "garbage";
  const auto err = part.prepare_start();
  EXPECT_TRUE(has(err, "egress.upstream_ca '" + dir_ + "/roots.pem': holds no PEM")) << err;
  EXPECT_TRUE(part.bundle().secrets.empty());  // a failed start keeps nothing
}

TEST_F(EgressSecretsPartTest, WithoutSecretsNothingIsAdded) {
  settings_.egress->secrets.clear();
  ::unsetenv(kSource);
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  EXPECT_EQ(value_of(lifecycle.call_env({}), "SSL_CERT_FILE"), "<unset>");
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
