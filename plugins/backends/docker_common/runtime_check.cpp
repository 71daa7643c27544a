// Checks the `runtime` setting against the runtimes the engine has registered.
#include "docker_common/runtime_check.hpp"

#include <algorithm>

namespace execmcp::plugins::docker_common {
namespace {

// True when the runtime's arguments switch its network off ("--network=none", "--network none").
bool runs_without_network(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--network=none" || args[i] == "-network=none") return true;
    if ((args[i] == "--network" || args[i] == "-network") && i + 1 < args.size() &&
        args[i + 1] == "none")
      return true;
  }
  return false;
}

}  // namespace

std::string runtime_problem(const std::string& runtime, const RuntimeList& runtimes,
                            const std::string& network, const std::string& engine) {
  const auto it = runtimes.find(runtime);
  if (it == runtimes.end()) {
    std::string known;
    for (const auto& [name, args] : runtimes) known += (known.empty() ? "" : ", ") + name;
    return "runtime '" + runtime + "' is not registered with the engine at " + engine +
           " (its runtimes: " + (known.empty() ? "none listed" : known) +
           "): register it in the engine's config (docs/deployment.md, gVisor) or change "
           "'runtime'";
  }
  if (network != "none" && runs_without_network(it->second))
    return "runtime '" + runtime + "' runs with --network=none (its runtimeArgs on the engine at " +
           engine + "): its containers have loopback only, so 'network: " + network +
           "' cannot apply; use 'network: none' with it (see docs/deployment.md, gVisor)";
  return {};
}

}  // namespace execmcp::plugins::docker_common
