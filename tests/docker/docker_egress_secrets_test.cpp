// `egress.secrets` across the proxy's lives, on the real engine, for the backend under test: the
// proxy's injector holds nothing of its own, so each time the proxy starts again (a suspended
// agent resumed) or is made again (removed from outside while the agent was down) the backend
// hands it this start's secrets again, and the next intercepted request still carries the value.
// The end-to-end cases through the server are tests/e2e/docker/egress_secrets.test.mjs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "docker_egress_support.hpp"
#include "docker_test_support.hpp"
#include "egress/secret_upstream.hpp"
#include "execmcp/sdk/sandbox_control.hpp"

namespace execmcp::docker_test {
namespace {

constexpr const char* kEgressImage = "execmcp/egress:latest";
constexpr const char* kValue = "ghp_Zq7RkT2mW9xV4nB8cL1pH6sD3fG5jK0aY2eU";
constexpr const char* kSource = "EXECMCP_TEST_EGRESS_SECRET";

class DockerEgressSecrets : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ENGINE();
    int status = 0;
    sh(outside_cli() + " image inspect " + kEgressImage, &status);
    if (status != 0)
      GTEST_SKIP() << "image " << kEgressImage
                   << " is missing: SKIPPING (build it with docker/build.sh --egress)";
    network_ = "execmcp-egsecret-" + std::to_string(::getpid()) + "-up";
    sh(outside_cli() + " network create --internal --label execmcp.test=egress-secrets " +
       network_);
    ::setenv(kSource, kValue, 1);
  }
  void TearDown() override {
    if (!network_.empty()) sh(outside_cli() + " network rm " + network_);
    ::unsetenv(kSource);
  }

  std::unique_ptr<ExecutorBackend> backend(const std::string& workspace, const std::string& ca,
                                           std::string* error) {
    BackendInit init;
    init.agent_id = "egsecret";
    init.cwd = workspace;
    init.paths = {{workspace, true}};
    nlohmann::json secret = {{"name", "API_TOKEN"},
                             {"from", std::string("env:") + kSource},
                             {"hosts", {"api.test"}},
                             {"header", "Authorization"}};
    init.settings_json = nlohmann::json{
        {"network", "egress"},
        {"egress",
         {{"allow", {"api.test"}},
          {"upstream_network", network_},
          {"upstream_ca", ca},
          {"secrets",
           {secret}}}}}.dump();
    return make_backend(init, error);
  }

  // The intercepted request, retried while the proxy comes up: what the upstream answered.
  static std::string ask(ExecutorBackend& b) {
    return trim(run(b,
                    "for i in $(seq 50); do out=$(curl -s -m 10 -H \"Authorization: Bearer "
                    "$API_TOKEN\" https://api.test/need-auth) && echo \"$out\" && exit 0; "
                    "sleep 0.2; done; exit 1")
                    .stdout_data);
  }

  std::string network_;
};

TEST_F(DockerEgressSecrets, AProxyStartedOrMadeAgainGetsTheSecretsAgain) {
  SecretUpstream upstream(network_, {"api.test"}, kValue);
  ASSERT_EQ(upstream.error(), "");
  TempDir ws("egsecret");
  std::string error;
  auto b = backend(ws.path(), upstream.ca_path(), &error);
  ASSERT_TRUE(b) << error;
  ASSERT_EQ(b->start(), "");
  const std::string name = "execmcp-egsecret-" + instance_tag();
  EXPECT_EQ(ask(*b), "authorized");

  // Suspended and resumed: the proxy is stopped and started again, its injector empty.
  auto* control = sdk::sandbox_control(*b);
  ASSERT_NE(control, nullptr);
  ASSERT_EQ(control->suspend(), "");
  ASSERT_EQ(control->resume(), "");
  EXPECT_EQ(ask(*b), "authorized");

  // The proxy removed from outside while the agent's container is down: the next call brings
  // both back, the proxy made anew with the injector and the secrets.
  sh(outside_cli() + " rm -f -v " + name + "-egress");
  sh(outside_cli() + " stop -t 1 " + name);
  EXPECT_EQ(ask(*b), "authorized");

  // Each time the upstream got the value, and the sandbox never held it.
  int with_value = 0;
  for (const auto& request : upstream.requests())
    if (SecretUpstream::header(request, "Authorization") == std::string("Bearer ") + kValue)
      ++with_value;
  EXPECT_GE(with_value, 3);
  const auto env = run(*b, "env; cat /proc/self/environ | tr '\\0' '\\n'");
  EXPECT_EQ(env.stdout_data.find(kValue), std::string::npos);
  EXPECT_EQ(sh(outside_cli() + " inspect " + name + " " + name + "-egress").find(kValue),
            std::string::npos);

  b->cleanup();
  EXPECT_FALSE(container_exists(name + "-egress"));
}

}  // namespace
}  // namespace execmcp::docker_test
