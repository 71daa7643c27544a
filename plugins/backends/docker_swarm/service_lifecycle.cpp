// A swarm sandbox's engine objects: creation, waiting for the task, pinning, suspend and resume,
// recovery from an ended task or a lost node, removal, and the orphan sweep
// (service_lifecycle.hpp).
#include "docker_swarm/service_lifecycle.hpp"

#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <ctime>
#include <random>
#include <thread>

#include "docker_common/lifecycle/container_spec.hpp"
#include "docker_common/log_text.hpp"

namespace execmcp::plugins::docker_swarm {
namespace {

using Clock = std::chrono::steady_clock;
namespace dc = docker_common;

std::string hex8(std::uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 8; ++i, v >>= 4) out.push_back(digits[v & 15]);
  return out;
}

std::string random_hex8() {
  std::random_device rd;
  return hex8((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
}

bool pid_alive(long pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// What an engine's words say about a task that failed because its image is not on the node.
bool image_missing(const std::string& err) {
  return err.find("No such image") != std::string::npos ||
         err.find("pull access denied") != std::string::npos ||
         err.find("manifest unknown") != std::string::npos ||
         (err.find("image") != std::string::npos && err.find("not found") != std::string::npos);
}

std::string seconds_text(std::chrono::milliseconds ms) {
  const auto s = ms.count() / 1000;
  return s > 0 ? std::to_string(s) + " s" : std::to_string(ms.count()) + " ms";
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

}  // namespace

std::string bounded_name(const std::string& name, std::size_t max) {
  if (name.size() <= max) return name;
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (const unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  std::string head = name.substr(0, max > 9 ? max - 9 : 0);
  while (!head.empty() && (head.back() == '-' || head.back() == '.' || head.back() == '_'))
    head.pop_back();
  return head + "-" + hex8(h);
}

ServiceLifecycle::ServiceLifecycle(SwarmApi& api, LifecycleConfig config, LifecycleLog log)
    : api_(api), config_(std::move(config)), log_(std::move(log)) {}

void ServiceLifecycle::log(sdk::LogLevel level, const std::string& message) const {
  if (log_) log_(level, dc::log_text(message, 2000));
}

std::string ServiceLifecycle::check_manager() {
  ManagerInfo info;
  if (auto e = api_.info(info); !e.ok())
    return "cannot ask the engine at " + config_.engine +
           " whether it is a swarm manager: " + e.message;
  if (!info.is_manager())
    return "the engine at " + config_.engine + " is not a swarm manager (its swarm state is '" +
           (info.local_node_state.empty() ? "inactive" : info.local_node_state) +
           "'): run `docker swarm init` there, or set docker_host to a manager's socket";
  return {};
}

std::string ServiceLifecycle::address() const {
  std::lock_guard lock(state_mutex_);
  return address_;
}

std::optional<RunnerKey> ServiceLifecycle::key() const {
  std::lock_guard lock(state_mutex_);
  return key_;
}

Placement ServiceLifecycle::placement() const {
  std::lock_guard lock(state_mutex_);
  return placement_;
}

std::string ServiceLifecycle::new_volume_name() const {
  // The user's key as a volume name takes it (a warm sandbox's is its directory, ".warm-<n>").
  std::string user;
  for (const char c : config_.service.user_key)
    user += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '-';
  user.erase(0, user.find_first_not_of('-'));
  const std::string base = "execmcp-" + config_.service.agent_id + (user.empty() ? "" : "-" + user);
  return bounded_name(base, 50) + "-" + random_hex8();
}

void ServiceLifecycle::set_running(const TaskInfo& task) {
  std::lock_guard lock(state_mutex_);
  address_ = task.address_on(objects_.network_id);
  incarnation_.fetch_add(1);
}

std::string ServiceLifecycle::create(const Placement& at) {
  std::lock_guard op(op_mutex_);
  return create_locked(at);
}

std::string ServiceLifecycle::make_objects(const Placement& at, const RunnerKey& key, Objects& made,
                                           std::string& volume) {
  ServiceSettings s = config_.service;
  s.secret.name = bounded_name(s.name, 50) + "-key-" + random_hex8();
  const std::string_view key_bytes(reinterpret_cast<const char*>(key.data()),
                                   supervision::runner_auth::kKeySize);
  if (auto e = api_.create_secret(s.secret.name, swarm_labels(s, kRoleSwarmSecret), key_bytes,
                                  made.secret_id);
      !e.ok())
    return "cannot make the sandbox's key (a Swarm secret): " + e.message;
  s.secret.id = made.secret_id;
  // Its own name each time: a network of a lost node's sandbox cannot go while that node holds
  // its task, and must not keep the new one from being made.
  const std::string network = bounded_name(s.name, 50) + "-net-" + random_hex8();
  if (auto e =
          api_.create_network(network_create_body(s, network, config_.encrypted), made.network_id);
      !e.ok())
    return "cannot make the sandbox's network " + network + ": " + e.message;
  s.network_id = made.network_id;
  s.volume = at.volume.empty() ? new_volume_name() : at.volume;
  s.pinned_node = at.node_id;
  volume = s.volume;
  if (auto e = api_.create_service(service_spec(s), made.service_id); !e.ok())
    return "cannot make the sandbox's service " + s.name + ": " + e.message;
  return {};
}

std::string ServiceLifecycle::create_locked(const Placement& at) {
  remove_objects(objects_);  // a sandbox made before under this name (none: nothing to do)
  {
    std::lock_guard lock(state_mutex_);
    objects_ = {};
    address_.clear();
  }
  auto key = RunnerKey::random();
  Objects made;
  std::string volume;
  auto fail = [&](std::string why) {
    remove_objects(made);
    return why;
  };
  if (auto why = make_objects(at, key, made, volume); !why.empty()) return fail(why);
  TaskInfo task;
  if (auto why = wait_running(made, {}, task); !why.empty()) return fail(why);
  if (at.node_id.empty())
    if (auto why = pin(made, task.node_id); !why.empty()) return fail(why);
  if (!config_.server_container.empty())
    if (auto e = api_.connect_network(made.network_id, config_.server_container); !e.ok())
      return fail("cannot connect the server's container " + config_.server_container +
                  " to the sandbox's network (it must run on the manager " + config_.engine +
                  ", on a network that is not 'none'): " + e.message);
  Placement placed = at;
  placed.node_id = task.node_id;
  placed.volume = volume;
  if (placed.created == 0) placed.created = static_cast<std::int64_t>(std::time(nullptr));
  if (placed.hostname.empty() || !at.node_id.empty()) {
    NodeInfo node;
    if (api_.inspect_node(task.node_id, node).ok()) placed.hostname = node.hostname;
  }
  {
    std::lock_guard lock(state_mutex_);
    objects_ = made;
    key_ = std::move(key);
    placement_ = placed;
  }
  set_running(task);
  log(sdk::LogLevel::Info, "sandbox service " + name() + " runs on node " +
                               (placed.hostname.empty() ? placed.node_id : placed.hostname) +
                               " (volume " + volume + ")");
  return {};
}

std::string ServiceLifecycle::task_failure(const TaskInfo& task) const {
  std::string why = "the sandbox's task " + task.state + " on node " + task.node_id + ": " +
                    (task.err.empty() ? task.message : task.err);
  if (task.phase() == TaskPhase::kEnded)
    why += " (exit code " + std::to_string(task.exit_code) + ")";
  if (image_missing(task.err))
    why += "; the image " + config_.service.image +
           " is not on that node: load the image on every node (docker save " +
           config_.service.image + " | docker load, on each)";
  return why;
}

std::string ServiceLifecycle::unschedulable(const TaskInfo& task) const {
  const auto& s = config_.service;
  std::vector<std::string> fits = placement_constraints(s);
  std::string reservations;
  if (s.reserve_memory_bytes > 0)
    reservations += "reserve_memory " + std::to_string(s.reserve_memory_bytes) + " bytes";
  if (s.reserve_cpus > 0)
    reservations += (reservations.empty() ? "" : ", ") + std::string("reserve_cpus ") +
                    std::to_string(s.reserve_cpus);
  return "no node can take the sandbox (Swarm: " + (task.err.empty() ? task.message : task.err) +
         "): the constraints [" + joined(fits) + "] and the reservations [" +
         (reservations.empty() ? "none" : reservations) +
         "] fit no node; change them, or add a node that fits";
}

std::string ServiceLifecycle::wait_running(const Objects& objects,
                                           const std::set<std::string>& old_tasks, TaskInfo& out) {
  const auto deadline = Clock::now() + config_.start_timeout;
  // When the task was first seen with no node to go to (a time_point and a flag, not an optional:
  // g++ 12 -O2 warns of an optional time_point as maybe uninitialized).
  Clock::time_point unschedulable_since{};
  bool unschedulable_seen = false;
  std::string last = "no task yet";
  for (;;) {
    std::vector<TaskInfo> tasks;
    if (auto e = api_.list_tasks(objects.service_id, false, tasks); !e.ok())
      return e.not_found() ? "the sandbox's service " + name() + " was removed while it started"
                           : e.message;
    const TaskInfo* pending = nullptr;
    for (const auto& t : tasks) {
      if (old_tasks.contains(t.id)) continue;
      const auto phase = t.phase();
      if (phase == TaskPhase::kRunning && !t.address_on(objects.network_id).empty()) {
        out = t;
        return {};
      }
      if (phase == TaskPhase::kFailed || phase == TaskPhase::kEnded) return task_failure(t);
      if (phase == TaskPhase::kPending) pending = &t;
      last = t.state + (t.err.empty() ? "" : ": " + t.err);
    }
    const bool no_node =
        pending != nullptr && (pending->err.find("no suitable node") != std::string::npos ||
                               pending->message.find("no suitable node") != std::string::npos);
    const auto now = Clock::now();
    if (!no_node) {
      unschedulable_seen = false;
    } else if (!unschedulable_seen) {
      unschedulable_seen = true;
      unschedulable_since = now;
    } else if (now - unschedulable_since >= config_.unschedulable_after) {
      return unschedulable(*pending);
    }
    if (now >= deadline)
      return "the sandbox's task did not run within " + seconds_text(config_.start_timeout) +
             " (start_timeout; last state: " + last + ")";
    std::this_thread::sleep_for(config_.poll_interval);
  }
}

std::string ServiceLifecycle::pin(const Objects& objects, const std::string& node_id) {
  ServiceInfo info;
  if (auto e = api_.inspect_service(objects.service_id, info); !e.ok())
    return "cannot pin the sandbox to its node: " + e.message;
  if (auto e =
          api_.update_service(objects.service_id, info.version, pinned_spec(info.spec, node_id));
      !e.ok())
    return "cannot pin the sandbox to its node: " + e.message;
  return {};
}

std::set<std::string> ServiceLifecycle::task_ids(const std::string& service_id) {
  std::vector<TaskInfo> tasks;
  std::set<std::string> ids;
  if (api_.list_tasks(service_id, false, tasks).ok())
    for (const auto& t : tasks) ids.insert(t.id);
  return ids;
}

std::string ServiceLifecycle::suspend() {
  std::lock_guard op(op_mutex_);
  Objects objects;
  {
    std::lock_guard lock(state_mutex_);
    objects = objects_;
    address_.clear();
  }
  if (objects.service_id.empty()) return {};
  ServiceInfo info;
  if (auto e = api_.inspect_service(objects.service_id, info); !e.ok())
    return e.not_found() ? std::string() : "cannot stop the sandbox: " + e.message;
  if (auto e = api_.update_service(objects.service_id, info.version, suspended_spec(info.spec));
      !e.ok())
    return "cannot stop the sandbox: " + e.message;
  incarnation_.fetch_add(1);  // the task goes: a channel into it is dead
  return {};
}

std::string ServiceLifecycle::resume() {
  std::lock_guard op(op_mutex_);
  return resume_locked();
}

std::string ServiceLifecycle::resume_locked() {
  Objects objects;
  {
    std::lock_guard lock(state_mutex_);
    objects = objects_;
  }
  if (objects.service_id.empty()) return "the sandbox has no service to start";
  const auto old = task_ids(objects.service_id);
  ServiceInfo info;
  if (auto e = api_.inspect_service(objects.service_id, info); !e.ok())
    return "cannot start the sandbox again: " + e.message;
  if (auto e = api_.update_service(objects.service_id, info.version, resumed_spec(info.spec));
      !e.ok())
    return "cannot start the sandbox again: " + e.message;
  TaskInfo task;
  if (auto why = wait_running(objects, old, task); !why.empty()) return why;
  set_running(task);
  return {};
}

SandboxState ServiceLifecycle::state(NodeInfo& node) {
  Objects objects;
  Placement placed;
  {
    std::lock_guard lock(state_mutex_);
    objects = objects_;
    placed = placement_;
  }
  if (objects.service_id.empty()) return SandboxState::kGone;
  std::vector<TaskInfo> tasks;
  if (auto e = api_.list_tasks(objects.service_id, true, tasks); !e.ok())
    return e.not_found() ? SandboxState::kGone : SandboxState::kUnknown;
  node = {};
  node.id = placed.node_id;
  node.hostname = placed.hostname;
  if (!placed.node_id.empty()) {
    NodeInfo seen;
    if (auto e = api_.inspect_node(placed.node_id, seen); e.ok()) {
      if (seen.hostname.empty()) seen.hostname = placed.hostname;
      node = seen;
      if (!seen.usable()) return SandboxState::kNodeLost;
    } else if (e.not_found()) {
      node.state = "removed from the swarm";
      return SandboxState::kNodeLost;
    } else {
      return SandboxState::kUnknown;
    }
  }
  for (const auto& t : tasks)
    if (t.phase() == TaskPhase::kRunning) return SandboxState::kRunning;
  return SandboxState::kNoTask;
}

void ServiceLifecycle::write_record(std::vector<std::string>* notices) {
  std::string dir;
  Placement placed;
  {
    std::lock_guard lock(state_mutex_);
    dir = config_.record_dir;
    placed = placement_;
  }
  if (dir.empty() || placed.empty()) return;
  if (auto why = write_placement(dir, placed); !why.empty()) {
    log(sdk::LogLevel::Warn, "cannot keep the sandbox's placement: " + why);
    if (notices != nullptr)
      notices->push_back("the sandbox's placement could not be recorded (" + why +
                         "): after its removal, your files may not be found again");
  }
}

std::string ServiceLifecycle::relocate_record(const std::string& dir) {
  {
    std::lock_guard lock(state_mutex_);
    config_.record_dir = dir;
  }
  // The host renamed the directory with the record in it; written again in case it was made
  // before the record was.
  std::string error;
  if (!read_placement(dir, error) && error.empty()) write_record(nullptr);
  return {};
}

namespace {

// How a node that cannot hold a sandbox is, in a notice's words.
std::string node_condition(const NodeInfo& node) {
  if (node.availability == "drain") return "drained";
  if (node.availability == "pause") return "paused";
  if (node.state == "down" || node.state == "disconnected") return "down";
  if (!node.state.empty() && node.state != "ready") return node.state;
  return "unusable";
}

std::string lost_notice(const Placement& old, const std::string& condition, const Placement& now) {
  const std::string old_name = old.hostname.empty() ? old.node_id : old.hostname;
  const std::string new_name = now.hostname.empty() ? now.node_id : now.hostname;
  return "Your sandbox's node " + old_name + " is " + condition +
         "; a new sandbox was started on " + new_name +
         " with an empty /workspace. Your files stayed on " + old_name + " in volume " +
         old.volume + "; they come back only if an operator restores that node.";
}

}  // namespace

std::string ServiceLifecycle::place(std::vector<std::string>& notices) {
  std::lock_guard op(op_mutex_);
  std::string dir;
  {
    std::lock_guard lock(state_mutex_);
    dir = config_.record_dir;
  }
  std::optional<Placement> prior;
  if (!dir.empty()) {
    std::string error;
    prior = read_placement(dir, error);
    if (!error.empty())
      return "cannot read where this workspace lives: " + error +
             " (remove it to start this sandbox with an empty workspace)";
  }
  return place_locked(prior, notices);
}

std::string ServiceLifecycle::place_locked(const std::optional<Placement>& prior,
                                           std::vector<std::string>& notices) {
  if (!prior || prior->empty()) {
    auto why = create_locked({});
    if (why.empty()) write_record(&notices);
    return why;
  }
  NodeInfo node;
  std::string condition;
  const auto e = api_.inspect_node(prior->node_id, node);
  if (e.ok() && node.usable()) {
    auto why = create_locked(*prior);
    if (why.empty()) {
      write_record(&notices);
      return {};
    }
    log(sdk::LogLevel::Warn, "the sandbox did not run on its node " + prior->hostname + ": " + why +
                                 "; placing it on another node");
    condition = "not running sandboxes (" + why + ")";
  } else if (e.ok() || e.not_found()) {
    condition = e.ok() ? node_condition(node) : "no longer in the swarm";
  } else {
    return "cannot ask the swarm manager about the sandbox's node " + prior->hostname + ": " +
           e.message;
  }
  Placement fresh;
  fresh.created = 0;
  if (auto why = create_locked(fresh); !why.empty()) return why;
  notices.push_back(lost_notice(*prior, condition, placement()));
  log(sdk::LogLevel::Warn, notices.back());
  write_record(&notices);
  return {};
}

std::string ServiceLifecycle::recover(std::vector<std::string>& notices) {
  std::lock_guard op(op_mutex_);
  NodeInfo node;
  const auto st = state(node);
  const Placement placed = placement();
  switch (st) {
    case SandboxState::kRunning:
      return {};
    case SandboxState::kUnknown:
      return "the swarm manager at " + config_.engine +
             " does not answer about the sandbox; the next call tries again";
    case SandboxState::kNoTask: {
      auto why = resume_locked();
      if (why.empty())
        notices.push_back("the sandbox's task had ended; it was started again on node " +
                          (placed.hostname.empty() ? placed.node_id : placed.hostname) +
                          ": its processes are gone, the files in /workspace are kept");
      return why;
    }
    case SandboxState::kNodeLost: {
      Objects old;
      {
        std::lock_guard lock(state_mutex_);
        old = objects_;
        objects_ = {};
        address_.clear();
      }
      remove_objects(old, /*wait=*/false);
      return place_locked(placed, notices);
    }
    case SandboxState::kGone:
      break;
  }
  auto why =
      place_locked(placed.empty() ? std::nullopt : std::optional<Placement>(placed), notices);
  if (why.empty())
    notices.push_back(
        "the sandbox's service was gone (removed from outside?); a new one was made "
        "on node " +
        placement().hostname + ": processes that ran before are gone");
  return why;
}

bool ServiceLifecycle::wait_tasks_gone(const std::string& service_id) noexcept {
  try {
    const auto deadline = Clock::now() + config_.removal_wait;
    for (;;) {
      std::vector<TaskInfo> tasks;
      const auto e = api_.list_tasks(service_id, false, tasks);
      if (e.not_found() || (e.ok() && tasks.empty())) return true;
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(config_.poll_interval);
    }
  } catch (...) {
    return false;
  }
}

void ServiceLifecycle::remove_objects(const Objects& objects, bool wait) noexcept {
  try {
    if (!objects.service_id.empty()) {
      if (auto e = api_.remove_service(objects.service_id); !e.ok())
        log(sdk::LogLevel::Warn, "cannot remove the sandbox's service: " + e.message);
      else if (wait && !wait_tasks_gone(objects.service_id))
        log(sdk::LogLevel::Warn, "the tasks of sandbox service " + name() + " did not go within " +
                                     seconds_text(config_.removal_wait));
    }
    if (!objects.secret_id.empty())
      if (auto e = api_.remove_secret(objects.secret_id); !e.ok())
        log(sdk::LogLevel::Warn, "cannot remove the sandbox's key (its secret): " + e.message);
    if (objects.network_id.empty()) return;
    const auto why =
        remove_network(objects.network_id, wait ? config_.removal_wait : Clock::duration::zero());
    if (!why.empty()) {
      log(sdk::LogLevel::Warn,
          "cannot remove the sandbox's network yet: " + why + " (tried again at removal)");
      leftover_networks_.push_back(objects.network_id);
    }
  } catch (...) {
    // removal never throws
  }
}

std::string ServiceLifecycle::remove_network(const std::string& id, Clock::duration patience) {
  if (!config_.server_container.empty())
    api_.disconnect_network(id, config_.server_container, true);
  // A removed service's tasks are no longer listed (404) while their containers still stop, and
  // hold the network until they have: it is tried again for `patience`.
  const auto deadline = Clock::now() + patience;
  for (;;) {
    const auto e = api_.remove_network(id);
    if (e.ok()) return {};
    if (Clock::now() >= deadline) return e.message;
    std::this_thread::sleep_for(config_.poll_interval * 4);
  }
}

void ServiceLifecycle::remove() noexcept {
  try {
    std::lock_guard op(op_mutex_);
    Objects old;
    {
      std::lock_guard lock(state_mutex_);
      old = objects_;
      objects_ = {};
      address_.clear();
    }
    incarnation_.fetch_add(1);
    remove_objects(old);
    auto leftovers = std::move(leftover_networks_);
    leftover_networks_.clear();
    for (const auto& id : leftovers) {
      if (!config_.server_container.empty())
        api_.disconnect_network(id, config_.server_container, true);
      if (auto e = api_.remove_network(id); !e.ok())
        log(sdk::LogLevel::Warn, "cannot remove a network of sandbox " + name() + ": " + e.message);
    }
  } catch (...) {
    // removal never throws
  }
}

std::size_t ServiceLifecycle::sweep_orphans() noexcept {
  std::size_t removed = 0;
  try {
    const std::string& owner = config_.service.owner_host;
    const std::map<std::string, std::string> filter{{dc::kLabelManaged, "true"},
                                                    {dc::kLabelOwnerHost, owner}};
    // Ours by its labels (the engine filtered by them; checked again here), and its owner gone.
    auto orphaned = [&](const std::map<std::string, std::string>& labels) {
      const auto host = labels.find(dc::kLabelOwnerHost);
      const auto managed = labels.find(dc::kLabelManaged);
      if (host == labels.end() || host->second != owner || managed == labels.end() ||
          managed->second != "true")
        return false;
      const auto pid_label = labels.find(dc::kLabelOwnerPid);
      long pid = 0;
      try {
        pid = pid_label == labels.end() ? 0 : std::stol(pid_label->second);
      } catch (...) {
        pid = 0;
      }
      const bool same_pid = pid == static_cast<long>(::getpid());
      // Labelled with its run: this process's own are kept; a server of another PID namespace
      // (another container) is one whose pid means nothing here, and owner_id names one server,
      // so it is gone; in this namespace, a live pid is another server of this owner id, and
      // this process's own pid a dead one's that it got again.
      const auto run = labels.find(kLabelOwnerRun);
      if (run != labels.end() && !config_.service.owner_run.empty()) {
        if (run->second == config_.service.owner_run) return false;
        const auto ns = labels.find(kLabelOwnerPidns);
        if (ns == labels.end() || ns->second != config_.service.owner_pidns) return true;
        return same_pid || !pid_alive(pid);
      }
      return !same_pid && !pid_alive(pid);
    };
    std::vector<ServiceInfo> services;
    std::vector<std::string> gone_services;
    if (api_.list_services(filter, services).ok())
      for (const auto& s : services)
        if (orphaned(s.labels) && api_.remove_service(s.id).ok()) {
          gone_services.push_back(s.id);
          ++removed;
          log(sdk::LogLevel::Info, "removed orphan sandbox service " + s.name);
        }
    for (const auto& id : gone_services) wait_tasks_gone(id);
    std::vector<LabelledObject> objects;
    if (api_.list_secrets(filter, objects).ok())
      for (const auto& o : objects)
        if (orphaned(o.labels) && api_.remove_secret(o.id).ok()) ++removed;
    if (api_.list_networks(filter, objects).ok())
      for (const auto& o : objects) {
        if (!orphaned(o.labels)) continue;
        if (const auto why = remove_network(o.id, config_.removal_wait); !why.empty()) {
          log(sdk::LogLevel::Warn, "cannot remove orphan sandbox network " + o.name + ": " + why);
          continue;
        }
        ++removed;
        log(sdk::LogLevel::Info, "removed orphan sandbox network " + o.name);
      }
  } catch (...) {
    // a sweep never throws
  }
  return removed;
}

}  // namespace execmcp::plugins::docker_swarm
