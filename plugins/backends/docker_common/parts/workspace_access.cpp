// POSIX ACLs written directly through the system.posix_acl_* xattrs (no libacl needed), and the
// container-user policy, and the part that applies them at a container's start.
#include "docker_common/parts/workspace_access.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "workspace_acl/workspace_acl.hpp"

namespace execmcp::plugins::docker_common {

UserChoice choose_container_user(const std::string& configured_user, const std::string& workspace) {
  if (!configured_user.empty()) return {configured_user, false, "configured user"};
  struct stat st {};
  if (stat(workspace.c_str(), &st) != 0)
    throw std::runtime_error("cannot stat workspace '" + workspace + "': " + std::strerror(errno));
  if (st.st_uid != 0)
    return {std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid), false,
            "the workspace owner (files the agent writes stay the user's)"};
  return {std::to_string(kImageUid) + ":" + std::to_string(kImageGid), true,
          "the image user 1000 (the workspace belongs to root, which the container never is)"};
}

std::string WorkspaceAccessPart::grant() {
  const auto init = lifecycle_.init();
  const auto& settings = lifecycle_.settings();
  std::lock_guard lock(mutex_);
  if (granted_) return {};
  UserChoice user;
  try {
    user = choose_container_user(settings.user, init->cwd);
  } catch (const std::exception& e) {
    return e.what();
  }
  lifecycle_.set_user(user);
  if (!user.grant_acl) {
    granted_ = true;
    return {};
  }
  // Mode bits that let anyone write (a shared scratch dir, mode 777) need no ACL there.
  struct stat st {};
  const bool others_write = ::stat(init->cwd.c_str(), &st) == 0 &&
                            (st.st_mode & (S_IWOTH | S_IXOTH)) == (S_IWOTH | S_IXOTH);
  if (!lifecycle_.runtime().honours_acls && !others_write)
    return "runtime '" + settings.runtime +
           "' is gVisor, which does not honour POSIX ACLs: the container user (uid 1000) could "
           "not write the root-owned workspace '" +
           init->cwd +
           "'; make the workspace (and writable grants) owned by a non-root user, whom the "
           "container then runs as (see docs/docker-backend.md, gVisor)";
  // The container runs as uid 1000 while the files belong to root: grant 1000 an ACL (rwX on
  // writable grants, r-X on read-only ones) instead of changing anyone's ownership.
  for (const auto& grant : init->paths) {
    if (auto err = workspace_acl::grant_acl_recursive(grant.path, kImageUid, grant.writable);
        !err.empty())
      return "cannot give the container user (uid 1000) access to '" + grant.path + "': " + err +
             "; set the backend's 'user' setting or make the workspace owned by a non-root user";
  }
  if (!init->temp_workspace.empty())
    workspace_acl::grant_acl_recursive(init->temp_workspace, kImageUid, false);
  granted_ = true;
  return {};
}

}  // namespace execmcp::plugins::docker_common
