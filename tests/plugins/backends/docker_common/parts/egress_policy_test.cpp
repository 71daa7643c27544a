// Tests of the egress policy: every entry form and the malformed ones, ports and the upstream
// network with their JSON pointers, the Squid configuration (the right acls and nothing that
// allows more than the list), the refusal page and the access log's lines.
#include "docker_common/parts/egress_policy.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace execmcp::plugins::docker_common {
namespace {

using Kind = EgressEntry::Kind;

EgressPolicy parse_ok(const std::string& json) {
  std::vector<sdk::SettingsProblem> problems;
  auto policy = parse_egress(nlohmann::json::parse(json), problems);
  EXPECT_TRUE(problems.empty()) << json << ": " << (problems.empty() ? "" : problems[0].message);
  return policy;
}

std::vector<sdk::SettingsProblem> problems_of(const std::string& json) {
  std::vector<sdk::SettingsProblem> problems;
  parse_egress(nlohmann::json::parse(json), problems);
  return problems;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool conf_find(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool has_line(const std::string& text, const std::string& line) {
  for (const auto& l : lines_of(text))
    if (l == line) return true;
  return false;
}

TEST(EgressEntry, EveryFormIsClassifiedAndNormalised) {
  struct Case {
    std::string text;
    Kind kind;
    std::string value;
  };
  const std::vector<Case> cases = {
      {"pypi.org", Kind::kHost, "pypi.org"},
      {"Files.PythonHosted.org", Kind::kHost, "files.pythonhosted.org"},
      {"registry", Kind::kHost, "registry"},
      {"my-host_1.example.test", Kind::kHost, "my-host_1.example.test"},
      {"*.npmjs.org", Kind::kWildcard, "npmjs.org"},
      {"*.Test", Kind::kWildcard, "test"},
      {"10.0.0.1", Kind::kAddress, "10.0.0.1"},
      {"2001:DB8::1", Kind::kAddress, "2001:db8::1"},
      {"fe80::1", Kind::kAddress, "fe80::1"},
      {"::/64", Kind::kNetwork, "::/64"},  // partly IPv4's forms: those are left out when rendered
      {"10.20.0.0/16", Kind::kNetwork, "10.20.0.0/16"},
      {"10.20.1.5/16", Kind::kNetwork, "10.20.0.0/16"},  // host bits cleared
      {"0.0.0.0/0", Kind::kNetwork, "0.0.0.0/0"},
      {"1.2.3.4/32", Kind::kNetwork, "1.2.3.4/32"},
      {"fd00::1/8", Kind::kNetwork, "fd00::/8"},
      {"2001:db8::/127", Kind::kNetwork, "2001:db8::/127"},
  };
  for (const auto& c : cases) {
    std::string why;
    const auto entry = parse_egress_entry(c.text, why);
    ASSERT_TRUE(entry.has_value()) << c.text << ": " << why;
    EXPECT_EQ(entry->kind, c.kind) << c.text;
    EXPECT_EQ(entry->value, c.value) << c.text;
    EXPECT_EQ(entry->text, c.text);
  }
}

TEST(EgressEntry, MalformedEntriesAreRefusedWithAReason) {
  struct Case {
    std::string text;
    std::string reason;  // part of `why`
  };
  const std::vector<Case> cases = {
      {"http://x", "URL"},
      {"https://pypi.org/simple", "URL"},
      {"*.", "needs a domain"},
      {"*", "'*'"},
      {"*.*.x", "one leading"},
      {"a.*.x", "'*'"},
      {"*x.org", "'*'"},
      {"a..b", "empty label"},
      {".pypi.org", "empty label"},
      {"pypi.org.", "empty label"},
      {"", "empty"},
      {"pypi org", "white space"},
      {" pypi.org", "white space"},
      {"1.2.3.4/33", "from 0 to 32"},
      {"1.2.3.4/", "from 0 to 32"},
      {"1.2.3.4/-1", "from 0 to 32"},
      {"1.2.3.4/8x", "from 0 to 32"},
      {"fd00::/129", "from 0 to 128"},
      {"::1", "IPv6 form of IPv4"},
      {"::", "IPv6 form of IPv4"},
      {"::ffff:10.0.0.1", "IPv6 form of IPv4"},
      {"::ffff:10.0.0.0/120", "IPv6 form of IPv4"},
      {"::/96", "IPv6 form of IPv4"},
      {"1.2.3/8", "not an IP address"},
      {"example.com/8", "not an IP address"},
      {"1.2.3.256", "end in a number"},
      {"10.0.0", "end in a number"},
      {"pypi.org:443", "':'"},
      {"-bad.org", "DNS label"},
      {"bad-.org", "DNS label"},
      {"b%ad.org", "DNS label"},
      {"user@host.org", "DNS label"},
      {std::string(64, 'a') + ".org", "DNS label"},
      {std::string(250, 'a').insert(60, ".").insert(120, ".").insert(180, ".") + ".org", "253"},
  };
  for (const auto& c : cases) {
    std::string why;
    EXPECT_FALSE(parse_egress_entry(c.text, why).has_value()) << "'" << c.text << "' accepted";
    EXPECT_NE(why.find(c.reason), std::string::npos) << "'" << c.text << "': " << why;
  }
}

TEST(EgressPolicyParse, DefaultsAndDuplicates) {
  const auto policy =
      parse_ok(R"({"allow": ["pypi.org", "PyPI.org", "*.npmjs.org", "10.0.0.0/8"]})");
  ASSERT_EQ(policy.allow.size(), 3u);  // the second pypi.org is the same name
  EXPECT_EQ(policy.allow[0].value, "pypi.org");
  EXPECT_EQ(policy.allow[1].kind, Kind::kWildcard);
  EXPECT_EQ(policy.allow[2].kind, Kind::kNetwork);
  EXPECT_EQ(policy.ports, (std::vector<std::uint16_t>{80, 443}));
  EXPECT_EQ(policy.upstream_network, "bridge");

  const auto custom =
      parse_ok(R"({"allow": ["x.test"], "ports": [8080, 443, 8080], "upstream_network": "up-1"})");
  EXPECT_EQ(custom.ports, (std::vector<std::uint16_t>{8080, 443}));
  EXPECT_EQ(custom.upstream_network, "up-1");
}

TEST(EgressPolicyParse, EachBadEntryIsReportedAtItsPointer) {
  const auto problems = problems_of(R"({"allow": ["ok.org", "http://x", 7, "*.", "a..b"]})");
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_EQ(problems[0].pointer, "/egress/allow/1");
  EXPECT_NE(problems[0].message.find("'http://x' is not a host name"), std::string::npos)
      << problems[0].message;
  EXPECT_EQ(problems[1].pointer, "/egress/allow/2");
  EXPECT_EQ(problems[2].pointer, "/egress/allow/3");
  EXPECT_EQ(problems[3].pointer, "/egress/allow/4");
  EXPECT_NE(problems[3].message.find("'a..b'"), std::string::npos);
}

TEST(EgressPolicyParse, ShapeProblems) {
  auto p = problems_of(R"({"ports": [80]})");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].pointer, "/egress");
  EXPECT_NE(p[0].message.find("needs 'allow'"), std::string::npos);

  p = problems_of(R"({"allow": []})");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].pointer, "/egress/allow");
  EXPECT_NE(p[0].message.find("network: none"), std::string::npos);

