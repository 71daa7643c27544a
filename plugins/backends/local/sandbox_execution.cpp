// See sandbox_execution.hpp. Every call takes the live channel (starting the sandbox when there is
// none), sends one runner call and waits for its end; a channel that broke under a call closes the
// sandbox, so the next call starts a new one.
#include "sandbox_execution.hpp"

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "command_environment.hpp"
#include "execmcp/sdk/log_text.hpp"
#include "runner_client/run_call.hpp"
#include "settings_hooks.hpp"
#include "skills_link.hpp"
#include "supervision/landlock_rules.hpp"
#include "supervision/program_path.hpp"
#include "workspace_acl/workspace_acl.hpp"

namespace execmcp::plugins::local {

namespace fs = std::filesystem;
namespace rp = supervision::runner;
using Clock = std::chrono::steady_clock;

namespace {

// How long a starting runner may take to say hello (a cold start on a loaded machine).
constexpr auto kHelloTimeout = std::chrono::seconds(15);
// How long a kill request may go unanswered before the sandbox is torn down under the call.
constexpr auto kKillGrace = std::chrono::seconds(15);
// How long a started background process may take to report its pid.
constexpr auto kPidTimeout = std::chrono::seconds(30);
// How long a file call may take (a write of the largest file the host accepts, on a slow disk).
constexpr auto kFileTimeout = std::chrono::seconds(120);
// How long the runner may take to leave after its channel closed, before its sandbox is killed.
constexpr auto kStopGrace = std::chrono::milliseconds(500);

constexpr const char* kSandboxPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
constexpr const char* kSandboxHome = "/home/agent";

// What every sandboxed command starts from: not the server's environment (it holds the server's
// own secrets), but a fixed one, with the host's locale.
std::map<std::string, std::string> sandbox_environment(const LocalSettings& settings) {
  std::map<std::string, std::string> env = {{"PATH", kSandboxPath}, {"HOME", kSandboxHome},
                                            {"USER", "agent"},      {"LOGNAME", "agent"},
                                            {"TMPDIR", "/tmp"},     {"TERM", "dumb"}};
  for (const char* name : {"LANG", "LC_ALL"})
    if (const char* value = std::getenv(name); value != nullptr) env[name] = value;
  // network: egress: the runner's relay to the sandbox's proxy (egress_proxy.hpp).
  if (settings.sandbox.network == SandboxNetworkSetting::kEgress)
    for (const auto& kv : sandbox::egress_client_env()) {
      const auto eq = kv.find('=');
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  return env;
}

bool within(const std::string& path, const std::string& dir) {
  return path == dir || dir == "/" ||
         (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
          path[dir.size()] == '/');
}

std::string canonical_or_empty(const std::string& path) {
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  return ec ? std::string() : real.lexically_normal().string();
}

// A file call's end in the tool's words: "" when it worked.
std::string file_failure(const char* verb, const std::string& path, const std::string& error,
                         const std::optional<rp::FileReport>& report) {
  if (!error.empty()) return error;
  if (report && !report->error.empty())
    return std::string("cannot ") + verb + " '" + path + "': " + report->error;
  return {};
}

}  // namespace

std::string choose_sandbox_user(const std::optional<uid_t>& configured,
                                const std::string& workspace, uid_t& uid, gid_t& gid) {
  if (configured && *configured == 0) return "sandbox.user must not be 0: never root";
  if (::geteuid() != 0) {
    // An unprivileged server cannot become anyone else: the sandbox is its own uid.
    uid = ::geteuid();
    gid = ::getegid();
    if (configured && *configured != uid)
      return "sandbox.user " + std::to_string(*configured) + " needs a server running as root " +
             "(this one runs as uid " + std::to_string(uid) + ", and so does its sandbox)";
    return {};
  }
  if (configured) {
    uid = *configured;
  } else {
    struct stat st {};
    if (::stat(workspace.c_str(), &st) != 0)
      return "cannot stat the workspace '" + workspace + "' to choose the sandbox user";
    uid = st.st_uid != 0 ? st.st_uid : 1000;
  }
  gid = static_cast<gid_t>(uid);
  if (const passwd* pw = ::getpwuid(uid); pw != nullptr && pw->pw_gid != 0) gid = pw->pw_gid;
  return {};
}

// One background process: a runner call that keeps no output and has no deadline. Its end comes
// from the channel (on_end), exactly once, or from terminate_background() when the runner does
// not answer (claim_end()).
struct SandboxExecution::Background final : runner_client::RunnerCallObserver {
  explicit Background(sdk::BackgroundObserver* o) : observer(o) {}

