// Tests of the squid.conf lines that route the secret hosts through execmcp-egress-injector: the
// peer, the injector's own port and what it may reach, the access log, and that the block, put
// where its header says, uses only acls defined before it and comes before every rule it must.
#include "docker_common/parts/egress_secret_squid.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "docker_common/parts/egress_policy.hpp"

namespace execmcp::plugins::docker_common {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

std::ptrdiff_t index_of(const std::vector<std::string>& lines, const std::string& line) {
  const auto it = std::find(lines.begin(), lines.end(), line);
  return it == lines.end() ? -1 : it - lines.begin();
}

TEST(EgressSecretSquid, NoSecretHostsNoLines) {
  EXPECT_EQ(render_secret_squid_lines({}), "");
}

TEST(EgressSecretSquid, RoutesTheSecretHostsThroughTheInjectorAndBack) {
  const auto lines = lines_of(render_secret_squid_lines({"api.test", "git.test"}));
  for (const char* expected : {
           "http_port 127.0.0.1:3129 name=injector_up",
           "acl egress_injector_up myportname injector_up",
           "acl egress_injector_src src 127.0.0.1/32",
           "acl egress_secret_hosts dstdomain -n api.test",
           "acl egress_secret_hosts dstdomain -n git.test",
           "access_log none egress_injector_up",
           "cache_peer 127.0.0.1 parent 3130 0 no-query no-digest no-netdb-exchange name=injector",
           "cache_peer_access injector allow egress_secret_hosts !egress_injector_up",
           "cache_peer_access injector deny all",
           "always_direct allow egress_injector_up",
           "never_direct allow egress_secret_hosts",
       })
    EXPECT_GE(index_of(lines, expected), 0) << expected;
  // The injector's port: loopback to the secret hosts (never the proxy itself nor link-local),
  // then nothing else.
  std::vector<std::string> access;
  for (const auto& line : lines)
    if (line.starts_with("http_access ")) access.push_back(line);
  const std::vector<std::string> expected_access = {
      "http_access allow egress_injector_up egress_injector_src egress_secret_hosts !to_localhost "
      "!egress_secret_linklocal",
      "http_access deny egress_injector_up"};
  EXPECT_EQ(access, expected_access);
  // Only loopback listens on the injector's port; nothing listens on all addresses.
  for (const auto& line : lines) {
    if (line.starts_with("http_port ")) {
      EXPECT_TRUE(line.starts_with("http_port 127.0.0.1:")) << line;
    }
  }
}

// The block put where its header says, into the configuration render_squid_conf makes with client
// networks (the case where loopback would be refused by `deny !egress_clients`).
TEST(EgressSecretSquid, FitsIntoTheRenderedConfigurationBeforeItsAccessLogAndRules) {
  std::vector<sdk::SettingsProblem> problems;
  const auto policy =
      parse_egress(nlohmann::json::parse(R"({"allow": ["api.test", "pypi.org"]})"), problems);
  ASSERT_TRUE(problems.empty());
  auto lines = lines_of(render_squid_conf(policy, "agent-1", {"172.30.0.0/16"}));
  const auto access_log = std::find_if(lines.begin(), lines.end(), [](const std::string& line) {
    return line.starts_with("access_log ");
  });
  ASSERT_NE(access_log, lines.end());
  ASSERT_TRUE(std::prev(access_log)->starts_with("logformat execmcp "));
  const auto block = lines_of(render_secret_squid_lines({"api.test"}));
  lines.insert(access_log, block.begin(), block.end());

  // Every acl a directive names is defined above it (Squid refuses a configuration otherwise).
  std::set<std::string> defined = {"all", "manager", "to_localhost", "localhost"};
  for (const auto& line : lines) {
    const auto words = words_of(line);
    if (words.empty() || words[0].starts_with("#")) continue;
    if (words[0] == "acl") {
      defined.insert(words[1]);
      continue;
    }
    std::size_t first_acl = 0;
    if (words[0] == "http_access" || words[0] == "never_direct" || words[0] == "always_direct")
      first_acl = 2;
    else if (words[0] == "cache_peer_access")
      first_acl = 3;
    else if (words[0] == "access_log")
      first_acl = words.size() > 2 && words[2].starts_with("logformat=") ? 3 : 2;
    for (std::size_t i = first_acl; first_acl != 0 && i < words.size(); ++i) {
      std::string acl = words[i];
      if (acl.starts_with("!")) acl.erase(0, 1);
      EXPECT_TRUE(defined.contains(acl)) << acl << " used before its definition in: " << line;
    }
  }
  // `access_log none` is the first access_log (Squid stops at the first that matches), and the
  // injector's rules come before every other http_access (loopback is not a client network).
  const auto none = index_of(lines, "access_log none egress_injector_up");
  const auto stdout_log = index_of(lines, "access_log stdio:/dev/stdout logformat=execmcp");
  ASSERT_GE(none, 0);
  EXPECT_LT(none, stdout_log);
  std::vector<std::string> access;
  for (const auto& line : lines)
    if (line.starts_with("http_access ")) access.push_back(line);
  ASSERT_GE(access.size(), 4u);
  EXPECT_TRUE(access[0].starts_with("http_access allow egress_injector_up ")) << access[0];
  EXPECT_EQ(access[1], "http_access deny egress_injector_up");
  EXPECT_EQ(access[2], "http_access deny manager");
  EXPECT_EQ(access[3], "http_access deny !egress_clients");
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
