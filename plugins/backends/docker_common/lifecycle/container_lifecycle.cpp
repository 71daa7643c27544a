// The container lifecycle's core: create, start, recover, stop, remove, orphans, names and
// ownership over any Engine, with the parts (container_part.hpp) asked at each step.
#include "docker_common/lifecycle/container_lifecycle.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <random>

#include "docker_common/log_text.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using Clock = std::chrono::steady_clock;
using Kind = EngineError::Kind;

constexpr const char* kDiskHint =
    " (the 'disk' setting needs an engine whose storage can bound a container's size: overlay2 "
    "on xfs mounted with pquota, btrfs or zfs; remove 'disk' or move Docker's data root)";
constexpr const char* kBuildHint = "build it with docker/build.sh (from the execmcp source tree)";

std::string this_host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

bool pid_alive(long pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

std::string random_marker() {
  thread_local std::mt19937_64 rng{
      std::random_device{}() ^ static_cast<std::uint64_t>(Clock::now().time_since_epoch().count())};
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 2; ++i) {
    auto v = rng();
    for (int j = 0; j < 16; ++j, v >>= 4) out.push_back(hex[v & 15]);
  }
  return out;
}

ContainerLifecycle::ContainerLifecycle(const sdk::BackendInit& init, std::string backend_name,
                                       DockerSettings settings, Engine& engine)
    : init_(std::make_shared<const sdk::BackendInit>(init)),
      log_(init.log),
      backend_name_(std::move(backend_name)),
      settings_(std::move(settings)),
      engine_(engine),
      name_(settings_.container.empty() ? container_name(init.agent_id, init.instance_id)
                                        : settings_.container),
      host_name_(this_host_name()) {
  if (init.cwd.empty() || init.cwd.front() != '/')
    throw std::invalid_argument("the " + backend_name_ +
                                " backend needs an absolute workspace (cwd)");
  if (init.paths.empty()) {
    auto with_grant = init;
    with_grant.paths.push_back({init.cwd, true});
    init_ = std::make_shared<const sdk::BackendInit>(std::move(with_grant));
  }
  // The container user is chosen at start(): the host may create the workspace after loading us.
  add_standard_parts(*this, settings_);
}

std::string ContainerLifecycle::user() {
  std::lock_guard lock(user_mutex_);
  return user_.user;
}

void ContainerLifecycle::set_user(UserChoice choice) {
  std::lock_guard lock(user_mutex_);
  user_ = std::move(choice);
}

void ContainerLifecycle::log(sdk::LogLevel level, const std::string& message) const {
  // Every message may carry bytes from a container or the engine: bounded and escaped here, so a
  // log line of ours can never be a flood or a forged line (fields are bounded where they join).
  if (log_ != nullptr)  // the host prefixes plugin and agent
    log_->log(level, log_text(message, kLogMessageMax));
}

bool ContainerLifecycle::orphaned(const std::map<std::string, std::string>& labels) const {
  const auto host = labels.find(kLabelOwnerHost);
  if (host == labels.end() || host->second != host_name_) return false;
  const auto it = labels.find(kLabelOwnerPid);
  long pid = 0;
  try {
    pid = it == labels.end() ? 0 : std::stol(it->second);
  } catch (...) {
    pid = 0;
  }
  return !pid_alive(pid);
}

std::size_t ContainerLifecycle::remove_orphans(std::vector<ContainerInfo>& managed) {
  return std::erase_if(managed, [&](const ContainerInfo& c) {
    if (!orphaned(c.labels) || c.id.empty()) return false;
    const auto it = c.labels.find(kLabelOwnerPid);
    const std::string pid_text = it == c.labels.end() ? std::string() : it->second;
    const auto del = engine_.remove(c.id);
    log(sdk::LogLevel::Info,
        "removed orphan container " + c.id.substr(0, 12) + " (owner pid " + pid_text + " is gone)" +
            (del.ok() || del.kind == Kind::kNotFound ? "" : ": " + log_text(del.message)));
    return del.ok() || del.kind == Kind::kNotFound;
  });
}