  void on_pid(long p) noexcept override {
    {
      std::lock_guard lock(mutex);
      pid = p;
    }
    cv.notify_all();
  }
  void on_output(sdk::StreamKind kind, std::string_view bytes) noexcept override {
    if (started()) observer->on_output(kind, bytes);
  }
  void on_end(const rp::DoneReport* report, const std::string& lost) noexcept override {
    sdk::BackgroundExit exit;
    if (report == nullptr) {
      exit.killed = terminating.load();
      exit.error = "the sandbox's runner ended; the process was killed with it";
    } else {
      const bool ours = report->killed || terminating.load();
      exit = runner_client::exit_of(report->exit_code, ours || report->signalled);
      exit.killed = ours;
      if (!report->error.empty()) exit.error = report->error;
    }
    finish(exit, report == nullptr ? lost : report->error);
  }
  void finish(const sdk::BackgroundExit& exit, const std::string& why) noexcept {
    if (started()) observer->on_exit(exit);
    {
      std::lock_guard lock(mutex);
      if (pid == 0) start_error = why.empty() ? "the process ended before it started" : why;
      ended = true;
    }
    cv.notify_all();
  }
  bool started() {
    std::lock_guard lock(mutex);
    return pid != 0;
  }
  bool wait(std::chrono::milliseconds wait, bool for_end) {
    std::unique_lock lock(mutex);
    return cv.wait_for(lock, wait, [&] { return ended || (!for_end && pid != 0); });
  }

