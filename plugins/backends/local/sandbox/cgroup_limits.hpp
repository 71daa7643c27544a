// Resource limits of one local sandbox: a cgroup of its own (memory, pids, cpu), made under the
// server's own cgroup in each hierarchy that holds those controllers (cgroup v1: one directory per
// hierarchy; v2: one in the unified tree), joined by the sandbox's first process before it runs
// anything (it writes "0" to the cgroup.procs descriptors opened here), and removed once its
// processes are gone. Only directories this module made are ever written to or removed; a name
// identifies the server instance and the sandbox, so no other sandbox's (or tenant's) name can
// produce it.
//
// cgroup v2 and the no-internal-process rule: a cgroup with processes (the server's) cannot hand
// memory or pids to its children. When the server's cgroup holds only the server and its own
// descendants, they move into a leaf of their own (execmcp-server-<pid>) first, and the
// controllers are then enabled in the server's cgroup's cgroup.subtree_control (systemd's
// Delegate=yes gives a service such a cgroup). Otherwise a v2 machine cannot give limits here,
// and the probe says so.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace execmcp::plugins::local::sandbox {

enum class CgroupController { kMemory, kPids, kCpu };
const char* controller_name(CgroupController controller);

struct CgroupLimits {
  std::optional<std::int64_t> memory_bytes;  // memory.max / memory.limit_in_bytes (no swap past it)
  std::optional<std::int64_t> pids;          // pids.max
  std::optional<double> cpus;                // cpu.max / cfs_quota_us, per 100 ms period
  // Join the cpu controller without a quota: each sandbox is then one group for the scheduler,
  // which shares the CPU between sandboxes, not between their processes.
  bool cpu_share = false;
  // The controllers these limits need, in a fixed order.
  [[nodiscard]] std::vector<CgroupController> controllers() const;
};

// What this server can have, controller by controller (read from /proc/self/cgroup, mountinfo
// and the cgroup files; nothing is made). EXECMCP_CGROUP_MOUNTINFO (tests only) names another
// mountinfo file to read (one without cgroup mounts: a machine without cgroups).
struct CgroupAvailability {
  std::string version;  // "v1", "v2", "v1+v2" (the controllers' hierarchies), "" when none
  // Per controller: "" when this server can make cgroups with it, else why not and how to get it.
  std::map<CgroupController, std::string> problems;
  [[nodiscard]] std::string problem(CgroupController controller) const;
};
CgroupAvailability probe_cgroups();

class SandboxCgroup {
 public:
  // Makes the cgroup `name` ([A-Za-z0-9_.-], at most 240 characters) in each hierarchy the limits
  // need and writes them. An empty leftover of the same name is removed first (a populated one
  // is refused, never joined). Null and `error` (the controller, the path, the reason) when it
  // cannot; nothing is left behind then.
  static std::unique_ptr<SandboxCgroup> create(const std::string& name, const CgroupLimits& limits,
                                               std::string& error);
  ~SandboxCgroup();
  SandboxCgroup(const SandboxCgroup&) = delete;
  SandboxCgroup& operator=(const SandboxCgroup&) = delete;

  // Each directory's cgroup.procs, open for writing and close-on-exec: a process that writes "0"
  // to each is in the cgroup (async-signal-safe: the sandbox's pre-exec child does it).
  [[nodiscard]] const std::vector<int>& procs_fds() const { return procs_; }
  // The directories made (absolute paths), one per hierarchy.
  [[nodiscard]] const std::vector<std::string>& paths() const { return dirs_; }
  // The OOM kills the kernel recorded in it so far (v2 memory.events oom_kill, v1
  // memory.oom_control oom_kill, or memory.failcnt where the kernel has no such count); nullopt
  // without a memory limit or once removed. Safe from any thread.
  [[nodiscard]] std::optional<long> oom_kills() const;
  // Ends what is left in it (cgroup.kill where v2 has it; elsewhere the sandbox's pid namespace
  // has ended everything but what is still exiting), waits up to `wait` for it to empty, and
  // removes its directories. "" or which directory stays and why. Idempotent.
  std::string remove(std::chrono::milliseconds wait = std::chrono::seconds(3)) noexcept;

 private:
  SandboxCgroup() = default;
  std::mutex mutex_;
  std::vector<std::string> dirs_;
  std::vector<int> procs_;
  int events_fd_ = -1;           // memory.events / memory.oom_control / memory.failcnt
  bool events_failcnt_ = false;  // the count is memory.failcnt (an old v1 kernel)
};

// Removes the empty cgroups this server's naming left behind: children of the server's cgroups
// named `prefix` + "<pid>-..." whose pid is not a live process (a server that was killed), and
// empty execmcp-server-<pid> leaves of dead pids (v2), made at least `min_age` ago. A cgroup
// with processes is never removed (rmdir refuses it). Returns how many went.
int remove_leftover_cgroups(const std::string& prefix,
                            std::chrono::seconds min_age = std::chrono::seconds(60));

// The pure parts, for tests.
namespace cgroup_detail {
struct CgroupMount {
  std::string mount_point;
  std::string root;  // the mount's root within its hierarchy
  bool v2 = false;
  bool read_only = false;
  std::vector<std::string> options;  // v1: the controllers (and name=...); v2: mount options
};
std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo);
struct ProcCgroup {
  std::vector<std::string> controllers;  // empty for v2's "0::" line
  std::string path;
  bool v2 = false;
};
std::vector<ProcCgroup> parse_proc_cgroup(std::string_view text);
// Where a controller lives for the process these describe: the hierarchy's mount and the
// process's directory in it. `v2_controllers` is the v2 tree's root cgroup.controllers.
struct CgroupPlace {
  bool v2 = false;
  std::string mount_point;
  std::string dir;
  bool read_only = false;
};
std::optional<CgroupPlace> place_of(const std::string& controller,
                                    const std::vector<CgroupMount>& mounts,
                                    const std::vector<ProcCgroup>& self,
                                    const std::string& v2_controllers);
// "oom_kill N" in memory.events / memory.oom_control text.
std::optional<long> parse_oom_kill(std::string_view text);
// A valid cgroup name of ours: [A-Za-z0-9_.-]{1,240}, not "." or "..".
bool valid_cgroup_name(std::string_view name);
}  // namespace cgroup_detail

}  // namespace execmcp::plugins::local::sandbox
