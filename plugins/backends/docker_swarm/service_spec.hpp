// A sandbox as a Swarm service, as data: its settings, the ServiceSpec of POST /services/create
// (Engine API 1.41), and the update bodies that pin it to a node, suspend it and resume it.
// Pure: no engine, no I/O (docs/architecture.md, the docker-swarm backend).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace execmcp::plugins::docker_swarm {

// Roles of the engine objects a swarm sandbox adds to docker_common's (kLabelRole): the agent's
// service carries kRoleAgent, as a container does.
inline constexpr const char* kRoleSwarmNetwork = "swarm-network";
inline constexpr const char* kRoleSwarmSecret = "swarm-secret";
// Which server process made an object, beside docker_common's owner host and pid: a token of that
// process (random, made once per process) and its PID namespace ("pid:[inode]"). A server in a
// container gets the same pid in each new container, so its predecessor's pid says nothing; these
// do (ServiceLifecycle::sweep_orphans()).
inline constexpr const char* kLabelOwnerRun = "execmcp.owner.run";
inline constexpr const char* kLabelOwnerPidns = "execmcp.owner.pidns";
// The workspace volume's label naming whose it is (the per-user key; empty for a shared agent).
inline constexpr const char* kLabelUser = "execmcp.user";

// Where the runner's key is in the task (a tmpfs the engine makes), and where the runner listens.
inline constexpr const char* kRunnerKeyFileName = "execmcp-runner-key";
inline constexpr const char* kRunnerKeyPath = "/run/secrets/execmcp-runner-key";
inline constexpr const char* kSwarmRunnerPath = "/usr/lib/execmcp/execmcp-runner";
inline constexpr int kRunnerPort = 7077;
// The constraint that keeps a placed sandbox on its node ("node.id==<id>").
inline constexpr const char* kNodeIdConstraint = "node.id==";

// The per-sandbox secret in the task: its ID and name only (never its value, which only
// POST /secrets/create carries), and the owner of its file (mode 0400).
struct SecretRef {
  std::string id;
  std::string name;
  std::string uid = "1000";
  std::string gid = "1000";
};

struct ServiceSettings {
  std::string name;  // the service's name, e.g. execmcp-<agent>-<instance>
  // Ownership, as the container backends label (docker_common::container_labels()).
  std::string agent_id;
  std::string instance_id;
  std::int64_t owner_pid = 0;
  std::string owner_host;   // swarm.owner_id (default the hostname)
  std::string owner_run;    // kLabelOwnerRun ("": not labelled)
  std::string owner_pidns;  // kLabelOwnerPidns ("": not labelled)

  std::string image;
  // Empty: the runner listening on kRunnerPort with its key from kRunnerKeyPath.
  std::vector<std::string> command;
  std::string user = "1000:1000";
  std::string work_dir = "/workspace";
  std::vector<std::string> env;  // KEY=VALUE; the settings' env, never a secret

  // Limits (0: none) and reservations (0: none), what Swarm places by.
  std::int64_t memory_bytes = 0;
  std::int64_t pids_limit = 0;
  double cpus = 0;
  std::int64_t reserve_memory_bytes = 0;
  double reserve_cpus = 0;

  std::vector<std::string> constraints;  // the operator's, as given
  std::string pinned_node;               // the node id once placed; empty: Swarm chooses

  std::string network_id;  // the sandbox's own overlay network
  SecretRef secret;
  std::string volume;    // the workspace volume's name (node-local)
  std::string user_key;  // per-user sandboxes: whose workspace (kLabelUser on the volume)
  std::int64_t tmpfs_bytes = 512LL * 1024 * 1024;
};

// The labels on the service, its container spec, its secret and its network: the container
// backends' ownership labels (role kRoleAgent; `role` replaces it when given).
std::map<std::string, std::string> swarm_labels(const ServiceSettings& settings,
                                                const std::string& role = {});

// The runner's command in the task: listening on kRunnerPort, its key from kRunnerKeyPath.
std::vector<std::string> runner_listen_command();

// The placement constraints: the operator's, then kNodeIdConstraint + pinned_node when pinned.
std::vector<std::string> placement_constraints(const ServiceSettings& settings);

// The body of POST /services/create: one replica, restart policy none, endpoint mode dnsrr (no
// VIP), the secret as a file of mode 0400. Throws std::invalid_argument when a required field
// (name, image, network_id, secret id and name, volume) is empty.
nlohmann::json service_spec(const ServiceSettings& settings);

// The body of POST /networks/create for the sandbox's network: overlay, attachable, internal.
nlohmann::json network_create_body(const ServiceSettings& settings, const std::string& name,
                                   bool encrypted);

// Update bodies for POST /services/{id}/update?version=N, made from the service's current Spec
// (as GET /services/{id} shows it), which they copy:
// the same spec with its node.id constraint replaced by one naming `node_id`;
nlohmann::json pinned_spec(const nlohmann::json& spec, const std::string& node_id);
// Replicas 0: the task is stopped; service, secret, network and volume stay;
nlohmann::json suspended_spec(const nlohmann::json& spec);
// Replicas 1 and TaskTemplate.ForceUpdate + 1: a new task even while the old one shuts down.
nlohmann::json resumed_spec(const nlohmann::json& spec);

}  // namespace execmcp::plugins::docker_swarm