void ContainerLifecycle::remove_orphan_networks() {
  std::vector<NetworkInfo> networks;
  if (!engine_.list_networks({{kLabelManaged, "true"}}, networks).ok()) return;
  for (const auto& n : networks) {
    if (!orphaned(n.labels) || n.name.empty()) continue;
    const auto del = engine_.remove_network(n.name);
    const auto it = n.labels.find(kLabelOwnerPid);
    log(sdk::LogLevel::Info,
        "removed orphan network " + n.name + " (owner pid " +
            (it == n.labels.end() ? std::string() : it->second) + " is gone)" +
            (del.ok() || del.kind == Kind::kNotFound ? "" : ": " + log_text(del.message)));
  }
}

Ownership ContainerLifecycle::ownership() const {
  const auto init = this->init();
  return {init->agent_id, init->instance_id, ""};
}

std::map<std::string, std::string> ContainerLifecycle::owner_labels() const {
  const auto init = this->init();
  return container_labels(init->agent_id, init->instance_id, ::getpid(), host_name_);
}

NetworkRoute ContainerLifecycle::route() const {
  NetworkRoute route{settings_.network, {}};
  parts_.route(route);
  return route;
}

std::string ContainerLifecycle::checked_spec(ContainerSpec& spec,
                                             const std::vector<ContainerInfo>* managed) {
  const auto init = this->init();
  spec = make_container_spec(*init, settings_, user(), ::getpid(), host_name_, runtime_);
  if (auto err = parts_.prepare_spec(spec); !err.empty()) return err;
  // The tools, skills and temp dirs are optional extras: one that does not exist (yet) is left
  // out rather than failing the agent. Workspace and context paths must exist (Docker says so).
  std::erase_if(spec.mounts, [&](const MountSpec& m) {
    const bool optional = m.target == "/tools" || m.target == "/skills" ||
                          m.target == kSkillsHomeTarget ||
                          (!init->temp_workspace.empty() && m.source == init->temp_workspace);
    std::error_code ec;
    if (!optional || std::filesystem::exists(m.source, ec)) return false;
    log(sdk::LogLevel::Info,
        "not mounting " + m.source + " at " + m.target + ": it does not exist");
    return true;
  });
  // Checked before every start, not once: the engine resolves each source again at each start,
  // and an agent may have changed a path since the last one.
  std::vector<WritableRoot> others;
  if (auto err = add_other_agents_roots(others, managed); !err.empty()) return err;
  auto roots = writable_roots(*init, settings_.extra_mounts);
  roots.insert(roots.end(), others.begin(), others.end());
  for (const auto& m : spec.mounts) {
    // A protected path (and a directory on the way to one) lies in this agent's writable grant
    // by definition; its container is gone while this check and the engine's mount run, so only
    // the symlink check and the other agents' paths apply to it.
    const bool own = is_protected_mount(*init, m) || is_protected_parent_mount(*init, m);
    if (auto err = check_mount_source(m.source, own ? others : roots); !err.empty()) return err;
  }
  return {};
}

std::string ContainerLifecycle::list_managed(std::vector<ContainerInfo>& out) {
  if (auto err = engine_.list({{kLabelManaged, "true"}}, out); !err.ok())
    return describe_failure(err,
                            "listing the other agents' containers (to check the mount sources)");
  return {};
}

std::string ContainerLifecycle::add_other_agents_roots(std::vector<WritableRoot>& roots,
                                                       const std::vector<ContainerInfo>* managed) {
  std::vector<ContainerInfo> fresh;
  if (managed == nullptr) {
    if (auto err = list_managed(fresh); !err.empty()) return err;
    managed = &fresh;
  }
  for (const auto& c : *managed) {
    if (c.name == name_) continue;  // our own, from an earlier start: the same grants as ours
    const auto it = c.labels.find(kLabelAgent);
    const std::string agent = it == c.labels.end() ? std::string() : it->second;
    for (const auto& m : c.mounts) {
      if (!m.writable || m.type != "bind") continue;
      roots.push_back({m.source, "agent '" + agent + "' (container " + c.name + ")"});
    }
  }
  return {};
}

