// Race-free path resolution for the local file tools: a requested path is mapped to a grant
// lexically, then opened beneath the grant's directory descriptor, never by name from the root.
//
// Why: resolving a path to a string and reopening it by name lets a concurrent rename swap a
// directory for a symlink in between and read or write outside the grants. Here every lookup
// starts at a descriptor of the grant's directory, and the kernel (openat2 with RESOLVE_BENEATH)
// or, on kernels without openat2, a walk one component at a time with O_NOFOLLOW refuses any step
// that leaves it. Plain functions of their arguments, so they can be fuzzed on their own.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "execmcp/sdk/path_policy.hpp"

namespace execmcp::plugins::local {

// A path grant as the file tools use it: the configured path and, resolved once at start, the
// directory it names (both absolute and lexically normal).
struct GrantRoot {
  std::string configured;
  std::string canonical;
  bool writable = false;
  // Paths at or inside the grant that stay read-only (MassGen's protected_paths), each as
  // configured and as resolved at start; the file tools refuse to write at or beneath either.
  std::vector<std::string> protected_paths;
  // What those paths named when first seen (device and inode), so a protected file or directory
  // stays protected when a command moves it or links it elsewhere (the path rule cannot follow).
  struct Identity {
    dev_t dev = 0;
    ino_t ino = 0;
    std::string configured;  // the protected path it was found at
  };
  std::vector<Identity> protected_identities = {};
};

// The grants as the file tools use them (an unresolvable grant grants nothing). Identities of
// protected paths are those recorded in `previous` (an earlier start) plus those that exist now.
std::shared_ptr<const std::vector<GrantRoot>> grant_roots(
    const std::vector<sdk::PathGrant>& grants, const std::vector<GrantRoot>* previous = nullptr);

struct Location {
  std::size_t grant = 0;  // index into the roots
  std::string relative;   // beneath the grant; no "." or ".." components; "" is the grant itself
  std::string error;      // non-empty when refused
};

// Maps `requested` (absolute, or relative to `cwd`) to the grant that contains it and permits
// `access`, lexically: ".." removes the previous component as written (like `cd -L`), so the
// result must still lie beneath a grant; symlinks are left to open_beneath. NUL bytes are
// refused. Pure: touches no file system.
Location locate(std::string_view requested, std::string_view cwd,
                const std::vector<GrantRoot>& roots, sdk::Access access);

// The protected path (as held in `roots`) that the absolute, lexically normal `path` is at or
// beneath, or null. locate() asks it of the path as written; a writer asks it again of where the
// opened directory really is, so a symlink into a protected directory does not get around it.
const std::string* protected_by(std::string_view path, const std::vector<GrantRoot>& roots);

// How open_beneath resolves: the kernel (openat2; falls back to the walk when the kernel lacks it
// or refuses a step the walk may still allow, such as an absolute symlink that points inside), or
// the walk alone (for tests and old kernels).
enum class Resolver { kKernel, kWalk };

// Opens the grant's directory itself: `canonical` must name it without any symlink (one that
// appeared since start makes this fail closed with ELOOP). Returns an O_PATH descriptor or -errno.
int open_grant_root(const std::string& canonical);

// Opens `relative` beneath the directory `root_fd` (whose absolute path is `root_path`, used to
// follow absolute symlinks that point inside it) with `flags` (O_CLOEXEC is added; `mode` used
// with O_CREAT). Symlinks are followed only while they stay beneath the root, magic links never.
// Returns a descriptor or -errno (EXDEV: the path leaves the root).
int open_beneath(int root_fd, std::string_view root_path, std::string_view relative, int flags,
                 mode_t mode = 0, Resolver resolver = Resolver::kKernel);

struct ParentBeneath {
  int fd = -1;       // O_PATH descriptor of the directory that holds `leaf`, or -1
  std::string leaf;  // the last component; never a symlink when this was made
  int error = 0;     // errno when fd is -1
};

// Opens the directory that holds `relative`'s last component, beneath `root_fd`, following a
// symlink at the last component (inside the root) to its target's directory; with
// `create_dirs`, missing directories on the way are made (mode 0755). For creating or replacing
// a file with openat/renameat on the returned directory.
ParentBeneath open_parent_beneath(int root_fd, std::string_view root_path,
                                  std::string_view relative, bool create_dirs,
                                  Resolver resolver = Resolver::kKernel);

}  // namespace execmcp::plugins::local
