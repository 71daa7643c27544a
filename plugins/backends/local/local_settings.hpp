// The local backend's settings, parsed strictly from the agent config's JSON text.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "docker_common/parts/egress_policy.hpp"

namespace execmcp::plugins::local {

// Where an agent's commands run: on the host as the server's user (none, the default), or through
// execmcp-runner in an OS sandbox of their own (sandbox/sandbox_launcher.hpp).
enum class Isolation { kNone, kSandbox };
enum class SandboxNetworkSetting { kNone, kHost, kEgress };

// The default bound on the sandbox uid's processes: a fork bomb stops there instead of at the
// host's pid_max (a Docker container's default pids_limit is 512; this uid may serve many agents).
inline constexpr std::size_t kDefaultMaxProcesses = 2048;
// The defaults of the sandbox's cgroup, the Docker backends' (`memory` 2g, `pids_limit` 512).
inline constexpr std::int64_t kDefaultSandboxMemory = std::int64_t{2} << 30;
inline constexpr std::int64_t kDefaultSandboxPidsLimit = 512;

struct SandboxSettings {
  SandboxNetworkSetting network = SandboxNetworkSetting::kNone;  // `network`
  // `egress` (with network: egress): the Docker backends' allow list and ports; `secrets`,
  // `upstream_ca` and `upstream_network` are not offered here.
  docker_common::EgressPolicy egress;
  // `sandbox.user`: the uid the sandbox runs as when the server is root (never 0); unset: the
  // workspace's owner when that is not root, else 1000.
  std::optional<uid_t> user;
  int landlock_max_abi = 0;  // `sandbox.landlock_max_abi`: 0 = what the kernel has
  // `sandbox.max_processes`: RLIMIT_NPROC of the sandbox uid's processes on the host (0: none).
  std::size_t max_processes = kDefaultMaxProcesses;
  // The limits of the sandbox's cgroup of its own (sandbox_limits.hpp), named as the Docker
  // backends': `sandbox.memory` ("none": no limit), `sandbox.cpus` (unset: no quota, but each
  // sandbox is one group for the scheduler), `sandbox.pids_limit` (<= 0: none).
  std::optional<std::int64_t> memory_bytes = kDefaultSandboxMemory;
  std::optional<double> cpus;
  std::int64_t pids_limit = kDefaultSandboxPidsLimit;
  // Given in the config: a limit that cannot be applied then stops the agent (a default one is
  // left out and said).
  bool memory_set = false, cpus_set = false, pids_limit_set = false;
};

struct LocalSettings {
  Isolation isolation = Isolation::kNone;
  SandboxSettings sandbox;                 // only with isolation: sandbox
  std::string shell = "/bin/sh";           // runs `<shell> -c <command>`
  std::string command_prefix;              // e.g. "uv run": prepended to every command
  std::string venv_path;                   // absolute, or relative to the agent's cwd
  bool auto_venv = true;                   // use a `.venv` found in the work dir or the agent's cwd
  std::map<std::string, std::string> env;  // extra environment for every command
};

// Throws std::invalid_argument naming the key and what is expected.
LocalSettings parse_local_settings(const std::string& settings_json);

}  // namespace execmcp::plugins::local
