// See attached_container.hpp.
#include "docker_common/parts/attached_container.hpp"

#include <chrono>

#include "docker_common/commands/container_probe.hpp"
#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "docker_common/lifecycle/mount_source.hpp"
#include "docker_common/parts/protected_paths.hpp"
#include "docker_common/settings/docker_settings.hpp"

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

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

PartStep AttachedContainerPart::on_start() {
  auto& engine = lifecycle_.engine();
  const auto& name = lifecycle_.name();
  const auto& settings = lifecycle_.settings();
  ContainerInfo info;
  if (const auto err = engine.inspect(name, info); err.kind == EngineError::Kind::kNotFound) {
    return PartStep::fail(attached_not_running(name));
  } else if (!err.ok()) {
    return PartStep::fail(describe_failure(err, "inspecting container '" + name + "'"));
  }
  if (!info.state.running) return PartStep::fail(attached_not_running(name));
  std::string error;
  const std::string chosen = attached_user(name, settings.user, info.user, error);
  if (chosen.empty()) return PartStep::fail(error);
  if (auto err = check_attached_mounts(name, lifecycle_.init()->paths, info.mounts,
                                       settings.attach_accept_writable_context);
      !err.empty())
    return PartStep::fail(err);
  // Its read-only mount of a protected path is only worth something if the path is still there.
  if (auto err = protected_paths_.check(); !err.empty()) return PartStep::fail(err);
  // Attach mode grants nothing: the files are the container's owner's business, and an ACL would
  // change the host for a container we do not manage.
  lifecycle_.set_user(
      {chosen, false, settings.user.empty() ? "the container's own user" : "the 'user' setting"});
  return PartStep::done();  // never started, created or removed by us
}

std::string AttachedContainerPart::after_start(ContainerProbe& probe) {
  // A user name (or uid) that is root inside the container is refused too: ask the container.
  const auto r = probe.run(kAttachedUidProbe, std::chrono::seconds(30));
  const std::string chosen = lifecycle_.user();
  const std::string& name = lifecycle_.name();
  const auto at = r.stdout_data.find("uid=");
  const std::string uid = at == std::string::npos
                              ? ""
                              : r.stdout_data.substr(at + 4, r.stdout_data.find('\n', at) - at - 4);
  if (!r.error.empty() || uid.empty() || uid == "0") {
    if (uid == "0")
      return "user '" + chosen + "' is root (uid 0) in container " + name +
             ", and execmcp never runs commands as root: set 'user' to a non-root user";
    return "cannot run a command as user '" + chosen + "' in container " + name + ": " +
           (r.error.empty() ? trimmed(r.stderr_data + r.stdout_data) : r.error);
  }
  lifecycle_.log(sdk::LogLevel::Info, "attached to container " + name +
                                          " (not managed by execmcp), running commands as user " +
                                          chosen + " (uid " + uid + ")");
  return {};
}

PartStep AttachedContainerPart::before_recover(sdk::LogLevel /*level*/) {
  // Never started, created or removed by us: only looked at.
  auto& engine = lifecycle_.engine();
  const auto& name = lifecycle_.name();
  ContainerInfo info;
  const auto looked = engine.inspect(name, info);
  if (looked.ok() && info.state.running) return PartStep::done();
  if (looked.ok() || looked.kind == EngineError::Kind::kNotFound)
    return PartStep::fail(attached_not_running(name));
  return PartStep::fail(describe_failure(looked, "inspecting container '" + name + "'"));
}

void AttachedContainerPart::add_call_env(std::vector<std::string>& env) const {
  // A container we create has `env` in its config; an attached one gets it with each call.
  for (const auto& [k, v] : lifecycle_.settings().env) env.push_back(k + "=" + v);
}

}  // namespace execmcp::plugins::docker_common