  sdk::BackgroundObserver* observer;
  std::atomic<bool> terminating{false};
  std::weak_ptr<runner_client::RunnerChannel> channel;
  // Weak: the call holds this observer; the channel holds the call while it runs.
  std::weak_ptr<runner_client::RunnerCall> call;
  std::mutex mutex;
  std::condition_variable cv;
  long pid = 0;  // (mutex) the shell's pid, in the sandbox's pid namespace
  bool ended = false;
  std::string start_error;
};

SandboxExecution::SandboxExecution(const sdk::BackendInit& init, LocalSettings settings)
    : init_(init),
      grants_(init.paths.empty() ? std::vector<sdk::PathGrant>{{init.cwd, true}} : init.paths),
      settings_(std::move(settings)),
      runner_(supervision::program_beside_plugin("execmcp-runner")),
      shown_cwd_(init.sandbox_cwd.empty() ? init.cwd : init.sandbox_cwd),
      roots_(grant_roots(grants_)),
      refusal_notices_(settings_.sandbox.egress) {
  if (init_.cwd.empty()) throw std::invalid_argument("the agent has no cwd");
}

SandboxExecution::~SandboxExecution() {
  cleanup();
}

void SandboxExecution::log(sdk::LogLevel level, const std::string& message) const noexcept {
  if (init_.log != nullptr) init_.log->log(level, message);
}

std::string SandboxExecution::host_path(const std::string& shown) const {
  const std::string& at = init_.sandbox_cwd;
  if (at.empty() || shown.empty()) return shown;
  // A relative path is relative to where commands see the workspace: "../x" is "/x", not a
  // neighbour of the workspace on the host.
  std::string path = (fs::path(at) / shown).lexically_normal().string();
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  if (!within(path, at)) return path;
  const std::string rest = path.substr(at.size());  // "" or "/..."
  return rest.empty() ? init_.cwd : (fs::path(init_.cwd) / rest.substr(1)).string();
}

std::string SandboxExecution::shown_path(const std::string& host) const {
  if (init_.sandbox_cwd.empty()) return host;
  std::string workspace;
  {
    std::lock_guard lock(mutex_);
    if (roots_ && !roots_->empty()) workspace = roots_->front().canonical;
  }
  for (const std::string& dir : {workspace, init_.cwd}) {
    if (dir.empty() || dir == "/" || !within(host, dir)) continue;
    std::string shown = init_.sandbox_cwd + host.substr(dir.size());
    if (shown.size() > 1 && shown.back() == '/') shown.pop_back();
    return shown;
  }
  return host;
}

std::string SandboxExecution::shown_text(std::string text) const {
  if (init_.sandbox_cwd.empty()) return text;
  std::string workspace;
  {
    std::lock_guard lock(mutex_);
    if (roots_ && !roots_->empty()) workspace = roots_->front().canonical;
  }
  std::vector<std::string> dirs = {workspace, init_.cwd};
  std::sort(dirs.begin(), dirs.end(),
            [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const std::string& dir : dirs) {
    if (dir.empty() || dir == "/") continue;
    for (auto at = text.find(dir); at != std::string::npos;
         at = text.find(dir, at + init_.sandbox_cwd.size())) {
      const std::size_t end = at + dir.size();
      // Only the whole directory name: /srv/ws/alice, not /srv/ws/alice2.
      if (end < text.size() && text[end] != '/' && text[end] != '\'' && text[end] != ' ' &&
          text[end] != ':' && text[end] != '"' && text[end] != ')') {
        at += 1;
        continue;
      }
      text.replace(at, dir.size(), init_.sandbox_cwd);
    }
  }
  return text;
}

std::string SandboxExecution::check_sandbox_cwd(const std::vector<GrantRoot>& roots) const {
  const std::string& at = init_.sandbox_cwd;
  if (at.empty()) return {};
  const std::string said = "isolation: sandbox: sandbox_cwd '" + at + "' ";
  if (at[0] != '/' || at == "/" || fs::path(at).lexically_normal().string() != at)
    return said + "must be an absolute, normal path other than /";
  // Nothing else the sandbox shows may lie at, in or above the workspace's mount point.
  std::vector<std::string> others;
  for (std::size_t i = 1; i < roots.size(); ++i) others.push_back(roots[i].canonical);
  for (const std::string& dir : {init_.tools_dir, init_.skills_dir, init_.temp_workspace})
    others.push_back(dir.empty() ? std::string() : canonical_or_empty(dir));
  for (const auto& other : others)
    if (!other.empty() && (within(other, at) || within(at, other)))
      return said + "overlaps '" + other + "', which the sandbox shows at its host path";
  return {};
}

std::string SandboxExecution::start() {
  // Fail closed: no layer is silently left out, nor a limit the config asks for.
  if (auto problem = cached_sandbox_support().problem; !problem.empty())
    return "isolation: sandbox: " + problem;
  LimitsPlan limits = plan_limits(settings_.sandbox, sandbox::probe_cgroups());
  if (!limits.error.empty()) return "isolation: sandbox: " + limits.error;
  remove_leftover_sandbox_cgroups(init_.agent_id);
  {
    std::lock_guard lock(mutex_);
    limits_ = std::move(limits);
  }
  if (::access(runner_.c_str(), X_OK) != 0)
    return "isolation: sandbox: execmcp-runner is missing or not executable at " + runner_ +
           " (it is built and installed with the local plugin, in the directory above it)";
  std::error_code ec;
  fs::create_directories(init_.cwd, ec);
  if (ec) return "cannot create the agent's cwd '" + init_.cwd + "': " + ec.message();
  if (!fs::is_directory(init_.cwd, ec))
    return "the agent's cwd '" + init_.cwd + "' is not a directory";
  std::shared_ptr<const std::vector<GrantRoot>> roots;
  {
    std::lock_guard lock(mutex_);
    roots_ = grant_roots(grants_, roots_.get());
    roots = roots_;
  }
  if (auto why = check_sandbox_cwd(*roots); !why.empty()) return why;
  if (auto why = grant_access(*roots); !why.empty()) return why;
  {
    std::lock_guard lock(mutex_);
    started_ = true;
  }
  link_skills(init_);
  std::string why;
  if (!channel(why)) return why;
  return {};
}

std::string SandboxExecution::grant_access(const std::vector<GrantRoot>& roots) const {
  if (::geteuid() != 0) return {};  // the sandbox is the server's own uid
  uid_t uid = 0;
  gid_t gid = 0;
  if (auto why = choose_sandbox_user(settings_.sandbox.user, init_.cwd, uid, gid); !why.empty())
    return "isolation: sandbox: " + why;
  // As the Docker backends do for their container user: a grant the sandbox user does not own
  // gets an ACL for it (rwX on writable grants, r-X on the others, inherited by new files).
  for (const auto& root : roots) {
    struct stat st {};
    if (root.canonical.empty() || ::stat(root.canonical.c_str(), &st) != 0 || st.st_uid == uid)
      continue;
    if (auto err = workspace_acl::grant_acl_recursive(root.canonical, uid, root.writable);
        !err.empty())
      return "isolation: sandbox: cannot give the sandbox user " + std::to_string(uid) +
             " access to '" + root.configured + "': " + err;
  }
  // A per-user workspace lies in <workspace_root>/ (0700, the server's): bubblewrap, running as
  // the sandbox user, must pass through it to mount the workspace, and no more (no listing).
  if (!init_.sandbox_cwd.empty() && !roots.empty() && !roots.front().canonical.empty()) {
    const std::string parent = fs::path(roots.front().canonical).parent_path().string();
    struct stat st {};
    if (::stat(parent.c_str(), &st) == 0 && st.st_uid != uid && (st.st_mode & S_IXOTH) == 0) {
      if (auto err = workspace_acl::grant_traverse_acl(parent, uid); !err.empty())
        return "isolation: sandbox: cannot let the sandbox user " + std::to_string(uid) +
               " pass through the workspace root '" + parent + "': " + err;
    }
  }
  return {};
}

sandbox::SandboxSpec SandboxExecution::sandbox_spec(const std::vector<GrantRoot>& roots) const {
  sandbox::SandboxSpec spec;
  for (const auto& root : roots) {
    // A grant that does not exist grants nothing (as on the host); the workspace exists by now.
    if (root.canonical.empty() || canonical_or_empty(root.canonical) != root.canonical) continue;
    // The workspace (the first grant) at sandbox_cwd when the host gives one.
    const bool workspace = &root == &roots.front() && !init_.sandbox_cwd.empty();
    spec.mounts.push_back(
        {root.canonical, workspace ? init_.sandbox_cwd : root.canonical, root.writable});
    // Each protected path by its real path (grant_roots() holds it as written and as resolved);
    // one that does not exist has nothing to protect yet.
    for (const auto& p : root.protected_paths)
      if (within(p, root.canonical) && canonical_or_empty(p) == p)
        spec.protected_paths.push_back(p);
  }
  auto in_a_mount = [&](const std::string& path) {
    for (const auto& m : spec.mounts)
      if (within(path, m.source)) return true;
    return false;
  };
  // The tools, skills and shared temp workspace: read-only, where commands expect them.
  for (const std::string& dir : {init_.tools_dir, init_.skills_dir, init_.temp_workspace}) {
    const std::string real = dir.empty() ? std::string() : canonical_or_empty(dir);
    if (!real.empty() && !in_a_mount(real)) spec.mounts.push_back({real, real, false});
  }
  std::sort(spec.protected_paths.begin(), spec.protected_paths.end());
  spec.protected_paths.erase(std::unique(spec.protected_paths.begin(), spec.protected_paths.end()),
                             spec.protected_paths.end());
  // The server's own files never show, even inside a grant: the plugins and their programs, the
  // backend's log directory.
  const std::string lib_dir = fs::path(runner_).parent_path().string();
  for (const std::string& dir : {lib_dir, init_.log_dir}) {
    const std::string real = dir.empty() ? std::string() : canonical_or_empty(dir);
    if (!real.empty()) spec.private_paths.push_back(real);
  }
  spec.program = runner_;
  spec.args = {rp::kChannelArg};
  for (const auto& [name, value] : sandbox_environment(settings_))
    spec.env.emplace_back(name, value);
  spec.work_dir = init_.sandbox_cwd.empty() ? canonical_or_empty(init_.cwd) : init_.sandbox_cwd;
  switch (settings_.sandbox.network) {
    case SandboxNetworkSetting::kNone:
      spec.network = sandbox::SandboxNetwork::kNone;
      break;
    case SandboxNetworkSetting::kHost:
      spec.network = sandbox::SandboxNetwork::kHost;
      break;
    case SandboxNetworkSetting::kEgress:
      spec.network = sandbox::SandboxNetwork::kEgress;  // egress_socket: open_sandbox_locked()
      break;
  }
  spec.home = kSandboxHome;
  spec.landlock_max_abi = settings_.sandbox.landlock_max_abi;
  spec.max_processes = settings_.sandbox.max_processes;
  return spec;
}

std::string SandboxExecution::open_sandbox_locked(Channel& out) {
  if (!started_) return "the local backend's sandbox is not started (start() first)";
  sandbox::SandboxSpec spec = sandbox_spec(*roots_);
  if (auto why = choose_sandbox_user(settings_.sandbox.user, init_.cwd, spec.uid, spec.gid);
      !why.empty())
    return "isolation: sandbox: " + why;
  std::string error;
  // Its cgroup of its own, joined by bubblewrap's process and the egress proxy before they run
  // (declared first: whatever fails below, the sandbox and its proxy end first, then it goes).
  std::string limits_warning = limits_.warning;
  auto cgroup = make_sandbox_cgroup(limits_, sandbox_cgroup_name(init_.agent_id, init_.instance_id),
                                    error, limits_warning);
  if (!error.empty()) return "isolation: sandbox: " + error;
  if (cgroup) spec.cgroup_procs = cgroup->procs_fds();
  std::unique_ptr<sandbox::EgressProxy> egress;
  if (spec.network == sandbox::SandboxNetwork::kEgress) {
    egress = start_egress_proxy(spec.uid, spec.gid, spec.cgroup_procs, error);
    if (!egress) return "isolation: sandbox, network: egress: " + error;
    spec.egress_socket = egress->socket_path();
  }
  auto process = sandbox::SandboxProcess::start(spec, error);
  if (!process) return "isolation: sandbox: " + error;
  const int fd = process->take_channel_fd();
  const int diagnostics = process->take_diagnostics_fd();
  auto ends = runner_client::ChannelEnds::raw(fd, fd, diagnostics);
  ends.peer = "the sandbox";
  auto channel = std::make_shared<runner_client::RunnerChannel>(
      std::move(ends), [this](sdk::LogLevel level, const std::string& line) {
        log(level, "local: execmcp-runner in the sandbox of " + init_.agent_id + ": " + line);
      });
  if (auto why = channel->wait_ready(kHelloTimeout); !why.empty()) {
    channel.reset();
    process->stop(std::chrono::milliseconds(0));
    return "isolation: sandbox: " + why;
  }
  const int abi = supervision::landlock::kernel_abi();
  const int used = spec.landlock_max_abi > 0 ? std::min(spec.landlock_max_abi, abi) : abi;
  const char* network = spec.network == sandbox::SandboxNetwork::kHost     ? "host"
                        : spec.network == sandbox::SandboxNetwork::kEgress ? "egress"
                                                                           : "none";
  log(sdk::LogLevel::Info, "local: the sandbox of " + init_.agent_id + " is ready (uid " +
                               std::to_string(spec.uid) + ", network " + network + ", Landlock " +
                               (used >= 2 ? "ABI " + std::to_string(used) : "not applied") +
                               ", limits: " + (cgroup ? limits_.summary : std::string("none")) +
                               ")");
  if (!limits_warning.empty())
    log(sdk::LogLevel::Warn, "local: the sandbox of " + init_.agent_id + ": " + limits_warning);
  cgroup_ = std::move(cgroup);
  process_ = std::move(process);
  egress_ = std::move(egress);
  channel_ = channel;
  out = std::move(channel);
  return {};
}

SandboxExecution::Channel SandboxExecution::channel(std::string& why) {
  std::unique_lock lock(mutex_);
  if (channel_ && channel_->alive()) return channel_;
  if (channel_) {
    log(sdk::LogLevel::Warn, "local: the sandbox of " + init_.agent_id + " is gone (" +
                                 sdk::log_text(channel_->failure()) + "); starting a new one");
  }
  // Whatever is left of the old one goes first.
  channel_.reset();
  if (process_) process_->stop(kStopGrace);
  process_.reset();
  if (egress_) egress_->stop();  // a call may still hold it (settle() returns at once)
  egress_.reset();
  release_cgroup(std::exchange(cgroup_, nullptr));  // once its processes are gone
  Channel out;
  why = open_sandbox_locked(out);
  return out;
}

void SandboxExecution::release_cgroup(
    std::shared_ptr<sandbox::SandboxCgroup> cgroup) const noexcept {
  if (!cgroup) return;
  if (auto why = cgroup->remove(); !why.empty())
    log(sdk::LogLevel::Warn, "local: the sandbox of " + init_.agent_id + ": " + why);
}

void SandboxExecution::close_sandbox() noexcept {
  std::unique_ptr<sandbox::SandboxProcess> process;
  std::shared_ptr<sandbox::EgressProxy> egress;
  std::shared_ptr<sandbox::SandboxCgroup> cgroup;
  Channel channel;
  {
    std::lock_guard lock(mutex_);
    process.swap(process_);
    egress.swap(egress_);
    cgroup.swap(cgroup_);
    channel.swap(channel_);
  }
  channel.reset();  // EOF on its input: the runner kills every call and its pool, and exits
  if (process) process->stop(kStopGrace);
  if (egress) {
    egress->stop();  // after the sandbox: nothing uses it any more
    deliver_summary(true);
  }
  release_cgroup(std::move(cgroup));  // once its processes (the proxy's too) are gone
}

sdk::NetworkEvents* SandboxExecution::network_events() noexcept {
  if (settings_.sandbox.network != SandboxNetworkSetting::kEgress) return nullptr;
  return this;
}

void SandboxExecution::subscribe(sdk::NetworkEventSink* sink) noexcept {
  std::lock_guard lock(events_mutex_);
  events_sink_ = sink;
}

void SandboxExecution::deliver_refusal(const docker_common::EgressLogRecord& record) noexcept {
  sdk::NetworkEvent event;
  event.host = sdk::log_text(record.host, 255);
  event.port = record.port;
  event.method = sdk::log_text(record.method, 32);
  event.refused = true;
  event.reason = docker_common::kEgressRefusalReason;
  event.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  std::lock_guard lock(events_mutex_);
  refusal_notices_.add(event.host + ":" + std::to_string(event.port));
  const auto now = std::chrono::steady_clock::now();
  if (refusal_budget_.admit(event, now, refusal_counts_) && events_sink_ != nullptr)
    events_sink_->on_network_event(event);
  if (auto summary = refusal_budget_.summary(now, false, refusal_counts_);
      summary && events_sink_ != nullptr)
    events_sink_->on_network_event(*summary);
}

void SandboxExecution::deliver_summary(bool stopping) noexcept {
  std::lock_guard lock(events_mutex_);
  if (auto summary =
          refusal_budget_.summary(std::chrono::steady_clock::now(), stopping, refusal_counts_);
      summary && events_sink_ != nullptr)
    events_sink_->on_network_event(*summary);
}

SandboxExecution::EgressMark SandboxExecution::egress_mark() {
  EgressMark mark;
  if (settings_.sandbox.network != SandboxNetworkSetting::kEgress) return mark;
  {
    std::lock_guard lock(mutex_);
    mark.proxy = egress_;
  }
  if (mark.proxy) mark.connections = mark.proxy->connections();
  std::lock_guard lock(events_mutex_);
  mark.refusals = refusal_notices_.mark();
  return mark;
}

void SandboxExecution::add_egress_notice(const EgressMark& mark, sdk::ExecResult& result) {
  if (settings_.sandbox.network != SandboxNetworkSetting::kEgress) return;
  std::shared_ptr<sandbox::EgressProxy> proxy;
  {
    std::lock_guard lock(mutex_);
    proxy = egress_;
  }
  // A command that opened no connection to the proxy waits for nothing.
  if (proxy && (proxy != mark.proxy || proxy->connections() != mark.connections))
    proxy->settle(docker_common::kEgressNoticeQuiet);
  std::string notice;
  {
    std::lock_guard lock(events_mutex_);
    notice = refusal_notices_.notice(mark.refusals);
  }
  if (!notice.empty()) result.notices.push_back(std::move(notice));
}

std::unique_ptr<sandbox::EgressProxy> SandboxExecution::start_egress_proxy(
    uid_t uid, gid_t gid, const std::vector<int>& cgroup_procs, std::string& error) {
  sandbox::EgressProxySpec spec;
  spec.cgroup_procs = cgroup_procs;
  spec.policy = settings_.sandbox.egress;
  spec.agent_label = init_.agent_id;
  spec.uid = uid;
  spec.gid = gid;
  if (const char* hosts = std::getenv("EXECMCP_TEST_EGRESS_HOSTS_FILE"); hosts != nullptr)
    spec.hosts_file = hosts;  // the tests' local "internet" (egress_proxy_test.cpp)
  // Each refusal is said in the backend's log (one line per request: the proxy's own budget is
  // the Docker backends'; here the log is the record).
  spec.on_record = [this](const docker_common::EgressLogRecord& record) {
    if (!record.refused) return;
    log(sdk::LogLevel::Warn, "local: the egress proxy of " + init_.agent_id + " refused " +
                                 sdk::log_text(record.method) + " " + sdk::log_text(record.host) +
                                 ":" + std::to_string(record.port) + " (not in egress.allow)");
    deliver_refusal(record);
  };
  return sandbox::EgressProxy::start(spec, error);
}

void SandboxExecution::stop() noexcept {
  stops_.fetch_add(1);
  stop_background();
  {
    std::unique_lock lock(running_mutex_);
    // Each execute() sends its kill within 50 ms; the runner ends the tree and reports.
    running_done_.wait_for(lock, std::chrono::seconds(10), [this] { return running_ == 0; });
  }
  close_sandbox();  // a later call starts a new one
}

void SandboxExecution::cleanup() noexcept {
  stop();
  std::lock_guard lock(mutex_);
  started_ = false;
}

std::string SandboxExecution::work_dir_of(const std::string& requested,
                                          std::string& work_dir) const {
  std::shared_ptr<const std::vector<GrantRoot>> roots;
  {
    std::lock_guard lock(mutex_);
    roots = roots_;
  }
  Location location = locate(host_path(requested), init_.cwd, *roots, sdk::Access::Read);
  if (!location.error.empty()) return shown_text("work_dir: " + location.error);
  work_dir = (fs::path((*roots)[location.grant].canonical) / location.relative)
                 .lexically_normal()
                 .string();
  if (work_dir.size() > 1 && work_dir.back() == '/') work_dir.pop_back();
  return {};
}

sdk::ExecResult SandboxExecution::execute(const sdk::ExecRequest& request) {
  sdk::ExecResult result;
  const auto started = Clock::now();
  const std::uint64_t stops = stops_.load();
  if (request.command.find('\0') != std::string::npos) {
    result.error = "the command contains a NUL byte";
    return result;
  }
  std::string work_dir;
  if (result.error = work_dir_of(request.work_dir, work_dir); !result.error.empty()) return result;
  PreparedCommand prepared;
  result.error =
      prepare_command(settings_, init_.cwd, request.command, request.env, work_dir, prepared);
  if (!result.error.empty()) {
    result.error = shown_text(result.error);
    return result;
  }
  if (prepared.venv) prepared.venv = shown_path(prepared.venv->string());
  work_dir = shown_path(work_dir);
  rp::RunSpec run;
  run.output_cap = request.output_cap;
  run.work_dir = work_dir;
  run.shell = settings_.shell;
  run.command = prepared.command;
  run.env =
      command_environment(sandbox_environment(settings_), settings_, prepared.venv, request.env);

  {
    std::lock_guard lock(running_mutex_);
    ++running_;
  }
  struct Done {
    SandboxExecution& self;
    ~Done() {
      {
        std::lock_guard lock(self.running_mutex_);
        --self.running_;
      }
      self.running_done_.notify_all();
    }
  } done{*this};

  const EgressMark egress = egress_mark();
  for (int attempt = 0; attempt < 2; ++attempt) {
    result = {};
    std::string why;
    Channel ch = channel(why);
    if (!ch) {
      result.error = why;
      return result;
    }
    // The sandbox's OOM count before the call: a SIGKILL it recorded a kill under is the limit's.
    std::shared_ptr<sandbox::SandboxCgroup> cgroup;
    std::optional<std::int64_t> memory_limit;
    {
      std::lock_guard lock(mutex_);
      cgroup = cgroup_;
      memory_limit = limits_.limits.memory_bytes;
    }
    const std::optional<long> oom_before = cgroup ? cgroup->oom_kills() : std::nullopt;
    std::string error;
    auto call = ch->start(run, nullptr, error);
    if (!call) {
      if (ch->alive()) {  // refused by us (too long), not a broken channel
        result.error = error;
        return result;
      }
      continue;  // the next attempt starts a new sandbox
    }
    runner_client::RunWatch watch;
    watch.output_cap = request.output_cap;
    watch.sink = request.sink;
    watch.cancel = request.cancel;
    if (request.timeout.count() > 0) watch.deadline = started + request.timeout;
    watch.backend_stopped = [&] { return stops_.load() != stops; };
    watch.kill_grace = kKillGrace;
    const auto end = runner_client::watch_run(*ch, *call, watch, result);
    if (end == runner_client::RunEnd::kReported && call->done()->not_run && attempt == 0 &&
        stops_.load() == stops) {
      // The runner saw the sandbox's init exiting (the sandbox going down): not started, so
      // sent once more (in a new sandbox if this one went).
      continue;
    }
    if (end == runner_client::RunEnd::kReported) {
      runner_client::apply_report(*call->done(), result);
      if (result.exit_code == 128 + SIGKILL && oom_before) {
        const std::optional<long> oom_after = cgroup->oom_kills();
        if (oom_after && *oom_after > *oom_before)
          result.notices.push_back(memory_limit_notice(memory_limit));
      }
    } else if (end == runner_client::RunEnd::kLost && !call->started()) {
      continue;  // never ran: once more, in a new sandbox
    } else {
      // The runner died under the call (a command may have killed it) or stopped answering: the
      // sandbox goes, and everything in it with it; the next call starts a new one.
      close_sandbox();
      result.exit_code = -1;
      result.notices.push_back(
          end == runner_client::RunEnd::kLost
              ? "execmcp-runner, the agent in the sandbox, ended during the command (" +
                    call->lost() +
                    "): a command may have killed it; the command's exit code is unknown, and "
                    "the next call starts a new sandbox"
              : "execmcp-runner did not answer the kill request in time; the sandbox was "
                "stopped with everything in it, and the next call starts a new one");
    }
    add_egress_notice(egress, result);
    if (result.error.empty()) result.work_dir = work_dir;
    result.duration_seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return result;
  }
  result.error = "the sandbox's runner ended twice before it could take the call";
  return result;
}

SandboxExecution::FileCall SandboxExecution::run_file(const rp::FileRequest& request,
                                                      const std::string* input, std::size_t cap,
                                                      const sdk::CancelToken* cancel) {
  FileCall out;
  const std::uint64_t stops = stops_.load();
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string why;
    Channel ch = channel(why);
    if (!ch) {
      out.error = why;
      return out;
    }
    auto call = ch->start_file(request, input, cap, out.error);
    if (!call) {
      if (ch->alive()) return out;
      out.error.clear();
      continue;
    }
    const auto deadline = Clock::now() + kFileTimeout;
    std::vector<runner_client::RunnerCall::Chunk> chunks;
    bool over = false;
    bool abandoned = false;
    while (!over && !abandoned && Clock::now() < deadline) {
      over = call->wait(std::chrono::milliseconds(50), chunks);
      abandoned =
          !over && ((cancel != nullptr && cancel->cancel_requested()) || stops_.load() != stops);
    }
    call->wait(std::chrono::milliseconds(0), chunks);  // what came with the end
    for (auto& c : chunks)
      if (c.kind == sdk::StreamKind::Stdout) out.data += c.data;
    out.dropped = call->dropped(sdk::StreamKind::Stdout);
    if (call->file_done()) {
      out.report = *call->file_done();
      return out;
    }
    ch->forget(*call);
    if (abandoned || !over) {
      out.data.clear();
      out.error = abandoned ? "cancelled"
                            : "execmcp-runner did not answer the file call within " +
                                  std::to_string(kFileTimeout.count()) + " s";
      return out;
    }
    out.data.clear();  // the channel broke: once more, in a new sandbox
  }
  out.error = "the sandbox's runner ended twice before it could take the call";
  return out;
}

sdk::FileReadResult SandboxExecution::read_file(const sdk::FileReadRequest& request) {
  sdk::FileReadResult result;
  if (request.cancel != nullptr && request.cancel->cancel_requested()) {
    result.error = "cannot read '" + request.path + "': cancelled";
    return result;
  }
  std::shared_ptr<const std::vector<GrantRoot>> roots;
  {
    std::lock_guard lock(mutex_);
    roots = roots_;
  }
  // Which grant, lexically (a clear refusal); the sandbox's mounts decide the rest, as the
  // sandbox user, symlinks included.
  if (auto location = locate(host_path(request.path), init_.cwd, *roots, sdk::Access::Read);
      !location.error.empty()) {
    result.error = shown_text(location.error);
    return result;
  }
  rp::FileRequest call;
  call.op = rp::FileOp::kRead;
  call.cwd = shown_cwd_;
  call.path = shown_path(host_path(request.path));
  call.max_bytes = request.max_bytes;
  auto r = run_file(call, nullptr, request.max_bytes + 1, request.cancel);
  if (r.error == "cancelled") r.error = "cannot read '" + request.path + "': cancelled";
  result.error = file_failure("read", request.path, r.error, r.report);
  if (!result.error.empty()) return result;
  result.data = std::move(r.data);
  result.truncated = r.report->truncated || r.dropped || result.data.size() > request.max_bytes;
  if (result.data.size() > request.max_bytes) result.data.resize(request.max_bytes);
  return result;
}

sdk::FileWriteResult SandboxExecution::write_file(const sdk::FileWriteRequest& request) {
  sdk::FileWriteResult result;
  if (request.cancel != nullptr && request.cancel->cancel_requested()) {
    result.error = "cannot write '" + request.path + "': cancelled; the file was left as it was";
    return result;
  }
  std::shared_ptr<const std::vector<GrantRoot>> roots;
  {
    std::lock_guard lock(mutex_);
    roots = roots_;
  }
  // Read-only grants and protected paths as written are refused here with the host's words; the
  // mounts (read-only, protected paths unmovable) refuse whatever a symlink leads to.
  if (auto location = locate(host_path(request.path), init_.cwd, *roots, sdk::Access::Write);
      !location.error.empty()) {
    result.error = shown_text(location.error);
    return result;
  }
  rp::FileRequest call;
  call.op = rp::FileOp::kWrite;
  call.cwd = shown_cwd_;
  call.path = shown_path(host_path(request.path));
  auto r = run_file(call, &request.data, 4096, request.cancel);
  if (r.error == "cancelled") r.error = "cannot write '" + request.path + "': cancelled";
  result.error = file_failure("write", request.path, r.error, r.report);
  if (result.error.empty()) result.bytes_written = request.data.size();
  return result;
}

sdk::BackgroundStarted SandboxExecution::start_background(
    const sdk::BackgroundRequest& request, sdk::BackgroundObserver* observer) noexcept {
  sdk::BackgroundStarted started;
  try {
    if (observer == nullptr) {
      started.error = "no observer for the background process";
      return started;
    }
    if (request.command.find('\0') != std::string::npos) {
      started.error = "the command contains a NUL byte";
      return started;
    }
    std::string work_dir;
    if (started.error = work_dir_of(request.work_dir, work_dir); !started.error.empty())
      return started;
    PreparedCommand prepared;
    started.error =
        prepare_command(settings_, init_.cwd, request.command, request.env, work_dir, prepared);
    if (!started.error.empty()) {
      started.error = shown_text(started.error);
      return started;
    }
    if (prepared.venv) prepared.venv = shown_path(prepared.venv->string());
    work_dir = shown_path(work_dir);
    rp::RunSpec run;
    run.output_cap = 0;
    run.retain_output = false;
    run.work_dir = work_dir;
    run.shell = settings_.shell;
    run.command = prepared.command;
    run.env =
        command_environment(sandbox_environment(settings_), settings_, prepared.venv, request.env);
    Channel ch = channel(started.error);
    if (!ch) return started;
    auto bg = std::make_shared<Background>(observer);
    auto call = ch->start(run, nullptr, started.error, bg);
    if (!call) return started;
    bg->channel = ch;
    bg->call = call;
    if (!bg->wait(kPidTimeout, false)) {
      if (call->claim_end()) {  // never reported running: ended here, quietly
        ch->forget(*call);
        ch->kill(*call);
        started.error = "the background process did not report that it runs within " +
                        std::to_string(kPidTimeout.count()) + " s";
        return started;
      }
      bg->wait(std::chrono::hours(1), true);
    }
    {
      std::lock_guard lock(bg->mutex);
      if (bg->pid == 0) {
        started.error =
            bg->start_error.empty() ? "the background process did not start" : bg->start_error;
        return started;
      }
      started.pid = bg->pid;
    }
    std::lock_guard lock(background_mutex_);
    std::erase_if(background_, [](const auto& entry) {
      std::lock_guard l(entry.second->mutex);
      return entry.second->ended;
    });
    started.id = next_background_id_++;
    started.work_dir = work_dir;
    background_.emplace(started.id, bg);
    return started;
  } catch (const std::exception& e) {
    started = {};
    started.error = std::string("cannot start the background process: ") + e.what();
  } catch (...) {
    started = {};
    started.error = "cannot start the background process";
  }
  return started;
}

void SandboxExecution::terminate_background(std::uint64_t id,
                                            std::chrono::milliseconds grace) noexcept {
  std::shared_ptr<Background> bg;
  {
    std::lock_guard lock(background_mutex_);
    const auto it = background_.find(id);
    if (it == background_.end()) return;
    bg = it->second;
  }
  bg->terminating = true;
  auto call = bg->call.lock();
  if (!call) return;  // it has ended: its on_exit() came
  if (auto ch = bg->channel.lock()) ch->kill(*call, grace);
  if (bg->wait(grace + kKillGrace, true)) return;
  // The runner did not answer: the sandbox goes with everything in it, and the host is told here.
  if (auto ch = bg->channel.lock()) ch->forget(*call);
  close_sandbox();
  if (call->claim_end()) {
    sdk::BackgroundExit exit;
    exit.killed = true;
    exit.signal = SIGKILL;
    bg->finish(exit, {});
  }
}

std::string SandboxExecution::suspend() noexcept {
  stop();  // every process ends (background ones with their on_exit()); the files stay
  return {};
}

std::string SandboxExecution::resume() noexcept {
  try {
    std::string why;
    if (!channel(why)) return why.empty() ? "the sandbox did not start" : why;
    return {};
  } catch (const std::exception& e) {
    return std::string("cannot start the sandbox again: ") + e.what();
  }
}

std::string SandboxExecution::relocate_workspace(const std::string& moved_to) noexcept {
  // A sandbox is made in milliseconds: there is nothing to keep warm (per_user.warm).
  (void)moved_to;
  return "the local sandbox does not move its workspace (it needs no warm pool: a new one "
         "starts in milliseconds)";
}

void SandboxExecution::stop_background() noexcept {
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard lock(background_mutex_);
    for (const auto& [id, bg] : background_) ids.push_back(id);
  }
  for (auto id : ids) terminate_background(id, std::chrono::milliseconds(0));
  std::lock_guard lock(background_mutex_);
  background_.clear();
}

}  // namespace execmcp::plugins::local
