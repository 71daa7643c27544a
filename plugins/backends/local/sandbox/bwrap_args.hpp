// The bubblewrap command line of a local sandbox, computed from its SandboxSpec: a pure part
// (plan_grant_mounts's order and bwrap_args's argv, string-tested) and the few facts of the host
// it needs (HostLayout, the /etc deny list), gathered by the caller. The launcher opens the
// descriptors; this file only names them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "etc_view.hpp"
#include "sandbox_launcher.hpp"
#include "supervision/landlock_rules.hpp"

namespace execmcp::plugins::local::sandbox {

// One mount of the agent's part of the view (grants, protected paths and their parents, private
// paths), in the order bubblewrap performs them: by depth of the target, so a mount never hides
// one made before it.
struct PlannedMount {
  enum class Kind {
    kBind,      // `source` shown at `target`, writable or not
    kHideDir,   // an empty read-only tmpfs over `target`
    kHideFile,  // an empty file (/dev/null, read-only) over `target`
  };
  Kind kind = Kind::kBind;
  std::string source;  // host path (kBind)
  std::string target;  // inside
  bool writable = false;
};

// mounts, protected paths (ro) with every parent up to their mount bound onto itself (so nothing
// can rename them away: EBUSY), and the private paths that fall inside a mount (hidden). Looks at
// the host only to tell a private file from a private directory. Empty and `error` when the spec
// is not sound (relative paths, a protected path inside no mount, a mount inside a private path).
std::vector<PlannedMount> plan_grant_mounts(const SandboxSpec& spec, std::string& error);

// The host's top-level system layout: which of /bin /sbin /lib* are symlinks (merged /usr) and
// which are directories, and whether /opt exists.
struct HostLayout {
  std::vector<std::pair<std::string, std::string>> root_links;  // {"/bin", "usr/bin"}
  std::vector<std::string> root_dirs;                           // {"/lib64"} (bound read-only)
  bool has_opt = false;
};
HostLayout probe_host_layout();

// Where the program is shown inside: /.execmcp/<its file name>.
std::string program_target(const SandboxSpec& spec);

struct BwrapInputs {
  std::string bwrap = "/usr/bin/bwrap";
  HostLayout host;
  std::vector<HiddenEntry> etc_hidden;  // host paths under /etc (host_etc_hidden_entries())
  std::vector<PlannedMount> mounts;     // plan_grant_mounts()
  std::vector<int> mount_fds;           // per mount: an O_PATH fd of its source, or -1: by path
  int program_fd = -1;                  // O_PATH fd of spec.program, or -1: by path
  int seccomp_fd = -1;                  // the filter (--add-seccomp-fd), or -1: none (tests only)
  int status_fd = -1;                   // --json-status-fd, or -1
  int passwd_fd = -1;                   // --ro-bind-data over /etc/passwd, or -1: the host's
  int group_fd = -1;                    // the same for /etc/group
  std::vector<std::string> program_extra_args;  // after spec.args (Landlock's arguments)
};

// The whole argv, bwrap first.
std::vector<std::string> bwrap_args(const SandboxSpec& spec, const BwrapInputs& in);

// Landlock rules for execmcp-runner inside this sandbox: read+write on the writable mounts, /tmp,
// HOME, /dev and /proc; read+execute on the system, /etc, /opt, read-only mounts and the program;
// listing on / (the mounts decide what exists).
supervision::landlock::Rules landlock_rules_for(const SandboxSpec& spec, const HostLayout& host);

}  // namespace execmcp::plugins::local::sandbox
