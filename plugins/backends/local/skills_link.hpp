// MassGen's local skills: <cwd>/.agent/skills, a symlink to the skills dir, made at start by the
// local backend whichever way it runs commands (the sandbox shows the skills dir at its host path).
#pragma once

#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::plugins::local {

// <cwd>/.agent/skills -> init.skills_dir, when there is one; never through a symlink the agent
// made. A failure is logged, not returned: it is no reason to refuse the agent.
void link_skills(const sdk::BackendInit& init);

}  // namespace execmcp::plugins::local
