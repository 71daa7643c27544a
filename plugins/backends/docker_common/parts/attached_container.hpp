// Attach mode (`container: NAME`): the checks that make a container execmcp does not manage safe
// to run an agent's commands in: who runs them, and whether every path grant is visible there at
// its own path with the access the config gives it; and the part that puts them into the
// container's lifecycle.
#pragma once

#include <string>
#include <vector>

#include "docker_common/engine/engine.hpp"
#include "docker_common/lifecycle/container_part.hpp"
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

class ContainerLifecycle;
class ProtectedPathsPart;

// Attach mode as a part: start() checks the container (running, its user, its mounts, the
// protected paths) and never makes anything; a recovery only looks; every call gets the `env`
// setting (a container we create has it in its config). Once started, after_start() asks the
// container whether the chosen user is root there.
class AttachedContainerPart final : public ContainerPart {
 public:
  AttachedContainerPart(ContainerLifecycle& lifecycle, ProtectedPathsPart& protected_paths)
      : lifecycle_(lifecycle), protected_paths_(protected_paths) {}

  PartStep on_start() override;
  std::string after_start(ContainerProbe& probe) override;
  PartStep before_recover(sdk::LogLevel level) override;
  void add_call_env(std::vector<std::string>& env) const override;

 private:
  ContainerLifecycle& lifecycle_;
  ProtectedPathsPart& protected_paths_;
};

// The attached container's check that its user is not root: prints "uid=N" for the exec's user.
inline constexpr const char* kAttachedUidProbe =
    "while read -r k v r; do [ \"$k\" = Uid: ] && echo \"uid=$v\" && break; done "
    "< /proc/self/status";

}  // namespace execmcp::plugins::docker_common
