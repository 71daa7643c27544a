// The one thread of the process that forks sandboxes. bwrap's --die-with-parent ties a sandbox
// to the *thread* that forked it (PR_SET_PDEATHSIG fires when that thread exits), so a sandbox
// forked from a request's thread would die with the request. The spawner lives until the library
// is unloaded (or the process exits), which is when the sandboxes should go.
#pragma once

#include <sys/types.h>

#include <functional>

namespace execmcp::plugins::local::sandbox {

// Runs `fork_child` (which forks and returns the child's pid, or -1 with errno) on the spawner
// thread and returns what it returned, errno included. In a process forked from the one that
// made the spawner (its thread did not come along), it runs on the calling thread.
pid_t fork_on_spawner_thread(const std::function<pid_t()>& fork_child);

}  // namespace execmcp::plugins::local::sandbox
