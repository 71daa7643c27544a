// /etc as the local sandbox sees it: the host's, read-only, with its secrets hidden (a fixed list
// of well-known secrets plus every entry "other" may not read, the convention for secrets that
// covers the ones a list misses) and passwd/group replaced by a synthesized few lines, so host
// user names are not listed and the sandbox uid has a name and a HOME.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace execmcp::plugins::local::sandbox {

struct HiddenEntry {
  std::string path;  // absolute host path (under the scanned directory)
  bool is_dir = false;
};

// What to hide under `etc` (a host directory; "/etc" in production, a fake one in tests): the
// fixed list's entries that exist, and every file or directory not readable (directories: or not
// searchable) by "other", outermost only. Symlinks are left alone (their targets are checked
// where they live). Sorted, no duplicates.
std::vector<HiddenEntry> etc_hidden_entries(const std::string& etc);

// The host's /etc, scanned once per process (a few ms) and cached.
const std::vector<HiddenEntry>& host_etc_hidden_entries();

// passwd and group as the sandbox sees them: root, nobody and the sandbox uid as `agent`.
std::string synthesized_passwd(uid_t uid, gid_t gid, const std::string& home);
std::string synthesized_group(gid_t gid);

}  // namespace execmcp::plugins::local::sandbox
