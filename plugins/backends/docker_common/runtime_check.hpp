// Whether the agent's container can run under the `runtime` setting, from the engine's runtimes.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace execmcp::plugins::docker_common {

// One runtime the engine has registered: its program and the arguments the engine passes it.
struct RuntimeInfo {
  std::string path;               // "runc", "/usr/bin/runsc"
  std::vector<std::string> args;  // runtimeArgs
};

// The engine's registered runtimes by name.
using RuntimeList = std::map<std::string, RuntimeInfo>;

// True when the runtime's program is gVisor's runsc (by its file name).
bool is_gvisor(const RuntimeInfo& runtime);

// What the backend is about to ask of the runtime.
struct RuntimeUse {
  std::string runtime;      // the `runtime` setting
  std::string network;      // the `network` setting
  bool agent_mode = false;  // exec_mode: agent (execmcp-runner)
  bool sudo = false;        // sudo: true
};

// "" when `use.runtime` is registered on the engine (`engine` names it for the message) and can
// run the container as configured; else the start error, which lists the engine's runtimes or says
// why not:
// - a runtime given `--network=none` (runsc as docs/deployment.md registers it) runs every
//   container with loopback only, so any network but `none` would be silently offline;
// - gVisor (runsc 0.0~20221219, Debian 12's) refuses PR_SET_CHILD_SUBREAPER, which
//   execmcp-runner needs to kill a command's whole tree: exec_mode agent cannot work there;
// - gVisor sets no_new_privs on every process started in the container, so `sudo: true` cannot
//   work there either.
std::string runtime_problem(const RuntimeUse& use, const RuntimeList& runtimes,
                            const std::string& engine);

}  // namespace execmcp::plugins::docker_common
