// The container lifecycle: create, start, recover, orphans, preinstall, attach mode, workspace
// access, protected paths and credentials, over any Engine.
#include "docker_common/container_lifecycle.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "docker_common/attached_container.hpp"
#include "docker_common/log_text.hpp"
#include "docker_common/runtime_check.hpp"
#include "supervision/program_path.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using Clock = std::chrono::steady_clock;
using Kind = EngineError::Kind;
namespace sv = supervision;

constexpr const char* kDiskHint =
    " (the 'disk' setting needs an engine whose storage can bound a container's size: overlay2 "
    "on xfs mounted with pquota, btrfs or zfs; remove 'disk' or move Docker's data root)";
constexpr const char* kBuildHint = "build it with docker/build.sh (from the execmcp source tree)";

std::string this_host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// How long an install of `preinstall` may take before it is given up.
constexpr auto kPreinstallTimeout = std::chrono::minutes(30);

// One build per cache key in this process: a second agent with the same lists waits for the first
// one's image instead of building it again. (Across processes a race builds twice; the last commit
// holds the tag.)
std::mutex& preinstall_build_mutex(const std::string& key) {
  static std::mutex map_mutex;
  static std::map<std::string, std::unique_ptr<std::mutex>> mutexes;
  std::lock_guard lock(map_mutex);
  auto& m = mutexes[key];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

bool pid_alive(long pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// Kills every process whose environment carries EXECMCP_CALL=<marker>, repeating until a full pass
// finds none, so children forked during the sweep (a fork bomb) are caught too. Python does it in
// one process, which still works when the pids limit leaves no room for `grep` forks. The call's
// wrapper (marker in its argv, not its environment) is killed too: once this sweep runs, the
// wrapper's own clean-up is moot, and it must not outlive the call that returns after this.

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
  // Named files and variables that are missing fail here, when the config is checked, not later.
  auto credentials = resolve_credentials(settings_.credentials, server_environment());
  if (!credentials.error.empty()) throw std::invalid_argument(credentials.error);
  credential_mounts_ = credentials.mounts;
  settings_.extra_mounts.insert(settings_.extra_mounts.end(), credentials.mounts.begin(),
                                credentials.mounts.end());
  secret_env_ = credentials.env;
  // Where the workspace is mounted: after the credentials, whose mounts it must not clash with.
  if (auto err = check_sandbox_cwd(*init_, settings_); !err.empty())
    throw std::invalid_argument(err);
  if (auto err = check_preinstall_files(settings_.preinstall); !err.empty())
    throw std::invalid_argument(err);
  // Another agent's paths are known only at start() (prepare_preinstall()); this one's are here.
  if (auto err = check_preinstall_inputs(settings_.preinstall,
                                         writable_roots(*init_, settings_.extra_mounts));
      !err.empty())
    throw std::invalid_argument(err);
  if (settings_.egress && !attached()) {
    egress_ = std::make_unique<EgressProxy>(engine_, name_, *settings_.egress, init_->agent_id,
                                            ownership());
    egress_log_ =
        std::make_unique<EgressLogFollower>(engine_, egress_->proxy(), *settings_.egress, log_);
  }
  // The container user is chosen at start(): the host may create the workspace after loading us.
  if (settings_.exec_mode == ExecMode::Agent) {
    runner_host_path_ = sv::program_beside_plugin("execmcp-runner");
    // A missing runner is said on each call (then run with one exec each); the container must
    // still start, so nothing is mounted from a path that is not there.
    // An attached container was created without our mount: the program is sent in by exec.
    if (::access(runner_host_path_.c_str(), X_OK) == 0)
      runner_delivery_ =
          engine_.sees_host_files() && !attached() ? RunnerDelivery::Bind : RunnerDelivery::Copy;
  }
}

std::shared_ptr<const SecretEnv> ContainerLifecycle::secret_env() const {
  std::lock_guard lock(secrets_mutex_);
  return secret_env_;
}

std::string ContainerLifecycle::refresh_credentials() {
  if (!settings_.credentials.has_env() && credential_mounts_.empty()) return {};
  auto credentials = resolve_credentials(settings_.credentials, server_environment());
  if (!credentials.error.empty()) return credentials.error;
  {
    std::lock_guard lock(secrets_mutex_);
    secret_env_ = credentials.env;
  }
  // Names and counts only: values never reach a log.
  std::string names;
  for (const auto& n : credentials.names) names += (names.empty() ? "" : ", ") + n;
  log(sdk::LogLevel::Info, "credentials: " + std::to_string(credential_mounts_.size()) +
                               " read-only mount(s), " + std::to_string(credentials.names.size()) +
                               " variable(s) given to each command" +
                               (names.empty() ? "" : " (" + names + ")"));
  // The container user reads them with its own uid (a name set in 'user' is not checked here).
  const std::string u = user();
  try {
    std::size_t used = 0;
    const auto uid = static_cast<uid_t>(std::stoul(u, &used));
    gid_t gid = uid;
    if (used < u.size() && u[used] == ':') gid = static_cast<gid_t>(std::stoul(u.substr(used + 1)));
    return check_credentials_readable(credential_mounts_, uid, gid);
  } catch (const std::exception&) {
    return {};
  }
}

std::string ContainerLifecycle::user() {
  std::lock_guard lock(mutex_);
  return user_.user;
}

void ContainerLifecycle::log(sdk::LogLevel level, const std::string& message) const {
  // Every message may carry bytes from a container or the engine: bounded and escaped here, so a
  // log line of ours can never be a flood or a forged line (fields are bounded where they join).
  if (log_ != nullptr)  // the host prefixes plugin and agent
    log_->log(level, log_text(message, kLogMessageMax));
}

std::string ContainerLifecycle::prepare_workspace_access() {
  const auto init = this->init();
  std::lock_guard lock(mutex_);
  if (access_granted_) return {};
  // Attach mode chose its user at start() and grants nothing: the files are the container's
  // owner's business, and an ACL would change the host for a container we do not manage.
  if (attached()) return "container " + name_ + " has not been checked: start() must come first";
  try {
    user_ = choose_container_user(settings_.user, init->cwd);
  } catch (const std::exception& e) {
    return e.what();
  }
  if (!user_.grant_acl) {
    access_granted_ = true;
    return {};
  }
  // Mode bits that let anyone write (a shared scratch dir, mode 777) need no ACL there.
  struct stat st {};
  const bool others_write = ::stat(init->cwd.c_str(), &st) == 0 &&
                            (st.st_mode & (S_IWOTH | S_IXOTH)) == (S_IWOTH | S_IXOTH);
  if (!runtime_.honours_acls && !others_write)
    return "runtime '" + settings_.runtime +
           "' is gVisor, which does not honour POSIX ACLs: the container user (uid 1000) could "
           "not write the root-owned workspace '" +
           init->cwd +
           "'; make the workspace (and writable grants) owned by a non-root user, whom the "
           "container then runs as (see docs/docker-backend.md, gVisor)";
  // The container runs as uid 1000 while the files belong to root: grant 1000 an ACL (rwX on
  // writable grants, r-X on read-only ones) instead of changing anyone's ownership.
  for (const auto& grant : init->paths) {
    if (auto err = grant_acl_recursive(grant.path, kImageUid, grant.writable); !err.empty())
      return "cannot give the container user (uid 1000) access to '" + grant.path + "': " + err +
             "; set the backend's 'user' setting or make the workspace owned by a non-root user";
  }
  if (!init->temp_workspace.empty()) grant_acl_recursive(init->temp_workspace, kImageUid, false);
  access_granted_ = true;
  return {};
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

std::string ContainerLifecycle::checked_spec(ContainerSpec& spec,
                                             const std::vector<ContainerInfo>* managed) {
  const auto init = this->init();
  spec = make_container_spec(*init, settings_, user(), ::getpid(), host_name_, runtime_);
  {
    std::lock_guard lock(preinstall_mutex_);
    if (!preinstalled_image_.empty()) spec.image = preinstalled_image_;
  }
  spec.runner = runner_delivery_;
  spec.runner_source = runner_host_path_;
  // A protection never lapses: each protected path must be there, and be what it was at this
  // process's first start.
  if (auto err = check_protected_paths(); !err.empty()) return err;
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

std::string ContainerLifecycle::check_protected_paths() {
  const auto init = this->init();
  std::lock_guard lock(protected_mutex_);
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
      const auto [at, first] = protected_ids_.emplace(p, id);
      if (!first && at->second != id)
        return "protected path '" + p +
               "' is another file than at this agent's first container start (it was moved or "
               "replaced since), so execmcp does not start the container again: check the file, "
               "then restart the server to protect it as it is now";
    }
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

std::string ContainerLifecycle::create_and_start(const std::vector<ContainerInfo>* managed) {
  ContainerSpec spec;
  if (auto err = checked_spec(spec, managed); !err.empty()) return err;
  const std::string disk_hint = settings_.disk_bytes ? std::string(kDiskHint) : std::string();
  bool removed_stale = false, rebuilt = false;
  for (;;) {
    const auto err = engine_.create(spec);
    if (err.ok()) break;
    if (err.kind == Kind::kImageMissing && !rebuilt && !settings_.preinstall.empty() &&
        spec.image != agent_image(settings_)) {
      // The preinstall image went away since start() (e.g. `docker image prune -a`): build it
      // again rather than leave the agent without a container.
      rebuilt = true;
      log(sdk::LogLevel::Warn, "preinstall image " + spec.image + " is gone; building it again");
      if (auto e = prepare_preinstall(); !e.empty()) return e;
      if (auto e = checked_spec(spec, managed); !e.empty()) return e;
      continue;
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
  oom_kills_seen_ = 0;    // a new memory cgroup counts from zero
  ++incarnation_;         // a new runner volume is empty
  stale_mounts_ = false;  // made from the paths init() gives now
  if (const auto err = engine_.start(name_); !err.ok())
    return describe_failure(err, "starting container '" + name_ + "'") +
           (err.complete ? "" : disk_hint);
  std::string reason;
  {
    std::lock_guard lock(mutex_);
    reason = user_.reason;
  }
  log(sdk::LogLevel::Info,
      "container " + name_ + " running as user " + user() + " (" + reason + ")");
  return {};
}

std::string ContainerLifecycle::start_attached() {
  if (auto err = engine_.connect(); !err.ok())
    return describe_failure(err, "reaching the engine at " + engine_.describe());
  ContainerInfo info;
  if (const auto err = engine_.inspect(name_, info); err.kind == Kind::kNotFound) {
    return attached_not_running(name_);
  } else if (!err.ok()) {
    return describe_failure(err, "inspecting container '" + name_ + "'");
  }
  if (!info.state.running) return attached_not_running(name_);
  std::string error;
  const std::string chosen = attached_user(name_, settings_.user, info.user, error);
  if (chosen.empty()) return error;
  if (auto err = check_attached_mounts(name_, init()->paths, info.mounts,
                                       settings_.attach_accept_writable_context);
      !err.empty())
    return err;
  // Its read-only mount of a protected path is only worth something if the path is still there.
  if (auto err = check_protected_paths(); !err.empty()) return err;
  {
    std::lock_guard lock(mutex_);
    user_ = {chosen, false,
             settings_.user.empty() ? "the container's own user" : "the 'user' setting"};
    access_granted_ = true;
  }
  return {};
}

std::string ContainerLifecycle::accept_attached_user(const sdk::ExecResult& r) {
  const std::string chosen = user();
  const auto at = r.stdout_data.find("uid=");
  const std::string uid = at == std::string::npos
                              ? ""
                              : r.stdout_data.substr(at + 4, r.stdout_data.find('\n', at) - at - 4);
  if (!r.error.empty() || uid.empty() || uid == "0") {
    std::lock_guard lock(mutex_);
    access_granted_ = false;
    if (uid == "0")
      return "user '" + chosen + "' is root (uid 0) in container " + name_ +
             ", and execmcp never runs commands as root: set 'user' to a non-root user";
    return "cannot run a command as user '" + chosen + "' in container " + name_ + ": " +
           (r.error.empty() ? trimmed(r.stderr_data + r.stdout_data) : r.error);
  }
  log(sdk::LogLevel::Info, "attached to container " + name_ +
                               " (not managed by execmcp), running "
                               "commands as user " +
                               chosen + " (uid " + uid + ")");
  return {};
}

std::string ContainerLifecycle::start() {
  try {
    return attached() ? start_attached() : start_managed();
  } catch (const std::exception& e) {
    return backend_name_ + " start failed: " + e.what();
  }
}

std::string ContainerLifecycle::check_runtime() {
  if (settings_.runtime.empty()) return {};
  RuntimeList runtimes;
  if (auto err = engine_.runtimes(runtimes); !err.ok()) {
    // A socket proxy refuses GET /info (it tells too much about the host). The engine's create
    // still refuses an unknown runtime in its own words; only a network needs the list.
    if (err.kind != Kind::kUnreachable && settings_.network == "none") {
      runtime_ = RuntimeProfile::unknown();  // it may be gVisor
      log(sdk::LogLevel::Info, "the engine's runtimes could not be listed (" + err.message +
                                   "); runtime '" + settings_.runtime +
                                   "' is checked when the container is created");
      return {};
    }
    return describe_failure(err, "listing the engine's runtimes (to check runtime '" +
                                     settings_.runtime + "' with network '" + settings_.network +
                                     "')");
  }
  const auto it = runtimes.find(settings_.runtime);
  // gVisor checks permissions itself, by mode bits: the ACL a root-owned workspace would get is
  // not honoured there (prepare_workspace_access() refuses it); its pids limit counts the
  // sandbox's threads (engine_pids_limit()).
  const bool gvisor = it != runtimes.end() && is_gvisor(it->second);
  runtime_ = gvisor ? RuntimeProfile::gvisor() : RuntimeProfile::runc();
  auto problem = runtime_problem({settings_.runtime, settings_.network, settings_.sudo}, runtimes,
                                 engine_.describe());
  if (problem.empty() && gvisor) {
    const auto limit = settings_.pids_limit;
    log(sdk::LogLevel::Info,
        "runtime '" + settings_.runtime + "' is gVisor: " +
            (limit > 0 ? "pids_limit " + std::to_string(limit) +
                             " is the agent's RLIMIT_NPROC and the engine's limit (which counts "
                             "the sandbox's own tasks) " +
                             std::to_string(engine_pids_limit(limit, true)) + "; "
                       : std::string()) +
            "a command's processes are found by their EXECMCP_TREE mark (no child subreaper); a "
            "running command learns from the engine's events that the container stopped (asks "
            "once a second where there are none)");
  }
  return problem;
}

std::string ContainerLifecycle::start_managed() {
  if (auto err = engine_.connect(); !err.ok())
    return describe_failure(err, "reaching the engine at " + engine_.describe());
  if (auto err = engine_.check_image(settings_.image); !err.ok()) {
    if (err.kind == Kind::kImageMissing)
      return "image '" + settings_.image + "' not found: " + kBuildHint;
    return describe_failure(err, "inspecting image '" + settings_.image + "'");
  }
  if (auto err = check_runtime(); !err.empty()) return err;
  // With egress the install goes through the proxy, so it runs once the proxy is up (below).
  if (!settings_.preinstall.empty() && !egress_)
    if (auto err = prepare_preinstall(); !err.empty()) return err;
  // Every execmcp container on the engine, looked up once for the whole start (each engine call
  // is a CLI run for docker-cli, over SSH a handshake each).
  std::vector<ContainerInfo> managed;
  if (auto err = list_managed(managed); !err.empty()) return err;
  // Before the ACL grant too: that would otherwise follow a symlinked workspace.
  ContainerSpec unused;
  if (auto err = checked_spec(unused, &managed); !err.empty()) return err;
  if (auto err = prepare_workspace_access(); !err.empty()) return err;
  if (auto err = refresh_credentials(); !err.empty()) return err;
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
  // A dead owner's egress network outlives its proxy only if a removal failed: looked for when
  // orphans were found or this agent has egress (one engine call fewer for every other start).
  if (orphans > 0 || egress_) remove_orphan_networks();
  if (!egress_) return create_and_start(&managed);
  // The proxy is up before the agent's container: its first command may use the network.
  if (auto err = egress_->start(owner_labels()); !err.empty()) return err;
  log(sdk::LogLevel::Info, "egress proxy " + egress_->proxy() + " running on network " +
                               egress_->network() +
                               " (upstream: " + settings_.egress->upstream_network + ")");
  // Followed from here on: a refusal of the install (preinstall goes through the proxy) is
  // audited too.
  egress_log_->start();
  std::string err = settings_.preinstall.empty() ? "" : prepare_preinstall();
  if (err.empty()) err = create_and_start(&managed);
  if (!err.empty()) {
    std::string refusal;  // a container of another sandbox under our name stays
    remove_own(engine_, name_, ownership(), refusal);
    egress_log_->stop();
    egress_->remove();
  }
  return err;
}

std::string ContainerLifecycle::prepare_preinstall() {
  const std::string base_ref = agent_image(settings_);
  ImageInfo base;
  if (auto err = engine_.image_info(base_ref, base); !err.ok()) {
    if (err.kind == Kind::kImageMissing) return "image '" + base_ref + "' not found: " + kBuildHint;
    return describe_failure(err, "inspecting image '" + base_ref + "'");
  }
  // The install runs its local files as root: none may lie where an agent (this one or another
  // running now) can write, checked again at each build as mount sources are at each start.
  std::vector<WritableRoot> roots;
  if (auto err = add_other_agents_roots(roots, nullptr); !err.empty()) return err;
  const auto own = writable_roots(*init(), settings_.extra_mounts);
  roots.insert(roots.end(), own.begin(), own.end());
  if (auto err = check_preinstall_inputs(settings_.preinstall, roots); !err.empty()) return err;
  const auto plan = plan_preinstall(settings_.preinstall);
  if (!plan.error.empty()) return plan.error;  // a file the config names: never "continue"
  const std::string key = preinstall_key(base.id, plan);
  const std::string tag = cache_tag(key);
  std::string image_id, failure;
  {
    std::lock_guard build(preinstall_build_mutex(key));
    ImageInfo cached;
    const auto looked = engine_.image_info(tag, cached);
    if (looked.ok() && cached.labels[kLabelCacheKey] == key) {
      image_id = cached.id;
      log(sdk::LogLevel::Info, "preinstall: using the cached image " + tag + " (" + image_id + ")");
    } else if (!looked.ok() && looked.kind != Kind::kImageMissing) {
      failure = describe_failure(looked, "inspecting image '" + tag + "'");
    } else {
      failure = build_preinstall(base, plan, key, image_id);
    }
  }
  if (failure.empty()) {
    std::lock_guard lock(preinstall_mutex_);
    preinstalled_image_ = image_id;
    pending_notice_.clear();
    return {};
  }
  if (!settings_.preinstall.continue_on_failure) return failure;
  // preinstall_on_failure: continue. The agent runs without its packages, and is told so.
  log(sdk::LogLevel::Warn,
      failure + "\n(preinstall_on_failure: continue: starting from " + base_ref + ")");
  std::lock_guard lock(preinstall_mutex_);
  preinstalled_image_.clear();
  pending_notice_ = failure + "\nThe container was started from '" + base_ref +
                    "' without these packages (preinstall_on_failure: continue).";
  return {};
}

std::string ContainerLifecycle::build_preinstall(const ImageInfo& base, const PreinstallPlan& plan,
                                                 const std::string& key, std::string& image_id) {
  InstallSpec spec;
  spec.name = kInstallNamePrefix + key.substr(0, 16) + "-" + random_marker().substr(0, 8);
  spec.image = base.id;
  // Root for the package managers; no "0:0" over an image whose user is root already, so that the
  // commit keeps its user as it was (the engine takes an empty one from the container).
  spec.user = base.user.empty() ? "" : "0:0";
  // network: egress: the install reaches out through the agent's proxy, under its policy (the
  // proxy is up: start_managed() starts it first).
  const auto exports = egress_ ? egress_client_env(kEgressProxyAlias) : std::vector<std::string>{};
  spec.cmd = {"/bin/sh", "-eu", "-c", "export HOME=/root\n" + preinstall_script(plan, exports)};
  spec.network = egress_ ? egress_->network() : settings_.network;
  spec.memory_bytes = settings_.memory_bytes;
  spec.pids_limit = settings_.pids_limit;
  log(sdk::LogLevel::Info,
      "preinstall: building " + cache_tag(key) + " from " + base.id + " in container " + spec.name);
  if (auto err = engine_.create_install(spec); !err.ok())
    return describe_failure(err, "creating the preinstall container '" + spec.name + "'");
  struct Remover {
    Engine& engine;
    const std::string& name;
    ~Remover() { engine.remove(name); }
  } remover{engine_, spec.name};
  if (!plan.files.empty())
    if (auto err = engine_.copy_into(spec.name, "/", preinstall_tar(plan)); !err.ok())
      return describe_failure(err, "copying preinstall's local files into '" + spec.name + "'");
  if (auto err = engine_.start(spec.name); !err.ok())
    return describe_failure(err, "starting the preinstall container '" + spec.name + "'");
  const bool ended = engine_.wait_stopped(spec.name, kPreinstallTimeout);
  std::string log_text;
  engine_.logs(spec.name, log_text);
  if (!ended)
    return "preinstall did not finish within " +
           std::to_string(std::chrono::minutes(kPreinstallTimeout).count()) + " minutes; " +
           preinstall_failure(log_text, -1);
  ContainerInfo info;
  if (auto err = engine_.inspect(spec.name, info); !err.ok())
    return describe_failure(err, "inspecting the preinstall container '" + spec.name + "'");
  if (info.state.exit_code != 0) return preinstall_failure(log_text, info.state.exit_code);
  CommitOptions commit;
  commit.repo = kCacheRepo;
  commit.tag = key.substr(0, 16);
  commit.user = base.user;
  commit.cmd = base.cmd;
  commit.entrypoint = base.entrypoint;
  commit.labels = {{kLabelCacheKey, key},
                   {kLabelCacheBase, base.id},
                   {kLabelCacheLists, lists_label(settings_.preinstall)}};
  if (auto err = engine_.commit(spec.name, commit, image_id); !err.ok())
    return describe_failure(err, "committing the preinstall container '" + spec.name + "'");
  log(sdk::LogLevel::Info, "preinstall: built " + cache_tag(key) + " (" + image_id + ")");
  return {};
}

std::string ContainerLifecycle::recover(std::vector<std::string>& notices, bool expected) {
  std::lock_guard lock(recover_mutex_);
  return recover_container(notices, expected ? sdk::LogLevel::Info : sdk::LogLevel::Warn);
}

std::string ContainerLifecycle::recover_container(std::vector<std::string>& notices,
                                                  sdk::LogLevel level) {
  if (auto err = engine_.connect(); !err.ok())
    return describe_failure(err, "reaching the engine at " + engine_.describe());
  if (attached()) {  // never started, created or removed by us: only looked at
    ContainerInfo info;
    const auto looked = engine_.inspect(name_, info);
    if (looked.ok() && info.state.running) return {};
    if (looked.ok() || looked.kind == Kind::kNotFound) return attached_not_running(name_);
    return describe_failure(looked, "inspecting container '" + name_ + "'");
  }
  if (auto err = prepare_workspace_access(); !err.empty()) return err;
  if (egress_) {
    // The agent's only way out comes back first (a suspended agent's proxy was stopped with it).
    std::string what;
    if (auto err = egress_->ensure_running(owner_labels(), what); !err.empty()) return err;
    if (!what.empty()) log(level, "container " + name_ + ": " + what);
    egress_log_->start();  // stopped with a suspended agent's proxy
  }
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
    oom_kills_seen_ = 0;
    if (engine_.start(id).ok()) {
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
  if (egress_) {
    if (auto stopped = egress_->stop(timeout); !stopped.empty()) return stopped;
    egress_log_->stop();  // after the proxy: its last lines are read first
  }
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
  {
    // A rename keeps each file's inode: the protected paths are the same files at new names.
    std::lock_guard lock(protected_mutex_);
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> rekeyed;
    for (const auto& [p, id] : protected_ids_)
      rekeyed.emplace(path_within(p, from) ? rebase_path(p, from, host_path) : p, id);
    protected_ids_ = std::move(rekeyed);
  }
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

std::string ContainerLifecycle::take_pending_notice() {
  std::lock_guard lock(preinstall_mutex_);
  return std::exchange(pending_notice_, std::string());
}

std::vector<std::string> ContainerLifecycle::call_env(
    const std::vector<std::pair<std::string, std::string>>& extra) const {
  std::vector<std::string> env;
  // A container we create has `env` in its config; an attached one gets it with each call.
  if (attached())
    for (const auto& [k, v] : settings_.env) env.push_back(k + "=" + v);
  // The secrets go with each call (the runner's stream, the exec's Env, the CLI child's
  // environment), never into the container's config: `docker inspect` cannot show them.
  const auto secrets = secret_env();
  env.insert(env.end(), secrets->begin(), secrets->end());
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
    if (egress_) {
      egress_log_->stop();
      if (auto err = egress_->remove(); !err.empty()) log(sdk::LogLevel::Warn, log_text(err));
    }
  } catch (...) {
    // cleanup never throws; the host may call it from a signal path.
  }
}

}  // namespace execmcp::plugins::docker_common
