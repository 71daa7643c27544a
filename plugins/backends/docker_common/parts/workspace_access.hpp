// Which user the container runs as, and granting that user access to a root-owned workspace; and
// the part that does both at a managed container's start.
#pragma once

#include <sys/types.h>

#include <mutex>
#include <string>

#include "docker_common/lifecycle/container_part.hpp"

namespace execmcp::plugins::docker_common {

// The runtime image's non-root user (execmcp, uid/gid 1000).
inline constexpr uid_t kImageUid = 1000;
inline constexpr gid_t kImageGid = 1000;

struct UserChoice {
  std::string user;        // for Config.User and exec User: "uid:gid" or the configured value
  bool grant_acl = false;  // the workspace needs an ACL for kImageUid
  std::string reason;      // one line, for the log
};

// Policy (see docs/docker-backend.md): a configured user wins (root is refused earlier); else the
// workspace owner's uid:gid when that is not root, so files the agent writes belong to the user;
// else the image user 1000 plus an ACL on the workspace. Throws std::runtime_error when the
// workspace cannot be stat'ed.
UserChoice choose_container_user(const std::string& configured_user, const std::string& workspace);

// The ACL grant itself: workspace_acl::grant_acl_recursive() (libs/workspace_acl).

class ContainerLifecycle;

// Workspace access as a part of a managed container's lifecycle: at start (and again at a
// recovery, until it was done once) the container user is chosen (choose_container_user()) and,
// when the workspace belongs to root, given an ACL on every grant; refused where the runtime does
// not honour ACLs (RuntimeProfile::honours_acls) and the workspace is not open to everyone.
class WorkspaceAccessPart final : public ContainerPart {
 public:
  explicit WorkspaceAccessPart(ContainerLifecycle& lifecycle) : lifecycle_(lifecycle) {}

  std::string prepare_start() override { return grant(); }
  PartStep before_recover(sdk::LogLevel /*level*/) override {
    if (auto err = grant(); !err.empty()) return PartStep::fail(std::move(err));
    return PartStep::next();
  }

 private:
  // "" once the user is chosen and the access granted (once per process), else why not.
  std::string grant();

  ContainerLifecycle& lifecycle_;
  std::mutex mutex_;  // guards granted_; held while granting
  bool granted_ = false;
};

}  // namespace execmcp::plugins::docker_common