EngineError ContainerLifecycle::start_engine_container(const std::string& id, bool created) {
  parts_.on_container_start(created);
  return engine_.start(id);
}

std::string ContainerLifecycle::create_and_start(const std::vector<ContainerInfo>* managed) {
  ContainerSpec spec;
  if (auto err = checked_spec(spec, managed); !err.empty()) return err;
  const std::string disk_hint = settings_.disk_bytes ? std::string(kDiskHint) : std::string();
  bool removed_stale = false, remade = false;
  for (;;) {
    const auto err = engine_.create(spec);
    if (err.ok()) break;
    if (err.kind == Kind::kImageMissing && !remade) {
      // A part's image went away since start() (e.g. `docker image prune -a`): made again rather
      // than leave the agent without a container.
      remade = true;
      std::string why;
      if (parts_.remake_image(spec.image, why)) {
        if (!why.empty()) return why;
        if (auto e = checked_spec(spec, managed); !e.empty()) return e;
        continue;
      }
    }
    if (err.kind == Kind::kImageMissing)
      return "image '" + spec.image + "' not found: " + kBuildHint;
    if (err.kind == Kind::kConflict && !removed_stale) {
      // A stale container holds our name (e.g. left by a previous run with our instance id):
      // removed when its labels say it is ours, else left alone and the start refused.
      removed_stale = true;
      std::string refusal;
      remove_own(engine_, name_, ownership(), refusal);
      if (!refusal.empty()) return refusal;
      continue;
    }
    return describe_failure(err, "creating container '" + name_ + "'") +
           (err.complete ? "" : disk_hint);
  }
  stale_mounts_ = false;  // made from the paths init() gives now
  if (auto err = parts_.after_create(); !err.empty()) {
    engine_.remove(name_);  // never started without what the parts put in
    return err;
  }
  if (const auto err = start_engine_container(name_, true); !err.ok())
    return describe_failure(err, "starting container '" + name_ + "'") +
           (err.complete ? "" : disk_hint);
  UserChoice user;
  {
    std::lock_guard lock(user_mutex_);
    user = user_;
  }
  log(sdk::LogLevel::Info,
      "container " + name_ + " running as user " + user.user + " (" + user.reason + ")");
  return {};
}

std::string ContainerLifecycle::start() {
  try {
    if (auto err = engine_.connect(); !err.ok())
      return describe_failure(err, "reaching the engine at " + engine_.describe());
    if (auto step = parts_.on_start(); step.stop) return step.error;
    return start_managed();
  } catch (const std::exception& e) {
    return backend_name_ + " start failed: " + e.what();
  }
}

std::string ContainerLifecycle::start_managed() {
  if (auto err = engine_.check_image(settings_.image); !err.ok()) {
    if (err.kind == Kind::kImageMissing)
      return "image '" + settings_.image + "' not found: " + kBuildHint;
    return describe_failure(err, "inspecting image '" + settings_.image + "'");
  }
  if (auto err = check_runtime(engine_, settings_, runtime_,
                               [this](const std::string& m) { log(sdk::LogLevel::Info, m); });
      !err.empty())
    return err;
  // Every execmcp container on the engine, looked up once for the whole start (each engine call
  // is a CLI run for docker-cli, over SSH a handshake each).
  std::vector<ContainerInfo> managed;
  if (auto err = list_managed(managed); !err.empty()) return err;
  // Before the ACL grant too: that would otherwise follow a symlinked workspace.
  ContainerSpec unused;
  if (auto err = checked_spec(unused, &managed); !err.empty()) return err;
  if (auto err = parts_.prepare_start(); !err.empty()) return err;
  const std::size_t orphans = remove_orphans(managed);
  // Only when the listing shows one (a create that meets an unlabelled one removes it then):
  // for docker-cli each engine call is a process, and a per-user sandbox's first call waits.
  // Ours only by its labels: one of another sandbox under this name is never removed nor used.
  const auto stale = std::find_if(managed.begin(), managed.end(),
                                  [this](const ContainerInfo& c) { return c.name == name_; });
  if (stale != managed.end() && !is_own(stale->labels, ownership()))
    return not_own_refusal("container", name_, stale->labels, ownership());
  if (stale != managed.end() && engine_.remove(own_handle(*stale, name_)).ok())
    log(sdk::LogLevel::Info, "removed stale container " + name_);
  // A dead owner's network outlives its proxy only if a removal failed (a part that makes
  // networks looks for them itself).
  if (orphans > 0) remove_orphan_networks();
  std::string err = parts_.before_create();
  if (err.empty()) err = create_and_start(&managed);
  if (!err.empty()) parts_.on_start_failed();
  return err;
}

