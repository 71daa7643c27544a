// Checks a bind-mount source component by component without following symlinks.
#include "docker_common/lifecycle/mount_source.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace execmcp::plugins::docker_common {

bool path_within(std::string_view path, std::string_view root) {
  if (root == "/") return !path.empty() && path.front() == '/';
  if (!path.starts_with(root)) return false;
  return path.size() == root.size() || path[root.size()] == '/';
}

namespace {

bool is_normal_absolute(std::string_view p) {
  if (p.empty() || p.front() != '/') return false;
  if (p == "/") return true;
  if (p.back() == '/') return false;
  std::size_t start = 1;
  while (start <= p.size()) {
    const std::size_t end = std::min(p.find('/', start), p.size());
    const std::string_view part = p.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

// A component from "/" down to `source` that is missing or a symlink: "" or why, after `what`.
std::string check_components(const std::string& source, const std::string& what,
                             const char* symlink_rule) {
  // Every prefix, "/a", "/a/b", ... up to the source itself.
  for (std::size_t end = source.find('/', 1);; end = source.find('/', end + 1)) {
    const std::string prefix = source.substr(0, end);
    struct stat st {};
    if (::lstat(prefix.c_str(), &st) != 0)
      return what + "'" + prefix + "': " + std::strerror(errno);
    if (S_ISLNK(st.st_mode))
      return what + "'" + prefix + "' is a symlink; " + symlink_rule + ": configure the real path";
    if (end == std::string::npos) break;
  }
  return {};
}

}  // namespace

std::string check_mount_source(const std::string& source,
                               const std::vector<WritableRoot>& writable) {
  const std::string what = "cannot mount '" + source + "': ";
  if (!is_normal_absolute(source))
    return what + "a mount source must be an absolute path without '.', '..' or repeated '/'";
  for (const auto& root : writable) {
    if (root.path != source && path_within(source, root.path))
      return what + "it lies inside '" + root.path + "', which " + root.who +
             " can write: that agent could replace it (or a directory on the way) by a symlink, "
             "and the engine would mount whatever the symlink names. Mount a directory outside "
             "every writable path, or use it through the writable path itself";
  }
  return check_components(source, what,
                          "a mount source is never reached through a symlink (the engine follows "
                          "it at every container start)");
}

std::string check_input_file(const std::string& path, const std::vector<WritableRoot>& writable,
                             const std::string& what) {
  const std::string prefix = what + " '" + path + "': ";
  if (!is_normal_absolute(path))
    return prefix + "a local file must be an absolute path without '.', '..' or repeated '/'";
  for (const auto& root : writable)
    if (path_within(path, root.path))
      return prefix + "it lies inside '" + root.path + "', which " + root.who +
             " can write: that agent could replace it at any moment, and the install runs it as "
             "root. Keep install files outside every path an agent can write";
  return check_components(path, prefix,
                          "a local file is never reached through a symlink (whoever can change "
                          "the symlink chooses what is installed)");
}

}  // namespace execmcp::plugins::docker_common
