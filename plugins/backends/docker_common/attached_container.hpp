// Attach mode (`container: NAME`): the checks that make a container execmcp does not manage safe
// to run an agent's commands in: who runs them, and whether every path grant is visible there at
// its own path with the access the config gives it.
#pragma once

#include <string>
#include <vector>

#include "docker_common/engine.hpp"
#include "execmcp/sdk/types.hpp"

namespace execmcp::plugins::docker_common {

// The error of every call while the attached container is stopped or gone.
std::string attached_not_running(const std::string& container);

// The exec user: `configured` when set, else the container's own `container_user` (its
// Config.User) unless that is root or empty (= root). "" and `error` when neither may be used.
std::string attached_user(const std::string& container, const std::string& configured,
                          const std::string& container_user, std::string& error);

// "" when every grant is visible in the container at the same path through a bind mount of that
// path or of a parent (the deepest mount covering it decides), the mount writable exactly when the
// grant is; a read-only grant mounted writable passes only with `accept_writable`. Else why not,
// naming the path and the fix.
std::string check_attached_mounts(const std::string& container,
                                  const std::vector<sdk::PathGrant>& grants,
                                  const std::vector<ContainerMount>& mounts, bool accept_writable);

}  // namespace execmcp::plugins::docker_common
