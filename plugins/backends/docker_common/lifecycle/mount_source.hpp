// Which host paths may be bind-mounted: none that an agent could redirect with a symlink.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace execmcp::plugins::docker_common {

// A host directory some agent can write (its workspace, a writable context path, a writable extra
// mount): every name inside it can be replaced by that agent at any moment.
struct WritableRoot {
  std::string path;  // absolute, normal
  std::string who;   // for messages, e.g. "this agent" or "agent 'b' (container execmcp-b-1)"
};

// True when `path` is `root` or lies below it, comparing whole components ("/a/bc" is not in
// "/a/b"). Both are taken as written: absolute, normal paths.
bool path_within(std::string_view path, std::string_view root);

// "" when `source` may be bind-mounted, else why not (naming the path and the fix). The engine
// resolves a bind source, symlinks included, at every container start, so a source is refused
// when it is not absolute and normal (no ".", "..", "//", trailing "/"), when any component from
// "/" down to the source itself is a symlink or missing (lstat: never followed), or when it lies
// strictly inside a writable root (its name is in a directory an agent can change; the root
// itself is fine: its own name is not).
std::string check_mount_source(const std::string& source,
                               const std::vector<WritableRoot>& writable);

// The same rule for a host file execmcp reads for a root process (preinstall's local files, which
// the install runs as root): "" or why not. `what` names it for the message
// ("preinstall.system[0]").
std::string check_input_file(const std::string& path, const std::vector<WritableRoot>& writable,
                             const std::string& what);

}  // namespace execmcp::plugins::docker_common
