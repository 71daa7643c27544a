// Runs the SDK's backend conformance kit against the docker-api plugin on the real engine, in the
// exec_mode EXECMCP_TEST_EXEC_MODE names.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "execmcp/conformance/backend_conformance.hpp"

#include "test_exec_mode.hpp"

namespace {

const bool registered = [] {
  const char* flag = std::getenv("EXECMCP_DOCKER_TESTS");
  if (flag != nullptr && std::string(flag) == "0") {
    std::fprintf(stderr, "EXECMCP_DOCKER_TESTS=0: SKIPPING the docker-api conformance run\n");
    return false;
  }
  execmcp::conformance::BackendUnderTest backend;
  backend.name = "docker_api";
  backend.factory = execmcp::conformance::plugin_backend_factory(EXECMCP_DOCKER_API_PLUGIN);
  backend.settings_json = execmcp::docker_test::with_test_exec_mode(R"({"pids_limit": 256})");
  return execmcp::conformance::register_backend(std::move(backend));
}();

}  // namespace
