// Whether an object on the engine that holds one of our names is ours: a name alone never decides
// (docs/security.md, Names and ownership). A sandbox removes, starts, stops or uses a container or
// network only when its labels say it is this sandbox's own: execmcp's, the same agent and
// instance, and the same role.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "docker_common/engine/engine.hpp"

namespace execmcp::plugins::docker_common {

// What the labels of one of a sandbox's objects must say. `role` "" is the agent's container (which
// carries kRoleAgent; one made before it did carries no role label).
struct Ownership {
  std::string agent;
  std::string instance;
  std::string role;
};

[[nodiscard]] bool is_own(const std::map<std::string, std::string>& labels, const Ownership& own);

// Why `what` ("container", "egress proxy", "egress network") named `name` is left alone: its
// labels (bounded and escaped) against what they had to say.
[[nodiscard]] std::string not_own_refusal(const std::string& what, const std::string& name,
                                          const std::map<std::string, std::string>& labels,
                                          const Ownership& own);

// Looks `name` up. kNotFound and engine failures come back as they are; a container that is there
// fills `out`, and `refusal` (not_own_refusal() of `what`) is set when its labels are not ours.
EngineError inspect_own(Engine& engine, const std::string& name, const Ownership& ownership,
                        ContainerInfo& out, std::string& refusal,
                        const std::string& what = "container");

// What to act on once inspect_own() found `info` ours: its id, so that a container made under
// `name` since cannot be the one acted on (its name when the engine gave no id).
[[nodiscard]] std::string own_handle(const ContainerInfo& info, const std::string& name);

// Remove or stop the container `name` when it is ours (inspect_own(), then by own_handle()).
// kNotFound when there is none; `refusal` is set, and nothing done, when one is there that is not.
EngineError remove_own(Engine& engine, const std::string& name, const Ownership& ownership,
                       std::string& refusal, const std::string& what = "container");
EngineError stop_own(Engine& engine, const std::string& name, const Ownership& ownership,
                     std::chrono::seconds timeout, std::string& refusal,
                     const std::string& what = "container");

}  // namespace execmcp::plugins::docker_common
