// Checks the `runtime` setting against the runtimes the engine has registered.
#include "docker_common/lifecycle/runtime_check.hpp"

#include "docker_common/engine/engine.hpp"
#include "docker_common/settings/docker_settings.hpp"

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

std::int64_t engine_pids_limit(std::int64_t pids_limit, bool sandbox_counts_tasks) {
  if (!sandbox_counts_tasks || pids_limit <= 0) return pids_limit;
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

std::string check_runtime(Engine& engine, const DockerSettings& settings, RuntimeProfile& profile,
                          const std::function<void(const std::string&)>& log) {
  profile = RuntimeProfile::runc();
  if (settings.runtime.empty()) return {};
  RuntimeList runtimes;
  if (auto err = engine.runtimes(runtimes); !err.ok()) {
    // A socket proxy refuses GET /info (it tells too much about the host). The engine's create
    // still refuses an unknown runtime in its own words; only a network needs the list.
    if (err.kind != EngineError::Kind::kUnreachable && settings.network == "none") {
      profile = RuntimeProfile::unknown();  // it may be gVisor
      log("the engine's runtimes could not be listed (" + err.message + "); runtime '" +
          settings.runtime + "' is checked when the container is created");
      return {};
    }
    return describe_failure(err, "listing the engine's runtimes (to check runtime '" +
                                     settings.runtime + "' with network '" + settings.network +
                                     "')");
  }
  const auto it = runtimes.find(settings.runtime);
  // gVisor checks permissions itself, by mode bits: the ACL a root-owned workspace would get is
  // not honoured there (the workspace access part refuses it); its pids limit counts the
  // sandbox's threads (engine_pids_limit()).
  const bool gvisor = it != runtimes.end() && is_gvisor(it->second);
  profile = gvisor ? RuntimeProfile::gvisor() : RuntimeProfile::runc();
  auto problem = runtime_problem({settings.runtime, settings.network, settings.sudo}, runtimes,
                                 engine.describe());
  if (problem.empty() && gvisor) {
    const auto limit = settings.pids_limit;
    log("runtime '" + settings.runtime + "' is gVisor: " +
        (limit > 0
             ? "pids_limit " + std::to_string(limit) +
                   " is the agent's RLIMIT_NPROC and the engine's limit (which counts "
                   "the sandbox's own tasks) " +
                   std::to_string(engine_pids_limit(limit, profile.pids_limit_is_nproc)) + "; "
             : std::string()) +
        "a command's processes are found by their EXECMCP_TREE mark (no child subreaper); a "
        "running command learns from the engine's events that the container stopped (asks "
        "once a second where there are none)");
  }
  return problem;
}

}  // namespace execmcp::plugins::docker_common
