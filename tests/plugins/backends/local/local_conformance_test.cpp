// Runs the SDK's backend conformance kit against the built `local` plugin, loaded via Boost.DLL.
#include "execmcp/conformance/backend_conformance.hpp"

namespace {

execmcp::conformance::BackendUnderTest local_backend() {
  execmcp::conformance::BackendUnderTest backend;
  backend.name = "local";
  backend.factory = execmcp::conformance::plugin_backend_factory(EXECMCP_LOCAL_PLUGIN_PATH);
  backend.settings_json = "{}";
  return backend;
}

const bool kRegistered = execmcp::conformance::register_backend(local_backend());

}  // namespace
