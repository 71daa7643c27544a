// Runs the SDK's backend conformance kit against the built `local` plugin, loaded via Boost.DLL:
// on the host (`isolation: none`) and in its OS sandbox (`isolation: sandbox`, Landlock capped at
// ABI 2, Debian 12's stock kernel). The sandbox's cases are registered only where this machine can
// give every layer; with EXECMCP_REQUIRE_SANDBOX=1 (CI) a machine that cannot fails instead.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "execmcp/conformance/backend_conformance.hpp"
#include "sandbox_launcher.hpp"

namespace {

execmcp::conformance::BackendUnderTest local_backend(const std::string& name,
                                                     const std::string& settings) {
  execmcp::conformance::BackendUnderTest backend;
  backend.name = name;
  backend.factory = execmcp::conformance::plugin_backend_factory(EXECMCP_LOCAL_PLUGIN_PATH);
  backend.settings_json = settings;
  return backend;
}

bool register_sandbox() {
  const auto support = execmcp::plugins::local::sandbox::check_sandbox_support();
  const char* require = std::getenv("EXECMCP_REQUIRE_SANDBOX");
  if (!support.problem.empty() && (require == nullptr || std::string(require) != "1")) {
    std::fprintf(stderr, "local_sandbox conformance cases skipped: %s\n", support.problem.c_str());
    return false;
  }
  // Where the problem is real and required, start() says so in every case: they fail.
  return execmcp::conformance::register_backend(local_backend(
      "local_sandbox", R"({"isolation": "sandbox", "sandbox": {"landlock_max_abi": 2}})"));
}

const bool kRegistered = execmcp::conformance::register_backend(local_backend("local", "{}"));
const bool kSandboxRegistered = register_sandbox();

}  // namespace