std::string ContainerLifecycle::recover(std::vector<std::string>& notices, bool expected) {
  std::lock_guard lock(recover_mutex_);
  return recover_container(notices, expected ? sdk::LogLevel::Info : sdk::LogLevel::Warn);
}

std::string ContainerLifecycle::recover_container(std::vector<std::string>& notices,
                                                  sdk::LogLevel level) {
  if (auto err = engine_.connect(); !err.ok())
    return describe_failure(err, "reaching the engine at " + engine_.describe());
  if (auto step = parts_.before_recover(level); step.stop) return step.error;
  ContainerInfo info;
  std::string refusal;
  const auto looked = inspect_own(engine_, name_, ownership(), info, refusal);
  // Another sandbox's container under this name is neither started, used nor removed.
  if (!refusal.empty()) return refusal;
  const std::string id = own_handle(info, name_);
  if (looked.ok() && !info.state.running && stale_mounts_) {
    // Its bind sources name the workspace's old place, where something else may be by now.
    if (const auto del = engine_.remove(id); !del.ok() && del.kind != Kind::kNotFound)
      return describe_failure(del, "removing container '" + name_ + "'");
    if (auto err = create_and_start(); !err.empty()) return err;
    notices.push_back("container was recreated: " + name_ +
                      " had stopped, and a fresh one was made because its workspace moved on the "
                      "host (files outside the mounted paths were lost)");
    log(sdk::LogLevel::Info, "container " + name_ + " made anew from the moved workspace");
    return {};
  }
  if (looked.ok()) {
    if (info.state.running) return {};
    // A restart mounts the sources again, following whatever they are now: check them first.
    ContainerSpec spec;
    if (auto err = checked_spec(spec); !err.empty()) {
      engine_.remove(id);
      return err;
    }
    if (start_engine_container(id, false).ok()) {
      notices.push_back("container was recreated: " + name_ +
                        " had stopped and was started again (" +
                        (settings_.writable_rootfs
                             ? "files outside the mounted paths were kept"
                             : "files outside the mounted paths were lost: /tmp, /var/tmp and "
                               "$HOME are tmpfs") +
                        ")");
      log(level, "container " + name_ + " was not running; restarted it");
      return {};
    }
    engine_.remove(id);
  } else if (looked.kind != Kind::kNotFound) {
    return describe_failure(looked, "inspecting container '" + name_ + "'");
  }
  if (auto err = create_and_start(); !err.empty()) return err;
  notices.push_back("container was recreated: " + name_ +
                    " was gone and a fresh one was created (files outside the mounted paths "
                    "were lost)");
  log(level, "container " + name_ + " was gone; recreated it");
  return {};
}

std::string ContainerLifecycle::not_ours(const std::string& what) const {
  return "container " + name_ + " is attached (the 'container' setting): it was made outside " +
         "execmcp and is not ours to " + what;
}

std::string ContainerLifecycle::stop_container(std::chrono::seconds timeout) {
  if (attached()) return not_ours("stop");
  std::lock_guard lock(recover_mutex_);  // not while a recovery starts it
  std::string refusal;
  const auto err = stop_own(engine_, name_, ownership(), timeout, refusal);
  if (!refusal.empty()) return refusal;
  if (!err.ok() && err.kind != Kind::kNotFound)
    return describe_failure(err, "stopping container '" + name_ + "'");
  if (auto stopped = parts_.on_stop(timeout); !stopped.empty()) return stopped;
  log(sdk::LogLevel::Info, "container " + name_ + " stopped; its workspace stays");
  return {};
}

