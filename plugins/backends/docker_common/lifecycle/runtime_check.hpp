// Whether the agent's container can run under the `runtime` setting, from the engine's runtimes.
#pragma once

#include <cstdint>
#include <functional>
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

// What the container's runtime means for the backend, as behaviours rather than a name: chosen
// once at start from the engine's runtimes (check_runtime(), below) and read by the
// spec, the workspace access and the command paths.
struct RuntimeProfile {
  // The sandbox's own kernel runs its tasks as host tasks, which the engine's pids limit counts:
  // the agent's limit is RLIMIT_NPROC (counted by that kernel) and the engine's one is scaled
  // (engine_pids_limit()).
  bool pids_limit_is_nproc = false;
  // A process whose sandbox ended comes back with exit code 128, which is not the command's.
  bool exit_128_means_sandbox_ended = false;
  // An exec may outlive its container (the engine keeps its stream open once PID 1 exits), so a
  // running command looks now and then whether the container still runs (StopCheck).
  bool execs_outlive_container = false;
  // POSIX ACLs on bind mounts are honoured (gVisor checks mode bits only).
  bool honours_acls = true;
  // The memory and pids limits bound the whole sandbox: a command never meets them alone (no
  // memory cgroup of its own to read inside), the container ends and is said to have (why and
  // what to do: exec_command_path.cpp, why_stopped()).
  bool limits_end_the_sandbox = false;

  // The one rule for what an exit code means here: true when `exit_code` is not the command's
  // own but its sandbox's end (128 where exit_128_means_sandbox_ended).
  [[nodiscard]] bool exit_is_sandbox_end(int exit_code) const {
    return exit_128_means_sandbox_ended && exit_code == 128;
  }
  // True when a command that ended with `exit_code` was ended from outside, as far as the code
  // tells: a signal (137 SIGKILL, 143 SIGTERM, < 0 unknown), or its sandbox's end.
  [[nodiscard]] bool ended_from_outside(int exit_code) const {
    return exit_code == 137 || exit_code == 143 || exit_code < 0 || exit_is_sandbox_end(exit_code);
  }

  static RuntimeProfile runc() { return {}; }
  static RuntimeProfile gvisor() { return {true, true, true, false, true}; }
  // A runtime the engine would not list (a socket proxy refuses GET /info): it may be gVisor, so
  // a running command watches its container; everything else as runc.
  static RuntimeProfile unknown() {
    RuntimeProfile p;
    p.execs_outlive_container = true;
    return p;
  }
};

// The engine's PidsLimit for a container whose agent may hold `pids_limit` processes (<= 0: no
// limit). Under gVisor the engine's limit counts the sandbox's own host tasks, not the agent's
// processes: an idle sandbox holds about 170 (the Sentry's and the Gofer's threads) and each
// process of the agent adds a few more (its address space's stub and threads; runsc 0.0~20221219,
// ptrace platform). At the agent's own limit the sandbox cannot make a thread and panics ("error
// initializing first thread: resource temporarily unavailable"), which ends the container; so
// the limit is scaled: kGvisorTasksPerProcess per process over kGvisorSandboxTasks, and the
// agent's own limit becomes RLIMIT_NPROC, which gVisor's kernel counts per sandbox
// (ContainerSpec::nproc_limit). That holds an ordinary workload, not a fork bomb: the ptrace
// platform gives each process a host stub with two host threads per Sentry thread that has run
// it, kept for the sandbox's life, and the Sentry has a thread per process running at once; so a
// bomb at 64 processes makes about 1,000 host tasks in 5 s and 1,700 in 40 s, growing towards
// 64 x 2 x 140. No limit that still guards the host holds that: the sandbox ends at this one
// (the Sentry exits 2) or at its memory limit, and the next call starts it again
// (docs/docker-backend.md, gVisor).
inline constexpr std::int64_t kGvisorSandboxTasks = 256;
inline constexpr std::int64_t kGvisorTasksPerProcess = 8;
// `sandbox_counts_tasks`: RuntimeProfile::pids_limit_is_nproc.
std::int64_t engine_pids_limit(std::int64_t pids_limit, bool sandbox_counts_tasks);

// What the backend is about to ask of the runtime.
struct RuntimeUse {
  std::string runtime;  // the `runtime` setting
  std::string network;  // the `network` setting
  bool sudo = false;    // sudo: true
};

// "" when `use.runtime` is registered on the engine (`engine` names it for the message) and can
// run the container as configured; else the start error, which lists the engine's runtimes or says
// why not:
// - a runtime given `--network=none` (runsc as docs/deployment.md registers it) runs every
//   container with loopback only, so any network but `none` would be silently offline;
// - gVisor sets no_new_privs on every process started in the container, so `sudo: true` cannot
//   work there either.
std::string runtime_problem(const RuntimeUse& use, const RuntimeList& runtimes,
                            const std::string& engine);

class Engine;           // engine.hpp
struct DockerSettings;  // docker_settings.hpp

// The `runtime` setting checked against the engine's runtimes at start (one engine call; none
// without the setting): its profile in `profile`, and "" or the start error (runtime_problem(),
// or why the runtimes could not be listed where a network needs them). `log` is told what a
// runtime other than runc means for the agent.
std::string check_runtime(Engine& engine, const DockerSettings& settings, RuntimeProfile& profile,
                          const std::function<void(const std::string&)>& log);

}  // namespace execmcp::plugins::docker_common