  p = problems_of(R"({"allow": "pypi.org"})");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].pointer, "/egress/allow");

  p = problems_of(R"({"allow": ["a.org"], "port": [80], "a/b": 1})");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].pointer, "/egress/a~1b");
  EXPECT_EQ(p[1].pointer, "/egress/port");
  EXPECT_NE(p[1].message.find("unknown setting 'port'"), std::string::npos);

  std::vector<sdk::SettingsProblem> problems;
  parse_egress(nlohmann::json::parse(R"(["pypi.org"])"), problems, "/backend/egress");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].pointer, "/backend/egress");
}

TEST(EgressPolicyParse, PortBounds) {
  EXPECT_EQ(parse_ok(R"({"allow": ["a.org"], "ports": [1, 65535]})").ports,
            (std::vector<std::uint16_t>{1, 65535}));
  auto p = problems_of(R"({"allow": ["a.org"], "ports": [0, 65536, -1, "80", 443.5, 443]})");
  ASSERT_EQ(p.size(), 5u);
  for (std::size_t i = 0; i < p.size(); ++i)
    EXPECT_EQ(p[i].pointer, "/egress/ports/" + std::to_string(i));
  EXPECT_NE(p[1].message.find("65536"), std::string::npos);
  EXPECT_EQ(problems_of(R"({"allow": ["a.org"], "ports": []})").size(), 1u);
  EXPECT_EQ(problems_of(R"({"allow": ["a.org"], "ports": 443})").size(), 1u);
}

