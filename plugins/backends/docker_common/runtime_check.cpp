// Checks the `runtime` setting against the runtimes the engine has registered.
#include "docker_common/runtime_check.hpp"

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

bool is_gvisor(const RuntimeInfo& runtime) {
  const auto slash = runtime.path.rfind('/');
  const std::string file =
      slash == std::string::npos ? runtime.path : runtime.path.substr(slash + 1);
  return file.starts_with("runsc");
}

std::int64_t engine_pids_limit(std::int64_t pids_limit, bool gvisor) {
  if (!gvisor || pids_limit <= 0) return pids_limit;
  return kGvisorSandboxTasks + pids_limit * kGvisorTasksPerProcess;
}

std::string runtime_problem(const RuntimeUse& use, const RuntimeList& runtimes,
                            const std::string& engine) {
  const auto it = runtimes.find(use.runtime);
  if (it == runtimes.end()) {
    std::string known;
    for (const auto& [name, info] : runtimes) known += (known.empty() ? "" : ", ") + name;
    return "runtime '" + use.runtime + "' is not registered with the engine at " + engine +
           " (its runtimes: " + (known.empty() ? "none listed" : known) +
           "): register it in the engine's config (docs/deployment.md, gVisor) or change "
           "'runtime'";
  }
  if (use.network != "none" && runs_without_network(it->second.args))
    return "runtime '" + use.runtime +
           "' runs with --network=none (its runtimeArgs on the engine at " + engine +
           "): its containers have loopback only, so 'network: " + use.network +
           "' cannot apply; use 'network: none' with it (see docs/deployment.md, gVisor)";
  if (use.sudo && is_gvisor(it->second))
    return "runtime '" + use.runtime +
           "' is gVisor, which starts every process in the container with no_new_privs set "
           "(sudo: \"The 'no new privileges' flag is set\"): 'sudo: true' cannot work there; "
           "remove it, or preinstall what the agent would install with sudo";
  return {};
}

}  // namespace execmcp::plugins::docker_common
