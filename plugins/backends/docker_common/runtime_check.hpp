// Whether the agent's container can run under the `runtime` setting, from the engine's runtimes.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace execmcp::plugins::docker_common {

// The engine's registered runtimes: name -> the arguments it passes that runtime (runtimeArgs).
using RuntimeList = std::map<std::string, std::vector<std::string>>;

// "" when `runtime` is registered on the engine (`engine` names it for the message) and can give
// the container `network`; else the start error, which lists the engine's runtimes or says why
// the network cannot apply. A runtime given `--network=none` (gVisor's runsc as
// docs/deployment.md registers it) runs every container with loopback only, so any network but
// `none` would be silently offline: refused.
std::string runtime_problem(const std::string& runtime, const RuntimeList& runtimes,
                            const std::string& network, const std::string& engine);

}  // namespace execmcp::plugins::docker_common
