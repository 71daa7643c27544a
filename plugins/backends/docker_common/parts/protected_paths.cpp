// See protected_paths.hpp.
#include "docker_common/parts/protected_paths.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "docker_common/lifecycle/mount_source.hpp"

namespace execmcp::plugins::docker_common {

std::string ProtectedPathsPart::check() {
  const auto init = lifecycle_.init();
  std::lock_guard lock(mutex_);
  for (const auto& g : init->paths) {
    if (!g.writable) continue;
    for (const auto& p : g.protected_paths) {
      struct stat st {};
      if (::lstat(p.c_str(), &st) != 0) {
        const int e = errno;
        return "protected path '" + p + "' " +
               (e == ENOENT ? std::string("does not exist")
                            : "cannot be read: " + std::string(std::strerror(e))) +
               ", so the container cannot mount it read-only, and execmcp does not start an agent "
               "without its protection (it existed when the config was checked: was it moved or "
               "deleted, perhaps by an agent?). Put it back, or remove it from protected_paths";
      }
      const auto id = std::make_pair(static_cast<std::uint64_t>(st.st_dev),
                                     static_cast<std::uint64_t>(st.st_ino));
      const auto [at, first] = ids_.emplace(p, id);
      if (!first && at->second != id)
        return "protected path '" + p +
               "' is another file than at this agent's first container start (it was moved or "
               "replaced since), so execmcp does not start the container again: check the file, "
               "then restart the server to protect it as it is now";
    }
  }
  return {};
}

std::string ProtectedPathsPart::prepare_spec(ContainerSpec& /*spec*/) {
  return check();
}

void ProtectedPathsPart::on_relocate(const std::string& from, const std::string& to) {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> rekeyed;
  for (const auto& [p, id] : ids_)
    rekeyed.emplace(path_within(p, from) ? rebase_path(p, from, to) : p, id);
  ids_ = std::move(rekeyed);
}

}  // namespace execmcp::plugins::docker_common
