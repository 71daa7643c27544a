// The backend conformance kit: GoogleTest cases that hold any ExecutorBackend to the SDK contract.
//
// Usage, in one .cpp of your test program (linked to execmcp::conformance and GTest::gtest_main):
//
//   execmcp::conformance::BackendUnderTest mine() {
//     execmcp::conformance::BackendUnderTest backend;
//     backend.name = "mine";
//     backend.factory = execmcp::conformance::plugin_backend_factory("/path/execmcp_mine.so");
//     backend.settings_json = R"({"image": "x"})";
//     return backend;
//   }
//   const bool registered = execmcp::conformance::register_backend(mine());
//
// Every registered backend gets the whole suite, named BackendConformance.<Case>/<name>, and the
// cases of each optional interface (BackgroundConformance.<Case>/<name> for execmcp.background/1),
// which are skipped, saying why, when the backend does not offer that interface.
// Workspaces are made under `temp_root` and handed to the backend at their host paths, so a
// sandboxed backend must make them visible at the same path (the house rule for Docker), unless
// it sets `sandbox_workspace` (a backend whose workspace the host cannot see, as docker-swarm's).
// Build the test program with -fsanitize=thread too, now and then: the cases that call a backend
// from several threads at once (start() again while calls run, many commands at once) find a data
// race reliably only there.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::conformance {

// Makes a backend for one test. It may throw; the test then fails with the message.
using BackendFactory =
    std::function<std::unique_ptr<sdk::ExecutorBackend>(const sdk::BackendInit& init)>;

struct BackendUnderTest {
  std::string name;  // test-name suffix: letters, digits and '_'
  BackendFactory factory;
  std::string settings_json = "{}";  // BackendInit::settings_json for every test
  std::string temp_root;             // where workspaces are made; empty: the system temp dir
  // "": the workspace is seen at its host path (by commands, file tools and the cases alike).
  // Else where the sandbox keeps a workspace of its own that the host cannot see (docker-swarm:
  // "/workspace", a volume on a node): BackendInit::sandbox_cwd is set to it, no context path is
  // granted, heartbeat files are read through the backend's read_file, and the cases that need
  // the host's own view of the workspace or a context path are skipped, saying so.
  std::string sandbox_workspace;
  // How much longer than asked a kill (timeout, cancel, stop) may take to come back. Generous on
  // purpose: this checks behaviour, timing targets belong in benchmarks.
  std::chrono::seconds slack{20};
};

// How GoogleTest prints a test's parameter (ctest lists it beside each case): its name, not the
// object's bytes.
inline void PrintTo(const BackendUnderTest& backend, std::ostream* out) {
  *out << backend.name;
}

// Registers a backend for the suite. Call before testing::InitGoogleTest(), e.g. from a static
// initializer as above. Returns true so it can initialize a static.
bool register_backend(BackendUnderTest backend);

// A factory that loads a backend plugin (built with EXECMCP_BACKEND_PLUGIN) through Boost.DLL,
// checks its descriptor, and keeps the library loaded for as long as any backend made from it.
BackendFactory plugin_backend_factory(const std::string& library_path);

}  // namespace execmcp::conformance