std::string ContainerLifecycle::relocate_workspace(const std::string& host_path) {
  if (attached()) return not_ours("move");
  const std::string refused = "cannot move the workspace to '" + host_path + "': ";
  if (host_path.size() < 2 || host_path.front() != '/' || host_path.back() == '/' ||
      std::filesystem::path(host_path).lexically_normal().string() != host_path)
    return refused + "not an absolute, normal path";
  std::error_code ec;
  if (!std::filesystem::is_directory(std::filesystem::symlink_status(host_path, ec)))
    return refused + "it is not an existing directory";
  std::lock_guard recovering(recover_mutex_);  // no recovery sees half of it
  std::string from;
  {
    std::lock_guard lock(init_mutex_);
    from = init_->cwd;
    if (from == host_path) return {};
    auto moved = *init_;
    auto move = [&](std::string& p) {
      if (!p.empty() && path_within(p, from)) p = rebase_path(p, from, host_path);
    };
    move(moved.cwd);
    for (auto& g : moved.paths) {
      move(g.path);
      for (auto& p : g.protected_paths) move(p);
    }
    move(moved.tools_dir);
    move(moved.skills_dir);
    move(moved.temp_workspace);
    init_ = std::make_shared<const sdk::BackendInit>(std::move(moved));
  }
  parts_.on_relocate(from, host_path);
  stale_mounts_ = true;
  log(sdk::LogLevel::Info, "workspace moved from " + from + " to " + host_path + "; container " +
                               name_ + " keeps it mounted, and is made anew when it next starts");
  return {};
}

std::string ContainerLifecycle::connect() {
  if (auto err = engine_.connect(); !err.ok())
    return describe_failure(err, "reaching the engine at " + engine_.describe());
  return {};
}

bool ContainerLifecycle::wait_stopped(std::chrono::milliseconds timeout) {
  return engine_.wait_stopped(name_, timeout);
}

std::optional<ContainerState> ContainerLifecycle::inspect_state() {
  ContainerInfo info;
  const auto err = engine_.inspect(name_, info);
  if (err.kind == Kind::kNotFound) return ContainerState{};
  if (!err.ok()) return std::nullopt;
  return info.state;
}

std::vector<std::string> ContainerLifecycle::call_env(
    const std::vector<std::pair<std::string, std::string>>& extra) const {
  std::vector<std::string> env;
  parts_.add_call_env(env);
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

void ContainerLifecycle::remove_container() noexcept {
  try {
    if (attached() || !engine_.connect().ok()) return;
    ContainerInfo info;
    std::string refusal;
    const auto looked = inspect_own(engine_, name_, ownership(), info, refusal);
    if (!refusal.empty()) log(sdk::LogLevel::Warn, refusal);
    // Only ours, by its id: one made under the name since is another's.
    const bool remove = looked.ok() && refusal.empty();
    const std::string id = own_handle(info, name_);
    std::string text;
    const std::string log_dir = init()->log_dir;
    if (remove && !log_dir.empty() && engine_.logs(id, text).ok()) {
      std::error_code ec;
      std::filesystem::create_directories(log_dir, ec);
      const std::string file = log_dir + "/" + name_ + ".log";
      std::ofstream f(file, std::ios::binary | std::ios::trunc);
      f << text;
      if (!f) log(sdk::LogLevel::Warn, "cannot write container log to " + file);
    }
    const auto del = remove ? engine_.remove(id) : EngineError{};
    if (!del.ok() && del.kind != Kind::kNotFound)
      log(sdk::LogLevel::Warn, log_text(describe_failure(del, "removing container " + name_)));
    // After the agent's container: a network is removed only once nothing is on it.
    parts_.on_remove();
  } catch (...) {
    // cleanup never throws; the host may call it from a signal path.
  }
}

}  // namespace execmcp::plugins::docker_common
