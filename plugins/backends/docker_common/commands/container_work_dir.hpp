// A command's work_dir resolved as the container sees it, without leaving the agent's grants.
#pragma once

#include <string>

#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::plugins::docker_common {

struct ContainerWorkDir {
  std::string path;   // in the commands' view, every symlink resolved; empty when refused
  std::string error;  // "work_dir refused: ...": names only the request, in the commands' view
};

// Resolves `requested` (absolute in the commands' view, or relative to the agent's cwd there;
// ".." removes the component written before it) one component at a time, in the commands' view:
// each component inside a grant (init.paths, where container_path() says commands see it) is
// looked at on the host with lstat, never followed there; a symlink's target is read and taken
// as commands would (absolute: in their view; relative: beside the link), and a component that
// leaves every grant is never looked at. So what lies outside the grants, on the host or in
// another user's workspace, can change neither the answer nor its message: every refusal (missing,
// not a directory, a link out, a loop) is one sentence naming the requested path as commands see
// it, and no host path. The directories above a grant's mount point are passed through (they hold
// the mount), but are no answer themselves.
ContainerWorkDir resolve_container_work_dir(const sdk::BackendInit& init,
                                            const std::string& requested);

}  // namespace execmcp::plugins::docker_common
