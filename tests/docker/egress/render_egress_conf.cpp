// Renders an egress proxy's squid.conf and refusal page with the backend's own code, for the
// real-engine test (egress_proxy_test.sh): the proxy it starts runs exactly what a backend renders.
//   render_egress_conf EGRESS_JSON AGENT_LABEL OUT_CONF OUT_PAGE [CLIENT_CIDR...]
//   render_egress_conf --read-log < LOG   one line per access record: host port status refused|-
// Exit 2 with one line per problem when EGRESS_JSON is not a valid `egress` setting.
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "docker_common/parts/egress_policy.hpp"

int main(int argc, char** argv) {
  namespace dc = execmcp::plugins::docker_common;
  if (argc == 2 && std::string(argv[1]) == "--read-log") {
    for (std::string line; std::getline(std::cin, line);)
      if (const auto r = dc::parse_egress_log_line(line))
        std::cout << r->host << ' ' << r->port << ' ' << r->http_status << ' '
                  << (r->refused ? "refused" : "-") << '\n';
    return 0;
  }
  if (argc < 5) {
    std::cerr << "usage: render_egress_conf EGRESS_JSON AGENT_LABEL OUT_CONF OUT_PAGE "
                 "[CLIENT_CIDR...]\n";
    return 2;
  }
  std::vector<execmcp::sdk::SettingsProblem> problems;
  const auto policy = dc::parse_egress(nlohmann::json::parse(argv[1]), problems);
  for (const auto& p : problems) std::cerr << p.pointer << ": " << p.message << '\n';
  if (!problems.empty()) return 2;
  const std::vector<std::string> clients(argv + 5, argv + argc);
  std::ofstream(argv[3]) << dc::render_squid_conf(policy, argv[2], clients);
  std::ofstream(argv[4]) << dc::render_egress_error_page(policy, argv[2]);
  return 0;
}
