// Granting a user access to a root-owned workspace with POSIX ACLs, for the backends whose
// commands run as another uid than the server: the Docker backends' container user and the local
// sandbox's user.
#pragma once

#include <sys/types.h>

#include <string>

namespace execmcp::plugins::workspace_acl {

// Adds POSIX ACL entries granting `uid` access to `path` and everything below it: rwX when
// `writable`, r-X otherwise, plus the same as a default ACL on directories so new files inherit
// it. Owner, group and existing entries are kept. Symlinks are never followed: the walk goes by
// descriptor (openat with O_NOFOLLOW, xattrs set through /proc/self/fd), so an agent that swaps a
// directory for a symlink while the walk runs cannot steer a grant outside the tree.
// Returns "" or an error message naming the path.
std::string grant_acl_recursive(const std::string& path, uid_t uid, bool writable);

}  // namespace execmcp::plugins::workspace_acl