TEST(EgressPolicyParse, UpstreamNetwork) {
  for (const char* bad : {R"("host")", R"("none")", R"("")", R"("-x")", R"("a b")", "3"}) {
    const auto p =
        problems_of(std::string(R"({"allow": ["a.org"], "upstream_network": )") + bad + "}");
    ASSERT_EQ(p.size(), 1u) << bad;
    EXPECT_EQ(p[0].pointer, "/egress/upstream_network") << bad;
  }
}

TEST(SquidConf, HoldsTheListAsAclsAndRefusesTheRest) {
  const auto policy = parse_ok(
      R"({"allow": ["pypi.org", "*.npmjs.org", "10.20.0.0/16", "fd00::1"], "ports": [443, 8443]})");
  const std::string conf = render_squid_conf(policy, "agent-1");
  EXPECT_TRUE(has_line(conf, "acl egress_ports port 443 8443")) << conf;
  EXPECT_TRUE(has_line(conf, "acl egress_hosts dstdomain -n pypi.org")) << conf;
  EXPECT_TRUE(has_line(conf, R"(acl egress_wildcards dstdom_regex -n -i \.npmjs\.org$)")) << conf;
  EXPECT_TRUE(has_line(conf, "acl egress_addresses dst 10.20.0.0/16")) << conf;
  EXPECT_TRUE(has_line(conf, "acl egress_addresses dst fd00::1/128")) << conf;
  EXPECT_TRUE(has_line(conf, "cache deny all"));
  EXPECT_TRUE(has_line(conf, "http_port 3128"));

  // The order of the access rules: refusals, then one allow per kind of entry, then deny all.
  std::vector<std::string> access;
  for (const auto& line : lines_of(conf))
    if (line.starts_with("http_access ")) access.push_back(line);
  const std::vector<std::string> expected = {
      "http_access deny manager",
      "http_access deny !egress_ports",
      "http_access allow egress_hosts !to_localhost !egress_linklocal",
      "http_access allow egress_wildcards !to_localhost !egress_linklocal",
      "http_access allow egress_addresses !egress_outside !to_localhost !egress_linklocal",
      "http_access deny all"};
  EXPECT_EQ(access, expected);

  // Nothing else can allow: no other allow rule, no acl outside the ones above, no extra port.
  for (const auto& line : lines_of(conf)) {
    if (!line.starts_with("acl ")) continue;
    EXPECT_TRUE(line == "acl egress_linklocal dst 169.254.0.0/16 fe80::/10" ||
                line.starts_with("acl egress_ports ") || line.starts_with("acl egress_hosts ") ||
                line.starts_with("acl egress_wildcards ") ||
                line.starts_with("acl egress_addresses ") ||
                line.starts_with("acl egress_outside "))
        << line;
  }
  EXPECT_EQ(conf.find("npmjs.org "), std::string::npos);  // the bare name is never allowed
  EXPECT_TRUE(has_line(conf, "deny_info 403:ERR_EXECMCP_EGRESS_DENIED all"));
}

std::vector<std::string> acl_values(const std::string& conf, const std::string& acl) {
  std::vector<std::string> out;
  const std::string prefix = "acl " + acl + " dst ";
  for (const auto& line : lines_of(conf))
    if (line.starts_with(prefix)) out.push_back(line.substr(prefix.size()));
  return out;
}

std::vector<std::string> of_family(const std::vector<std::string>& cidrs, bool v6) {
  std::vector<std::string> out;
  for (const auto& c : cidrs)
    if ((c.find(':') != std::string::npos) == v6) out.push_back(c);
  return out;
}

// A CIDR as [first, last] in one 128-bit space, IPv4 mapped into ::ffff:0:0/96 as Squid keeps it.
__extension__ typedef unsigned __int128 Number;
std::pair<Number, Number> span(const std::string& cidr) {
  const std::size_t slash = cidr.find('/');
  const std::string address = cidr.substr(0, slash);
  const int prefix = std::stoi(cidr.substr(slash + 1));
  unsigned char bytes[16] = {};
  Number n = 0;
  int bits = 128;
  if (inet_pton(AF_INET, address.c_str(), bytes) == 1) {
    for (int i = 0; i < 4; ++i) n = (n << 8) | bytes[i];
    n |= Number{0xffff} << 32;
    bits = 32;
  } else {
    EXPECT_EQ(inet_pton(AF_INET6, address.c_str(), bytes), 1) << cidr;
    for (unsigned char b : bytes) n = (n << 8) | b;
  }
  const int host_bits = bits - prefix;
  const Number host = host_bits >= 128 ? ~Number{0} : (Number{1} << host_bits) - 1;
  EXPECT_EQ(n & host, Number{0}) << cidr << " has host bits set";
  return {n, n | host};
}

