// One swarm sandbox's engine objects and their life: its key (a Swarm secret), its own internal
// overlay network, the service of one task (placed by Swarm, then pinned to its node), the server's
// container connected to that network; suspended (Replicas 0), resumed (Replicas 1 +
// ForceUpdate), brought back when its task ended or its node was lost, removed (never its volume);
// and the sweep of what a dead server of this owner id left. The placement record
// (placement_record.hpp) is written here whenever the sandbox is placed.
// The key lives in memory only: it is sent once, in POST /secrets/create, and never logged, put
// in an error, a label or the environment. See docs/docker-backend.md (docker-swarm).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "docker_swarm/placement_record.hpp"
#include "docker_swarm/service_spec.hpp"
#include "docker_swarm/swarm_api.hpp"
#include "execmcp/sdk/executor_backend.hpp"
#include "supervision/runner_auth.hpp"

namespace execmcp::plugins::docker_swarm {

using RunnerKey = supervision::runner_auth::RunnerKey;

struct LifecycleConfig {
  // The sandbox as data: name, ownership, image, env, limits, reservations, constraints, user_key
  // and tmpfs size. Its network, secret, volume and pin are filled in at each creation.
  ServiceSettings service;
  // The container the server runs in, connected to each sandbox's network ("": none, tests).
  std::string server_container;
  bool encrypted = false;
  std::string engine;  // the manager, as errors name it (docker_host)
  // The host directory that holds the placement record ("": none is kept).
  std::string record_dir;
  std::chrono::milliseconds start_timeout{60000};
  std::chrono::milliseconds poll_interval{50};
  // A task pending with "no suitable node" this long: unschedulable.
  std::chrono::milliseconds unschedulable_after{5000};
  // How long a removal waits for the service's tasks to go (then the network can go).
  std::chrono::milliseconds removal_wait{10000};
};

using LifecycleLog = std::function<void(sdk::LogLevel, const std::string&)>;

// Where the sandbox is, as the manager says.
enum class SandboxState {
  kRunning,   // its task runs
  kNoTask,    // its service is there and its node usable, but no task runs (suspended, ended)
  kNodeLost,  // its node is drained, paused, down or gone
  kGone,      // no service (not made yet, or removed)
  kUnknown,   // the manager did not answer
};

class ServiceLifecycle {
 public:
  ServiceLifecycle(SwarmApi& api, LifecycleConfig config, LifecycleLog log);
  ServiceLifecycle(const ServiceLifecycle&) = delete;
  ServiceLifecycle& operator=(const ServiceLifecycle&) = delete;

  // GET /info: "" when the engine is a swarm manager, else why not (naming the engine).
  std::string check_manager();
  // Places the sandbox: on the node and volume of the placement record when there is one and its
  // node is usable, else wherever Swarm puts it with a new volume; a lost node's notice (naming it)
  // goes to `notices`. Writes the record. "" or why not (nothing left behind).
  std::string place(std::vector<std::string>& notices);
  // Makes the sandbox on `at` (node and volume; empty: Swarm chooses, with a new volume): a new
  // secret and network, the service, its task waited for, pinned to its node, the server's
  // container connected. "" or why not (what was made is removed).
  std::string create(const Placement& at);
  // Replicas 0: the task ends; service, secret, network and volume stay. "" or why not.
  std::string suspend();
  // Replicas 1 and ForceUpdate + 1 (same node: the pin), waits for the task. "" or why not.
  std::string resume();
  // Brings back a sandbox whose runner cannot be reached: nothing while its task runs; a task
  // that ended is started again in place; a lost node (drained, down) or a service gone makes a
  // new one (elsewhere, with a new volume, when the node is lost; the notice says where the files
  // stayed). "" or why not.
  std::string recover(std::vector<std::string>& notices);
  [[nodiscard]] SandboxState state(NodeInfo& node);
  // Removes the service, then (its tasks gone) the secret, the server's attachment and the
  // network; idempotent; never the volume.
  void remove() noexcept;
  // Removes the services, secrets and networks labelled with this owner id whose owner pid is
  // gone (never this process's). Returns how many objects went.
  std::size_t sweep_orphans() noexcept;
  // The record's directory moved (a warm sandbox claimed by a user): the record is written there.
  std::string relocate_record(const std::string& dir);

  // The task's address on the sandbox's network ("" while there is none).
  [[nodiscard]] std::string address() const;
  // A copy of the sandbox's key (nullopt before the first creation).
  [[nodiscard]] std::optional<RunnerKey> key() const;
  [[nodiscard]] Placement placement() const;
  // Counts the tasks seen running: a channel opened into an older one is dead.
  [[nodiscard]] std::uint64_t incarnation() const { return incarnation_.load(); }
  [[nodiscard]] const std::string& name() const { return config_.service.name; }
  [[nodiscard]] const LifecycleConfig& config() const { return config_; }
  void log(sdk::LogLevel level, const std::string& message) const;

 private:
  // The objects of one creation.
  struct Objects {
    std::string service_id;
    std::string network_id;
    std::string secret_id;
  };

  std::string create_locked(const Placement& at);
  std::string make_objects(const Placement& at, const RunnerKey& key, Objects& made,
                           std::string& volume);
  // Waits until a task not in `old_tasks` runs with an address on the network; "" and `out`, or
  // why not (failed, rejected, unschedulable, the deadline).
  std::string wait_running(const Objects& objects, const std::set<std::string>& old_tasks,
                           TaskInfo& out);
  std::string task_failure(const TaskInfo& task) const;
  std::string unschedulable(const TaskInfo& task) const;
  std::string pin(const Objects& objects, const std::string& node_id);
  std::string resume_locked();
  // Task ids of the service now (for a resume: the new task is the one not among them).
  std::set<std::string> task_ids(const std::string& service_id);
  // Removes what one creation made; with `wait`, waits for the service's tasks to go first (a lost
  // node's tasks never go: a network they hold is retried at remove()).
  void remove_objects(const Objects& objects, bool wait = true) noexcept;
  // Places the sandbox on `prior` (node and volume) when its node is usable, else anew with a new
  // volume and the notice that the files stayed on that node; on Swarm's choice when none.
  std::string place_locked(const std::optional<Placement>& prior,
                           std::vector<std::string>& notices);
  // Waits until the service has no task left (or removal_wait passes).
  bool wait_tasks_gone(const std::string& service_id) noexcept;
  // Disconnects the server's container and removes the network, trying again for `patience` while
  // stopping tasks hold it. "" or the engine's last refusal.
  std::string remove_network(const std::string& id, std::chrono::steady_clock::duration patience);
  void set_running(const TaskInfo& task);
  void write_record(std::vector<std::string>* notices);
  [[nodiscard]] std::string new_volume_name() const;

  SwarmApi& api_;
  LifecycleConfig config_;
  LifecycleLog log_;
  std::mutex op_mutex_;             // one creation, update or removal at a time
  mutable std::mutex state_mutex_;  // guards the four below (short reads)
  Objects objects_;
  std::optional<RunnerKey> key_;
  std::string address_;
  Placement placement_;
  std::atomic<std::uint64_t> incarnation_{0};
  std::vector<std::string> leftover_networks_;  // guarded by op_mutex_
};

// A name of at most `max` characters: `name` itself, or its head and a hash of the whole.
std::string bounded_name(const std::string& name, std::size_t max);

}  // namespace execmcp::plugins::docker_swarm
