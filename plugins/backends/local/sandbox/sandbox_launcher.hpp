// The local backend's OS sandbox, as its launcher sees it: what a sandbox is made of (a pure
// SandboxSpec), whether this machine can give every layer (check_sandbox_support), and one
// running sandbox (SandboxProcess: bubblewrap, started as an unprivileged uid, with the program
// it runs as its only tenant). What runs inside and how it is spoken to is the caller's business:
// the local backend runs execmcp-runner there and drives it with a RunnerChannel over the ends.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace execmcp::plugins::local::sandbox {

enum class SandboxNetwork {
  kNone,  // a network namespace of its own: its loopback only
  kHost,  // the host's network (an explicit opt-in: no network boundary)
  // A network namespace of its own, whose only way out is the proxy's unix socket
  // (SandboxSpec::egress_socket), shown inside at /run/execmcp/egress.sock; execmcp-runner
  // relays 127.0.0.1:3128 to it (--execmcp-egress-relay, added by the launcher when the program
  // is the runner). The host side is EgressProxy (egress_proxy.hpp).
  kEgress,
};

// One host directory or file shown inside, at `target` (absolute, as the sandbox sees it).
struct SandboxMount {
  std::string source;  // absolute host path, canonical (a symlink on the way is refused)
  std::string target;  // absolute path inside
  bool writable = false;
};

struct SandboxSpec {
  // The agent's grants as they are shown inside: workspace (writable), context paths with their
  // permission, the tools/skills/temp workspace read-only. Order does not matter: the launcher
  // mounts by depth.
  std::vector<SandboxMount> mounts;
  // Host paths inside a mount that stay read-only and cannot be moved, renamed or replaced
  // (their parents up to the mount become mount points too). Shown at the same place as their
  // mount maps them.
  std::vector<std::string> protected_paths;
  // Host paths that must never be visible, even when a mount would include them (the server's
  // config, state dir, audit file, plugin dir, TLS keys): hidden under an empty tmpfs or file.
  std::vector<std::string> private_paths;

  // What the sandbox runs: `program` (host path, shown read-only at /.execmcp/<its name>) with
  // `args` (argv[1..]); its stdin and stdout are the channel, its stderr the diagnostics.
  std::string program;
  std::vector<std::string> args;
  // The whole environment the program starts with (the server's is never inherited).
  std::vector<std::pair<std::string, std::string>> env;
  std::string work_dir;  // the program's cwd inside ("/" when empty)

  // Who the sandbox runs as on the host; never 0. When the server runs as root it drops to this
  // uid before bubblewrap starts; otherwise it must equal the server's own uid.
  uid_t uid = 0;
  gid_t gid = 0;

  SandboxNetwork network = SandboxNetwork::kNone;
  // kEgress: the host path of the proxy's unix socket (in a 0700 directory of `uid`).
  std::string egress_socket;
  std::string home = "/home/agent";                // a private tmpfs, HOME inside
  std::size_t tmp_bytes = std::size_t{512} << 20;  // size of the private /tmp and HOME
  // Landlock's ABI is capped at this (0: no cap); the tests force 2, Debian 12's stock kernel.
  int landlock_max_abi = 0;
  // RLIMIT_NPROC of everything in the sandbox (0: none). The kernel counts a user namespace's
  // processes at each level up to the host's, and a namespace made under this limit holds its
  // owner uid to it there too: so no sandbox of `uid` can fork once `uid` has this many processes
  // on the host (every sandbox of that uid shares the count; root's processes never count).
  std::size_t max_processes = 0;
  // The sandbox's cgroup (cgroup_limits.hpp: SandboxCgroup::procs_fds()), owned by the caller:
  // bubblewrap's process writes "0" to each before it runs anything, so the whole sandbox is in
  // it. Empty: no cgroup of its own.
  std::vector<int> cgroup_procs;
  // The program is execmcp-runner: the launcher appends its --execmcp-landlock-* arguments
  // (built from this spec) when the kernel has Landlock ABI >= 2, and the runner applies them to
  // itself before it says hello. False for any other program (tests run /bin/sh).
  bool runner_landlock = true;
};

// What this machine gives, as check-config and the start log report it.
struct SandboxSupport {
  std::string bwrap;     // the bubblewrap program found ("" when none)
  int landlock_abi = 0;  // 0: Landlock is not available (the sandbox still starts without it)
  bool user_namespaces = false;
  bool seccomp = false;
  // "" when a sandbox can start; else which layer is missing and how to get it, e.g.
  // "bubblewrap: /usr/bin/bwrap not found; install it: apt-get install bubblewrap".
  std::string problem;
};

// Probes once per call (cheap: a few ms). Honours EXECMCP_BWRAP (a test-only path override).
SandboxSupport check_sandbox_support();

// One running sandbox. Destroying it stops it (stop()).
class SandboxProcess {
 public:
  // Starts bubblewrap and waits until it has made the sandbox's init (not for the program's own
  // hello). Null and `error` naming the layer when anything fails before that; nothing is left
  // behind then. bubblewrap sets the sandbox up after it reports the init, so a set-up failure
  // (a mount it refused) shows as the channel at EOF with bwrap's line on the diagnostics pipe,
  // as a program that cannot run does: wait for the program's first words to know it runs.
  static std::unique_ptr<SandboxProcess> start(const SandboxSpec& spec, std::string& error);
  virtual ~SandboxProcess() = default;

  // The program's stdin+stdout (one socket) and its stderr (a pipe); owned by the caller once
  // taken (take_* returns -1 the second time).
  virtual int take_channel_fd() = 0;
  virtual int take_diagnostics_fd() = 0;
  // Host pid of the sandbox's PID 1 (its pid namespace's init).
  [[nodiscard]] virtual pid_t init_pid() const = 0;
  // Ends everything in the sandbox (SIGKILL to its init ends the pid namespace) and reaps
  // bubblewrap; waits at most `grace` for the program to leave on its own first (after the
  // caller closed the channel). Idempotent.
  virtual void stop(std::chrono::milliseconds grace) noexcept = 0;
};

}  // namespace execmcp::plugins::local::sandbox