// The blocks are pairwise disjoint (Squid would drop one of two overlapping entries) and cover
// exactly `expected` addresses.
void expect_disjoint(std::vector<std::string> cidrs, Number expected) {
  std::vector<std::pair<Number, Number>> spans;
  for (const auto& c : cidrs) spans.push_back(span(c));
  std::sort(spans.begin(), spans.end());
  Number total = 0;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (i > 0) {
      EXPECT_GT(spans[i].first, spans[i - 1].second) << "overlapping blocks";
    }
    total += spans[i].second - spans[i].first + 1;
  }
  EXPECT_TRUE(total == expected) << "the blocks do not cover the expected number of addresses";
}

constexpr Number kAll4 = Number{1} << 32;
constexpr Number kMapped6 = Number{2} << 32;  // ::/96 and ::ffff:0:0/96, left to IPv4 entries

TEST(SquidConf, ANameIsAllowedByAddressOnlyWhenNoneOfItsAddressesIsOutside) {
  const std::string conf =
      render_squid_conf(parse_ok(R"({"allow": ["10.20.0.0/16", "10.21.0.1"]})"), "a");
  EXPECT_TRUE(has_line(
      conf, "http_access allow egress_addresses !egress_outside !to_localhost !egress_linklocal"))
      << conf;
  EXPECT_EQ(acl_values(conf, "egress_addresses"),
            (std::vector<std::string>{"10.20.0.0/16", "10.21.0.1/32"}));
  // The exact IPv4 complement of 10.20.0.0/16 + 10.21.0.1/32, and all of IPv6.
  const std::vector<std::string> expected = {
      "0.0.0.0/5",     "8.0.0.0/7",      "10.0.0.0/12",   "10.16.0.0/14",  "10.21.0.0/32",
      "10.21.0.2/31",  "10.21.0.4/30",   "10.21.0.8/29",  "10.21.0.16/28", "10.21.0.32/27",
      "10.21.0.64/26", "10.21.0.128/25", "10.21.1.0/24",  "10.21.2.0/23",  "10.21.4.0/22",
      "10.21.8.0/21",  "10.21.16.0/20",  "10.21.32.0/19", "10.21.64.0/18", "10.21.128.0/17",
      "10.22.0.0/15",  "10.24.0.0/13",   "10.32.0.0/11",  "10.64.0.0/10",  "10.128.0.0/9",
      "11.0.0.0/8",    "12.0.0.0/6",     "16.0.0.0/4",    "32.0.0.0/3",    "64.0.0.0/2",
      "128.0.0.0/1"};
  const auto outside = acl_values(conf, "egress_outside");
  EXPECT_EQ(of_family(outside, false), expected);
  std::vector<std::string> all4 = of_family(outside, false);
  all4.push_back("10.20.0.0/16");
  all4.push_back("10.21.0.1/32");
  expect_disjoint(all4, kAll4);
  expect_disjoint(of_family(outside, true), ~Number{0} - kMapped6 + 1);
  expect_disjoint(outside, ~Number{0} - kMapped6 + 1 + kAll4 - Number{1} - (Number{1} << 16));
}

