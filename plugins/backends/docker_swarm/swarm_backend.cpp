// The docker-swarm backend's facade (swarm_backend.hpp): the ExecutorBackend calls turned into
// runner calls on the sandbox's channel, and the sandbox's life into the lifecycle's.
#include "docker_swarm/swarm_backend.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <random>
#include <set>
#include <sstream>

#include "docker_client/docker_endpoint.hpp"
#include "docker_common/commands/background_calls.hpp"
#include "docker_common/commands/container_files.hpp"
#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "docker_common/log_text.hpp"

namespace execmcp::plugins::docker_swarm {
namespace {

namespace dc = docker_common;
namespace fs = std::filesystem;

constexpr const char* kBackendName = "docker-swarm";

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// Docker names a container's hostname after its short id unless told otherwise.
std::string own_container() {
  std::error_code ec;
  return fs::exists("/.dockerenv", ec) ? host_name() : std::string();
}

// This server process's run (kLabelOwnerRun): random, made once, the same for every sandbox of
// every agent of the process.
const std::string& own_run() {
  static const std::string run = [] {
    std::random_device random;
    std::ostringstream out;
    out << std::hex << std::setfill('0');
    for (int i = 0; i < 4; ++i) out << std::setw(8) << random();
    return out.str();
  }();
  return run;
}

// This process's PID namespace as /proc names it ("pid:[4026531836]"), or "" when it cannot tell.
std::string own_pid_namespace() {
  std::error_code ec;
  const auto target = fs::read_symlink("/proc/self/ns/pid", ec);
  return ec ? std::string() : target.string();
}

std::string engine_of(const SwarmSettings& s) {
  return docker_client::select_docker_host(s.docker_host, std::getenv("DOCKER_HOST"));
}

// [A-Za-z0-9_.-] kept, anything else '-': a service name Swarm takes.
std::string service_name_of(const sdk::BackendInit& init) {
  std::string name = "execmcp-" + init.agent_id + "-" + init.instance_id;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '-';
  return bounded_name(name, 63);
}

// Whether `path` is `root` or lies under it, lexically (both normalized).
bool within(const fs::path& path, const fs::path& root) {
  std::string r = root.lexically_normal().string();
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  std::string p = path.lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p == r || p.starts_with(r == "/" ? r : r + "/");
}

}  // namespace

LifecycleConfig lifecycle_config(const sdk::BackendInit& init, const SwarmSettings& settings) {
  LifecycleConfig c;
  ServiceSettings& s = c.service;
  s.name = service_name_of(init);
  s.agent_id = init.agent_id;
  s.instance_id = init.instance_id;
  s.owner_pid = ::getpid();
  s.owner_host = settings.owner_id.empty() ? host_name() : settings.owner_id;
  s.owner_run = own_run();
  s.owner_pidns = own_pid_namespace();
  s.image = settings.image;
  for (const auto& [k, v] : settings.env) s.env.push_back(k + "=" + v);
  s.memory_bytes = settings.memory_bytes;
  s.pids_limit = settings.pids_limit;
  s.cpus = settings.cpus;
  s.reserve_memory_bytes = settings.reserve_memory_bytes;
  s.reserve_cpus = settings.reserve_cpus;
  s.constraints = settings.constraints;
  s.tmpfs_bytes = settings.tmpfs_bytes;
  s.work_dir = kSwarmWorkspace;
  // A per-user sandbox's workspace is <workspace_root>/<user key> on the host.
  if (!init.sandbox_cwd.empty()) s.user_key = fs::path(init.cwd).filename().string();
  c.server_container =
      settings.server_container.empty() ? own_container() : settings.server_container;
  c.encrypted = settings.encrypted;
  c.engine = engine_of(settings);
  c.record_dir = init.cwd;
  c.start_timeout = settings.start_timeout;
  return c;
}

SwarmBackend::SwarmBackend(const sdk::BackendInit& init, std::unique_ptr<SwarmTransport> transport)
    : init_(init),
      settings_(parse_swarm_settings(init.settings_json)),
      transport_(transport ? std::move(transport)
                           : std::make_unique<EngineTransport>(
                                 docker_client::parse_docker_host(engine_of(settings_)))),
      api_(*transport_),
      lifecycle_(api_, lifecycle_config(init, settings_),
                 [log = init.log](sdk::LogLevel level, const std::string& line) {
                   if (log != nullptr) log->log(level, line);
                 }),
      site_(lifecycle_),
      probe_(lifecycle_),
      commands_(site_, nullptr, probe_),
      host_cwd_(init.cwd) {}

SwarmBackend::~SwarmBackend() {
  dc::end_all_background_on(background_, commands_, std::chrono::milliseconds(0));
}

std::string SwarmBackend::check_grants() const {
  if (init_.paths.size() > 1)
    return std::string(kBackendName) + ": context paths (" + init_.paths[1].path +
           ") are host paths no swarm node has: not on docker-swarm yet";
  for (const auto& g : init_.paths)
    if (!g.protected_paths.empty())
      return std::string(kBackendName) + ": protected paths (" + g.protected_paths.front() +
             ") need a read-only sub-mount of the workspace volume (VolumeOptions.Subpath, Engine "
             "API 1.45), which Engine API 1.41 has not: not on docker-swarm yet";
  if (lifecycle_.config().server_container.empty())
    return std::string(kBackendName) +
           ": set server_container: the server must run in a container on a swarm manager, which "
           "is connected to each sandbox's network (docs/deployment.md)";
  return {};
}

std::string SwarmBackend::start() {
  try {
    if (auto why = check_grants(); !why.empty()) return why;
    if (auto why = lifecycle_.check_manager(); !why.empty()) return why;
    {  // Once per process and owner id: each sandbox would list the same objects again.
      static std::mutex mutex;
      static std::set<std::string> swept;
      std::lock_guard lock(mutex);
      const auto key = lifecycle_.config().engine + "|" + lifecycle_.config().service.owner_host;
      if (swept.insert(key).second) lifecycle_.sweep_orphans();
    }
    std::vector<std::string> notices;
    // A second start adopts the sandbox the first made (brought back if it stopped or moved).
    NodeInfo node;
    const bool made = lifecycle_.state(node) != SandboxState::kGone;
    if (auto why = made ? lifecycle_.recover(notices) : lifecycle_.place(notices); !why.empty())
      return std::string(kBackendName) + ": " + why;
    site_.add_notices(std::move(notices));
    if (auto ready = commands_.ready(); ready && !ready->empty()) {
      lifecycle_.remove();
      return std::string(kBackendName) + ": the sandbox " + lifecycle_.name() +
             " started, but its runner cannot be used: " + *ready;
    }
    return {};
  } catch (const std::exception& e) {
    return std::string(kBackendName) + " start failed: " + e.what();
  }
}

void SwarmBackend::stop() noexcept {
  commands_.stop();
  dc::end_all_background_on(background_, commands_, std::chrono::milliseconds(0));
}

void SwarmBackend::cleanup() noexcept {
  stop();
  commands_.close();
  lifecycle_.remove();
}

std::string SwarmBackend::sandbox_path(const std::string& path) const {
  std::string host;
  {
    std::lock_guard lock(cwd_mutex_);
    host = host_cwd_;
  }
  const fs::path p = fs::path(path).lexically_normal();
  if (!host.empty() && p.is_absolute() && within(p, fs::path(host).lexically_normal())) {
    const auto rel = p.lexically_relative(fs::path(host).lexically_normal());
    return rel.empty() || rel == "."
               ? kSwarmWorkspace
               : (fs::path(kSwarmWorkspace) / rel).lexically_normal().string();
  }
  return path;
}

std::string SwarmBackend::resolve_work_dir(const std::string& requested, std::string& path) const {
  if (requested.empty()) {
    path = kSwarmWorkspace;
    return {};
  }
  const fs::path given = sandbox_path(requested);
  const fs::path full =
      (given.is_absolute() ? given : fs::path(kSwarmWorkspace) / given).lexically_normal();
  if (!within(full, kSwarmWorkspace))
    return "work_dir '" + requested + "' is outside the workspace (" + kSwarmWorkspace +
           "): a swarm sandbox has only its workspace";
  path = full.string();
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return {};
}

std::vector<std::string> SwarmBackend::call_env(
    const std::vector<std::pair<std::string, std::string>>& extra) const {
  std::vector<std::string> env;
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

sdk::ExecResult SwarmBackend::execute(const sdk::ExecRequest& request) {
  try {
    dc::ContainerCommand command;
    if (auto err = resolve_work_dir(request.work_dir, command.work_dir); !err.empty()) {
      sdk::ExecResult result;
      result.error = err;
      return result;
    }
    command.agent_command = true;
    command.shell = settings_.shell;
    command.script = request.command;
    command.marker = dc::random_marker();
    command.env = call_env(request.env);
    command.timeout = request.timeout;
    command.output_cap = request.output_cap;
    command.sink = request.sink;
    command.cancel = request.cancel;
    auto result = commands_.run(command);
    if (result.error.empty()) result.work_dir = command.work_dir;
    return result;
  } catch (const std::exception& e) {
    sdk::ExecResult result;
    result.error = std::string(kBackendName) + ": " + e.what();
    return result;
  }
}

sdk::FileReadResult SwarmBackend::read_file(const sdk::FileReadRequest& request) {
  sdk::FileReadResult out;
  try {
    if (request.cancel != nullptr && request.cancel->cancel_requested()) {
      out.error = "the call was cancelled before it started";
      return out;
    }
    sdk::FileReadRequest call = request;
    call.path = sandbox_path(request.path);
    const std::size_t max_bytes = std::min<std::size_t>(request.max_bytes, std::size_t{1} << 40);
    auto r = dc::read_through_runner(commands_, kSwarmWorkspace, call, max_bytes);
    if (r) return std::move(*r);
    out.error = "execmcp-runner cannot be reached in " + lifecycle_.name();
  } catch (const std::exception& e) {
    out.error = std::string(kBackendName) + ": " + e.what();
  }
  return out;
}

sdk::FileWriteResult SwarmBackend::write_file(const sdk::FileWriteRequest& request) {
  sdk::FileWriteResult out;
  try {
    if (request.cancel != nullptr && request.cancel->cancel_requested()) {
      out.error = "the call was cancelled before it started";
      return out;
    }
    sdk::FileWriteRequest call = request;
    call.path = sandbox_path(request.path);
    auto r = dc::write_through_runner(commands_, kSwarmWorkspace, call);
    if (r) return std::move(*r);
    out.error = "execmcp-runner cannot be reached in " + lifecycle_.name();
  } catch (const std::exception& e) {
    out.error = std::string(kBackendName) + ": " + e.what();
  }
  return out;
}

sdk::BackendTraits SwarmBackend::traits() const {
  sdk::BackendTraits t;
  t.tools_dir = "";  // host directories are on no node
  t.python = "python3";
  t.isolated = true;
  return t;
}

void* SwarmBackend::query_interface(std::string_view id) noexcept {
  if (id == sdk::kBackgroundProcessesId)
    return static_cast<void*>(static_cast<sdk::BackgroundProcesses*>(this));
  if (id == sdk::kSandboxControlId)
    return static_cast<void*>(static_cast<sdk::SandboxControl*>(this));
  return nullptr;
}

sdk::BackgroundStarted SwarmBackend::start_background(const sdk::BackgroundRequest& request,
                                                      sdk::BackgroundObserver* observer) noexcept {
  sdk::BackgroundStarted started;
  try {
    std::string work_dir;
    if (auto err = resolve_work_dir(request.work_dir, work_dir); !err.empty()) {
      started.error = err;
      return started;
    }
    started = dc::start_background_on(background_, commands_, observer, work_dir, settings_.shell,
                                      request.command, call_env(request.env));
  } catch (const std::exception& e) {
    started.id = 0;
    started.error = std::string(kBackendName) + ": " + e.what();
  }
  return started;
}

void SwarmBackend::terminate_background(std::uint64_t id,
                                        std::chrono::milliseconds grace) noexcept {
  dc::terminate_background_on(background_, commands_, id, grace);
}

std::string SwarmBackend::suspend() noexcept {
  try {
    std::lock_guard lock(sandbox_mutex_);
    stop();
    commands_.close();  // the runner kills the channel's calls; the next opening is after resume
    return lifecycle_.suspend();
  } catch (const std::exception& e) {
    return std::string(kBackendName) + ": " + e.what();
  }
}

std::string SwarmBackend::resume() noexcept {
  try {
    std::lock_guard lock(sandbox_mutex_);
    NodeInfo node;
    const auto state = lifecycle_.state(node);
    std::string why;
    if (state == SandboxState::kNoTask) {
      why = lifecycle_.resume();
    } else if (state != SandboxState::kRunning) {
      // Gone, or its node lost: what the user must know (where the files stayed) goes with the
      // next call.
      std::vector<std::string> notices;
      why = lifecycle_.recover(notices);
      site_.add_notices(std::move(notices));
    }
    if (!why.empty()) return why;
    auto ready = commands_.ready();
    return ready.value_or(std::string());
  } catch (const std::exception& e) {
    return std::string(kBackendName) + ": " + e.what();
  }
}

std::string SwarmBackend::relocate_workspace(const std::string& host_path) noexcept {
  try {
    std::lock_guard lock(sandbox_mutex_);
    {
      std::lock_guard cwd(cwd_mutex_);
      host_cwd_ = host_path;
    }
    return lifecycle_.relocate_record(host_path);
  } catch (const std::exception& e) {
    return std::string(kBackendName) + ": " + e.what();
  }
}

}  // namespace execmcp::plugins::docker_swarm
