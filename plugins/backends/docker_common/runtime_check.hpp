// Whether the agent's container can run under the `runtime` setting, from the engine's runtimes.
#pragma once

#include <cstdint>
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
std::int64_t engine_pids_limit(std::int64_t pids_limit, bool gvisor);

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

}  // namespace execmcp::plugins::docker_common
