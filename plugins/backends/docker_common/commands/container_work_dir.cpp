// work_dir resolved in the commands' view within the grants (see container_work_dir.hpp).
#include "docker_common/commands/container_work_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <string_view>
#include <vector>

#include "docker_common/lifecycle/container_spec.hpp"
#include "docker_common/lifecycle/mount_source.hpp"

namespace execmcp::plugins::docker_common {
namespace {

// As many symlinks as one lookup follows on Linux (MAXSYMLINKS).
constexpr int kMaxSymlinks = 40;

// A grant: where commands see it, and where it is on the host.
struct GrantView {
  std::string seen;
  std::string host;
};

// The grant whose mount holds `path` (the deepest: it hides the ones above), or null.
const GrantView* holding(const std::vector<GrantView>& grants, const std::string& path) {
  const GrantView* found = nullptr;
  for (const auto& g : grants)
    if (path_within(path, g.seen) && (found == nullptr || g.seen.size() > found->seen.size()))
      found = &g;
  return found;
}

// True when `path` lies strictly above some grant's mount point (a directory on the way to it).
bool above_a_grant(const std::vector<GrantView>& grants, const std::string& path) {
  for (const auto& g : grants)
    if (g.seen != path && path_within(g.seen, path)) return true;
  return false;
}

std::deque<std::string> components(std::string_view path) {
  std::deque<std::string> out;
  std::size_t at = 0;
  while (at < path.size()) {
    const std::size_t end = std::min(path.find('/', at), path.size());
    if (end > at) out.emplace_back(path.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

// The target of the symlink at `host`, or "" when it cannot be read.
std::string read_link(const std::string& host) {
  std::string target(4096, '\0');
  const ssize_t n = ::readlink(host.c_str(), target.data(), target.size());
  if (n <= 0 || static_cast<std::size_t>(n) >= target.size()) return {};
  target.resize(static_cast<std::size_t>(n));
  return target;
}

}  // namespace

ContainerWorkDir resolve_container_work_dir(const sdk::BackendInit& init,
                                            const std::string& requested) {
  if (requested.find('\0') != std::string::npos)
    return {{}, "work_dir refused: the path contains a NUL byte, which no file name can hold"};
  const std::string cwd = container_cwd(init);
  std::string seen = requested.empty()
                         ? cwd
                         : (std::filesystem::path(cwd) / requested).lexically_normal().string();
  if (seen.size() > 1 && seen.back() == '/') seen.pop_back();
  const ContainerWorkDir refused{
      {},
      "work_dir refused: '" + seen +
          "' is not a directory in this agent's workspace or granted paths"};

  std::vector<GrantView> grants;
  for (const auto& g : init.paths) grants.push_back({container_path(init, g.path), g.path});
  std::deque<std::string> todo = components(seen);
  std::string at = "/";  // resolved so far, in the commands' view: directories, no symlink
  int links = 0;
  while (!todo.empty()) {
    const std::string name = std::move(todo.front());
    todo.pop_front();
    if (name == ".") continue;
    if (name == "..") {  // only from a symlink's target: the requested path is normal
      at = parent_of(at);
      continue;
    }
    const std::string next = (at == "/" ? "" : at) + "/" + name;
    const GrantView* grant = holding(grants, next);
    if (grant == nullptr) {
      if (!above_a_grant(grants, next)) return refused;  // never looked at
      at = next;
      continue;
    }
    const std::string host = rebase_path(next, grant->seen, grant->host);
    struct stat st {};
    // A grant's own directory is a mount point (its source checked at start); inside it, nothing
    // is followed on the host.
    const int rc = next == grant->seen ? ::stat(host.c_str(), &st) : ::lstat(host.c_str(), &st);
    if (rc != 0) return refused;
    if (S_ISLNK(st.st_mode)) {
      const std::string target = read_link(host);
      if (target.empty() || ++links > kMaxSymlinks) return refused;
      std::deque<std::string> spliced = components(target);
      todo.insert(todo.begin(), spliced.begin(), spliced.end());
      if (target.front() == '/') at = "/";
      continue;
    }
    if (!S_ISDIR(st.st_mode)) return refused;
    at = next;
  }
  if (holding(grants, at) == nullptr) return refused;
  return {at, {}};
}

}  // namespace execmcp::plugins::docker_common
