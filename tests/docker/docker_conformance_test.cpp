// Runs the SDK's backend conformance kit on the real engine against the Docker backend, exec_mode
// and extra settings that test_backend.hpp's variables name (docker-api or docker-cli; over SSH or
// with Podman too).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "execmcp/conformance/backend_conformance.hpp"

#include "test_backend.hpp"

namespace {

namespace dt = execmcp::docker_test;

// True when EXECMCP_TEST_RUNTIME names a runtime the engine does not list (`docker info`).
bool runtime_missing(const std::string& runtime) {
  const std::string command = dt::outside_cli() + " info --format '{{json .Runtimes}}' 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return true;
  std::string out;
  char buf[4096];
  while (const std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  ::pclose(pipe);
  return out.find("\"" + runtime + "\"") == std::string::npos;
}

const bool registered = [] {
  const char* flag = std::getenv("EXECMCP_DOCKER_TESTS");
  if (flag != nullptr && std::string(flag) == "0") {
    std::fprintf(stderr, "EXECMCP_DOCKER_TESTS=0: SKIPPING the Docker conformance run\n");
    return false;
  }
  if (const auto runtime = dt::test_runtime(); !runtime.empty() && runtime_missing(runtime)) {
    std::fprintf(stderr,
                 "EXECMCP_TEST_RUNTIME=%s: the engine has no such runtime; SKIPPING the Docker "
                 "conformance run (scripts/docker-engine.sh reload registers runsc)\n",
                 runtime.c_str());
    return false;
  }
  execmcp::conformance::BackendUnderTest backend;
  backend.name = dt::test_backend() == "docker-api" ? "docker_api" : "docker_cli";
  backend.factory = execmcp::conformance::plugin_backend_factory(dt::test_plugin_path());
  backend.settings_json = execmcp::docker_test::with_test_settings(R"({"pids_limit": 256})");
  // Where every engine call is slow (one SSH handshake per docker CLI run), kills and starts get
  // more time to come back.
  if (const char* slack = std::getenv("EXECMCP_TEST_SLACK_SECONDS"); slack != nullptr)
    backend.slack = std::chrono::seconds(std::atoi(slack));
  return execmcp::conformance::register_backend(std::move(backend));
}();

}  // namespace
