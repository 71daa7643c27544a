// Tests of the Docker backends' description of their settings (check-config's lines): the network
// policy and, with egress secrets, a line per secret naming its hosts and limits and the upstream
// roots.
#include "docker_common/settings/settings_description.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace execmcp::plugins::docker_common {
namespace {

std::vector<std::string> describe(const std::string& json) {
  std::vector<std::string> lines;
  describe_docker_settings(json, lines);
  return lines;
}

TEST(SettingsDescription, TheNetworkPolicy) {
  EXPECT_EQ(describe("{}"), std::vector<std::string>{"network: none (no network)"});
  EXPECT_EQ(describe(R"({"network": "bridge", "runtime": "runsc"})"),
            (std::vector<std::string>{"runtime: runsc", "network: bridge"}));
  EXPECT_EQ(describe(R"({"network": "egress", "egress": {"allow": ["a.test"]}})"),
            std::vector<std::string>{"network: egress, only through the agent's own proxy, to: "
                                     "a.test; ports 80, 443; upstream network bridge"});
  EXPECT_TRUE(describe(R"({"container": "x", "network": "egress"})").empty());
}

TEST(SettingsDescription, EachEgressSecretAndTheUpstreamRoots) {
  const auto lines = describe(R"({"network": "egress", "egress": {
      "allow": ["api.test", "git.test"], "upstream_ca": "/etc/roots.pem",
      "secrets": [{"name": "GH", "from": "env:GITHUB_TOKEN", "hosts": ["api.test", "git.test"],
                   "header": "Authorization", "methods": ["GET", "POST"], "paths": ["/repos/"],
                   "plain_http": true},
                  {"name": "PIP", "from": "file:/run/pip", "hosts": ["api.test"]}]}})");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1],
            "egress secret GH (from env:GITHUB_TOKEN): the sandbox holds a placeholder; the proxy "
            "puts the value into requests to api.test, git.test (header Authorization; methods "
            "GET, POST; paths /repos/; also plain HTTP) only, over TLS it intercepts with the "
            "agent's own CA");
  EXPECT_EQ(lines[2],
            "egress secret PIP (from file:/run/pip): the sandbox holds a placeholder; the proxy "
            "puts the value into requests to api.test only, over TLS it intercepts with the "
            "agent's own CA");
  EXPECT_EQ(lines[3],
            "egress upstream roots: /etc/roots.pem (trusted beside the system's for the "
            "intercepted hosts)");
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
