// The local sandbox's resource limits as the settings ask for them and this machine gives them:
// what each sandbox's cgroup of its own gets (sandbox/cgroup_limits.hpp), what the start log and
// check-config say about it, and the notice of a command the memory limit ended. A limit given in
// the config that cannot be applied stops the agent (fail closed); a default one is left out, and
// that is said, never silent.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "cgroup_limits.hpp"
#include "local_settings.hpp"

namespace execmcp::plugins::local {

struct LimitsPlan {
  sandbox::CgroupLimits limits;  // what each sandbox's cgroup gets (no controller: no cgroup)
  bool required = false;         // a limit given in the config: a cgroup that fails is an error
  // A limit given in the config that this machine cannot apply: which, why, and how to get it.
  std::string error;
  // The default limits left out, why and how to get them (the start log, check-config).
  std::string warning;
  // "memory 2048 MiB, pids 512, CPU shared with other sandboxes (cgroup v1)", or "none".
  std::string summary;
};

LimitsPlan plan_limits(const SandboxSettings& settings,
                       const sandbox::CgroupAvailability& available);

// The name of a sandbox's cgroup: execmcp-<agent>-<instance (the server's pid when none)>-<n>,
// n counting the sandboxes this process made. The instance of a per-user sandbox holds its user's
// key, encoded one-to-one by the host; a random part of it is the server's own, so no tenant's
// key gives another's name.
std::string sandbox_cgroup_name(const std::string& agent_id, const std::string& instance_id);
// Once per agent id and process: removes the empty cgroups a killed server of this naming left.
void remove_leftover_sandbox_cgroups(const std::string& agent_id);

// The cgroup of one new sandbox, per `plan`. Null with `error` and `warning` empty when the plan
// has no limits; null with `error` when a required limit cannot be applied; null with `warning`
// when only defaults could not be (the sandbox then runs without them).
std::shared_ptr<sandbox::SandboxCgroup> make_sandbox_cgroup(const LimitsPlan& plan,
                                                            const std::string& name,
                                                            std::string& error,
                                                            std::string& warning);

// The notice of a command the kernel's OOM killer ended in the sandbox's cgroup (the Docker
// backends' words).
std::string memory_limit_notice(const std::optional<std::int64_t>& memory_bytes);

}  // namespace execmcp::plugins::local