TEST(SquidConf, AddressAclsNeverOverlapWhateverTheList) {
  // Overlapping and adjacent entries, both families, the edges of each space.
  const std::string conf =
      render_squid_conf(parse_ok(R"({"allow": ["10.0.0.0/8", "10.1.0.0/16", "11.0.0.0/8", "0.0.0.0",
                             "255.255.255.255", "fd00::/8", "fd12::1", "::/64", "::/80",
                             "ffff::/16"]})"),
                        "a");
  const auto allowed = acl_values(conf, "egress_addresses");
  const auto outside = acl_values(conf, "egress_outside");
  // 10/8 and 11/8 join into 10.0.0.0/7; ::/64 allows nothing of IPv4's forms in it.
  EXPECT_EQ(of_family(allowed, false),
            (std::vector<std::string>{"0.0.0.0/32", "10.0.0.0/7", "255.255.255.255/32"}));
  std::vector<std::string> everything = allowed;
  everything.insert(everything.end(), outside.begin(), outside.end());
  expect_disjoint(everything, ~Number{0} - kMapped6 + 1 + kAll4);
  const Number mapped = Number{0xffff} << 32;
  for (const auto& c : of_family(everything, true)) {
    const auto [first, last] = span(c);
    EXPECT_TRUE(first > Number{0xffffffff}) << c << " reaches into ::/96";
    EXPECT_TRUE(last < mapped || first > (mapped | 0xffffffff))
        << c << " reaches into ::ffff:0:0/96";
  }
}

TEST(SquidConf, ZeroPrefixesAreSplitForSquid) {
  // Squid turns 0.0.0.0/0 into `all` (IPv6 too): the renderer never writes it.
  const std::string all =
      render_squid_conf(parse_ok(R"({"allow": ["0.0.0.0/0", "::/0", "10.0.0.0/8"]})"), "a");
  EXPECT_EQ(conf_find(all, "0.0.0.0/0"), false);
  EXPECT_EQ(of_family(acl_values(all, "egress_addresses"), false),
            (std::vector<std::string>{"0.0.0.0/1", "128.0.0.0/1"}));
  EXPECT_TRUE(acl_values(all, "egress_outside").empty());
  EXPECT_TRUE(has_line(all, "http_access allow egress_addresses !to_localhost !egress_linklocal"));

  const std::string v6 = render_squid_conf(parse_ok(R"({"allow": ["fd00::/8"]})"), "a");
  EXPECT_EQ(of_family(acl_values(v6, "egress_outside"), false),
            (std::vector<std::string>{"0.0.0.0/1", "128.0.0.0/1"}));
  EXPECT_EQ(acl_values(v6, "egress_addresses"), (std::vector<std::string>{"fd00::/8"}));
}

TEST(SquidConf, NoNameIsLookedUpBeforeTheNameRules) {
  // Every acl Squid needs a lookup for (dst) stands after a name acl on an allow line, so a
  // refused name is never resolved: it would carry data out through the resolver.
  const std::string conf = render_squid_conf(parse_ok(R"({"allow": ["pypi.org", "*.npmjs.org"]})"),
                                             "a", {"172.30.0.0/24"});
  std::vector<std::string> dst_acls = {"to_localhost"};
  for (const auto& line : lines_of(conf))
    if (line.starts_with("acl ") && line.find(" dst ") != std::string::npos)
      dst_acls.push_back(line.substr(4, line.find(' ', 4) - 4));
  EXPECT_GE(dst_acls.size(), 2u);  // to_localhost and egress_linklocal at least
  for (const auto& line : lines_of(conf)) {
    if (!line.starts_with("http_access ")) continue;
    std::istringstream words(line);
    std::string word, action, first;
    words >> word >> action >> first;
    for (const auto& acl : dst_acls) {
      EXPECT_NE(first, acl) << line;
      EXPECT_NE(first, "!" + acl) << line;
      if (action == "deny") {
        EXPECT_EQ(line.find(acl), std::string::npos) << line;
      }
    }
  }
}

TEST(SquidConf, OnlyKindsInTheListGetAnAllowRule) {
  const std::string conf = render_squid_conf(parse_ok(R"({"allow": ["pypi.org"]})"), "a");
  EXPECT_EQ(conf.find("egress_wildcards"), std::string::npos);
  EXPECT_EQ(conf.find("egress_addresses"), std::string::npos);
  EXPECT_EQ(conf.find("egress_clients"), std::string::npos);
  EXPECT_TRUE(has_line(conf, "acl egress_ports port 80 443"));
}

TEST(SquidConf, ClientNetworksRestrictWhoMayUseTheProxy) {
  const std::string conf =
      render_squid_conf(parse_ok(R"({"allow": ["pypi.org"]})"), "a", {"172.30.0.0/24"});
  EXPECT_TRUE(has_line(conf, "acl egress_clients src 172.30.0.0/24"));
  EXPECT_LT(conf.find("http_access deny !egress_clients"), conf.find("http_access allow"));
  EXPECT_TRUE(has_line(conf, "deny_info 403:ERR_EXECMCP_EGRESS_DENIED egress_clients"));
}

