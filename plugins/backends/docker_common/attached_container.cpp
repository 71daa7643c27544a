// See attached_container.hpp.
#include "docker_common/attached_container.hpp"

#include "docker_common/docker_settings.hpp"
#include "docker_common/mount_source.hpp"

namespace execmcp::plugins::docker_common {

std::string attached_not_running(const std::string& container) {
  return "container " + container +
         " is not running; start it — execmcp does not manage attached containers";
}

std::string attached_user(const std::string& container, const std::string& configured,
                          const std::string& container_user, std::string& error) {
  if (!configured.empty()) return configured;  // root was refused when the settings were read
  if (container_user.empty() || is_root_user(container_user)) {
    error = "container " + container + " runs as root (its Config.User is " +
            (container_user.empty() ? std::string("empty") : "'" + container_user + "'") +
            ") and execmcp never runs commands as root: set the backend's 'user' setting to a "
            "non-root user of that container, or create it with a non-root user (docker run -u)";
    return {};
  }
  return container_user;
}

std::string check_attached_mounts(const std::string& container,
                                  const std::vector<sdk::PathGrant>& grants,
                                  const std::vector<ContainerMount>& mounts, bool accept_writable) {
  // A writable grant's protected paths must show read-only: the container is not ours to mount
  // them.
  std::vector<sdk::PathGrant> shown = grants;
  for (const auto& g : grants)
    if (g.writable)
      for (const auto& p : g.protected_paths) shown.push_back({p, false});
  for (const auto& grant : shown) {
    // The deepest mount whose target covers the grant is what the container shows there.
    const ContainerMount* covering = nullptr;
    for (const auto& m : mounts)
      if (!m.target.empty() && path_within(grant.path, m.target) &&
          (covering == nullptr || m.target.size() > covering->target.size()))
        covering = &m;
    const std::string suffix =
        covering == nullptr ? std::string() : grant.path.substr(covering->target.size());
    if (covering == nullptr || covering->type != "bind" || covering->source + suffix != grant.path)
      return "container " + container + " does not show '" + grant.path +
             "' at the same path (it needs a bind mount of that path or a parent, e.g. docker run "
             "-v " +
             grant.path + ":" + grant.path +
             "): its commands would not see the agent's "
             "files";
    if (grant.writable && !covering->writable)
      return "container " + container + " mounts '" + covering->target + "' read-only, but '" +
             grant.path + "' is writable for the agent: mount it read-write";
    if (!grant.writable && covering->writable && !accept_writable)
      return "container " + container + " mounts '" + covering->target + "' read-write, but '" +
             grant.path +
             "' is read-only for the agent: mount it read-only (:ro), or set "
             "'attach_accept_writable_context: true' to accept that its commands can write there";
  }
  return {};
}

}  // namespace execmcp::plugins::docker_common
