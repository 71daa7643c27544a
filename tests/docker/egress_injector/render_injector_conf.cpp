// Renders the squid.conf of an egress proxy whose agent has secrets, for injector_test.sh: the
// backend's render_squid_conf with render_secret_squid_lines put where that function's header
// says (before the access_log line), so the proxy the test starts runs the lines under test.
//   render_injector_conf EGRESS_JSON AGENT_LABEL OUT_CONF OUT_PAGE SECRET_HOSTS CLIENT_CIDR...
// SECRET_HOSTS is comma-separated. Exit 2 when EGRESS_JSON is not a valid `egress` setting.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "docker_common/parts/egress_policy.hpp"
#include "docker_common/parts/egress_secret_squid.hpp"

int main(int argc, char** argv) {
  namespace dc = execmcp::plugins::docker_common;
  if (argc < 6) {
    std::cerr << "usage: render_injector_conf EGRESS_JSON AGENT_LABEL OUT_CONF OUT_PAGE "
                 "SECRET_HOSTS [CLIENT_CIDR...]\n";
    return 2;
  }
  std::vector<execmcp::sdk::SettingsProblem> problems;
  const auto policy = dc::parse_egress(nlohmann::json::parse(argv[1]), problems);
  for (const auto& p : problems) std::cerr << p.pointer << ": " << p.message << '\n';
  if (!problems.empty()) return 2;
  std::vector<std::string> hosts;
  std::istringstream list(argv[5]);
  for (std::string host; std::getline(list, host, ',');) hosts.push_back(host);
  const std::vector<std::string> clients(argv + 6, argv + argc);
  std::string conf = dc::render_squid_conf(policy, argv[2], clients);
  const auto at = conf.find("\naccess_log ");
  if (at == std::string::npos) {
    std::cerr << "render_injector_conf: no access_log line in the rendered configuration\n";
    return 1;
  }
  conf.insert(at + 1, dc::render_secret_squid_lines(hosts));
  std::ofstream(argv[3]) << conf;
  std::ofstream(argv[4]) << dc::render_egress_error_page(policy, argv[2]);
  return 0;
}