TEST(SquidConf, TheAgentLabelCannotInjectConfiguration) {
  const std::string conf =
      render_squid_conf(parse_ok(R"({"allow": ["pypi.org"]})"), "x\nhttp_access allow all %s");
  EXPECT_FALSE(has_line(conf, "http_access allow all"));
  EXPECT_NE(conf.find("execmcp-egress x_http_access_allow_all__s "), std::string::npos) << conf;
}

TEST(EgressErrorPage, NamesTheHostAndTheList) {
  const auto policy = parse_ok(R"({"allow": ["pypi.org", "*.npmjs.org"], "ports": [443]})");
  const std::string page = render_egress_error_page(policy, "agent-1");
  EXPECT_NE(page.find("%H port %p: not in the egress allow list of agent agent-1"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("Allowed hosts: pypi.org, *.npmjs.org"), std::string::npos);
  EXPECT_NE(page.find("Allowed ports: 443"), std::string::npos);
}

TEST(EgressEnv, TheProxyGetsItsConfigAndTheAgentTheProxy) {
  const auto policy = parse_ok(R"({"allow": ["pypi.org"]})");
  const auto proxy = egress_proxy_env(policy, "agent-1", {"172.30.0.0/24"});
  ASSERT_EQ(proxy.size(), 2u);
  EXPECT_EQ(proxy[0],
            "EXECMCP_EGRESS_CONF=" + render_squid_conf(policy, "agent-1", {"172.30.0.0/24"}));
  EXPECT_EQ(proxy[1], "EXECMCP_EGRESS_ERROR_PAGE=" + render_egress_error_page(policy, "agent-1"));

  const auto agent = egress_client_env("execmcp-egress-x");
  for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
    EXPECT_NE(
        std::find(agent.begin(), agent.end(), std::string(name) + "=http://execmcp-egress-x:3128"),
        agent.end())
        << name;
  EXPECT_NE(std::find(agent.begin(), agent.end(), "NO_PROXY=localhost,127.0.0.1,::1"), agent.end());
  EXPECT_NE(std::find(agent.begin(), agent.end(), "no_proxy=localhost,127.0.0.1,::1"), agent.end());
}

TEST(EgressLog, ReadsTheProxysLines) {
  const auto refused = parse_egress_log_line(
      "execmcp-egress agent-1 1795678550.298 172.19.0.3 GET denied.test 8080 TCP_DENIED 403 "
      "403:ERR_EXECMCP_EGRESS_DENIED -\n");
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->agent, "agent-1");
  EXPECT_EQ(refused->client, "172.19.0.3");
  EXPECT_EQ(refused->method, "GET");
  EXPECT_EQ(refused->host, "denied.test");
  EXPECT_EQ(refused->port, 8080);
  EXPECT_EQ(refused->http_status, 403);
  EXPECT_TRUE(refused->refused);
  EXPECT_EQ(refused->upstream, "");

  const auto tunnel = parse_egress_log_line(
      "execmcp-egress a 1795678550.326 172.19.0.3 CONNECT allowed.test 443 TCP_TUNNEL 200 - "
      "172.18.0.2");
  ASSERT_TRUE(tunnel.has_value());
  EXPECT_FALSE(tunnel->refused);
  EXPECT_EQ(tunnel->squid_status, "TCP_TUNNEL");
  EXPECT_EQ(tunnel->upstream, "172.18.0.2");

  // A refusal that is not the policy's (Squid's own access rules never produce one here, but an
  // error page is not a policy decision).
  const auto dns = parse_egress_log_line(
      "execmcp-egress a 1.0 172.19.0.3 GET gone.test 80 TCP_MISS 503 ERR_DNS_FAIL -");
  ASSERT_TRUE(dns.has_value());
  EXPECT_FALSE(dns->refused);
  EXPECT_EQ(dns->http_status, 503);

  EXPECT_FALSE(parse_egress_log_line("2026/11/26 07:35:45| Starting Squid Cache version 5.7"));
  EXPECT_FALSE(parse_egress_log_line(
      "execmcp-egress a 1.0 1.2.3.4 GET h 99999 TCP_MISS 200 - 1.2.3.4"));  // bad port
  EXPECT_FALSE(parse_egress_log_line("execmcp-egress a 1.0 1.2.3.4 GET h 80 TCP_MISS"));
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
