// Which user the container runs as, and granting that user access to a root-owned workspace.
#pragma once

#include <sys/types.h>
#include <string>

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

// Adds POSIX ACL entries granting `uid` access to `path` and everything below it: rwX when
// `writable`, r-X otherwise, plus the same as a default ACL on directories so new files inherit
// it. Owner, group and existing entries are kept. Symlinks are never followed: the walk goes by
// descriptor (openat with O_NOFOLLOW, xattrs set through /proc/self/fd), so an agent that swaps a
// directory for a symlink while the walk runs cannot steer a grant outside the tree.
// Returns "" or an error message naming the path.
std::string grant_acl_recursive(const std::string& path, uid_t uid, bool writable);

}  // namespace execmcp::plugins::docker_common
