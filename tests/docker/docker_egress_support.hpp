// What the `network: egress` suites share (docker_egress_test.cpp, docker_egress_bypass_test.cpp):
// a backend whose policy allows `allow` through `upstream`, the test's own upstream network.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "docker_test_support.hpp"

namespace execmcp::docker_test {

inline std::unique_ptr<ExecutorBackend> egress_backend(const std::string& agent,
                                                       const std::string& workspace,
                                                       const std::string& upstream,
                                                       const std::vector<std::string>& allow,
                                                       std::string* error) {
  BackendInit init;
  init.agent_id = agent;
  init.cwd = workspace;
  init.paths = {{workspace, true}};
  init.settings_json =
      nlohmann::json{{"network", "egress"},
                     {"egress", {{"allow", allow}, {"upstream_network", upstream}}}}
          .dump();
  return make_backend(init, error);
}

}  // namespace execmcp::docker_test
