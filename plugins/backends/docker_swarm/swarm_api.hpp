// The Engine API calls of the docker-swarm backend (API 1.41): is this a manager, secrets,
// networks, services, tasks and nodes, each answer parsed defensively (a bounded body, JSON of
// the expected shape) into a small struct, every error naming its call. Over SwarmTransport, so
// tests put a fake engine under it (tests/plugins/backends/docker_swarm/fake_swarm_transport.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "docker_client/docker_client.hpp"

namespace execmcp::plugins::docker_swarm {

using docker_client::HttpResponse;

// The API version every path is prefixed with: Limits.Pids and CapabilityDrop need 1.41; an
// older engine refuses the prefix with its own message, which the error carries.
inline constexpr const char* kSwarmApiVersion = "1.41";
// An answer longer than this is refused, not parsed (a task list of one service is a few KiB).
inline constexpr std::size_t kMaxAnswerBytes = 4 * 1024 * 1024;

// One HTTP exchange with the engine. `path` carries the version prefix and query.
class SwarmTransport {
 public:
  virtual ~SwarmTransport() = default;
  virtual HttpResponse request(std::string_view method, const std::string& path,
                               const std::string& body) = 0;
};

// SwarmTransport over the Engine API's client (a manager's socket or tcp address).
class EngineTransport final : public SwarmTransport {
 public:
  explicit EngineTransport(docker_client::DockerEndpoint endpoint);
  HttpResponse request(std::string_view method, const std::string& path,
                       const std::string& body) override;

 private:
  docker_client::DockerClient client_;
};

// A failed call: the HTTP status (0: no answer, or an answer that could not be read) and a
// message naming the call ("POST /services/create: 409 ..."). Never carries a secret's value.
struct SwarmError {
  int status = 0;
  std::string message;
  [[nodiscard]] bool ok() const { return message.empty(); }
  [[nodiscard]] bool not_found() const { return status == 404; }
  [[nodiscard]] bool conflict() const { return status == 409; }
};

struct ManagerInfo {
  std::string node_id;
  std::string local_node_state;    // "active" in a swarm
  bool control_available = false;  // a manager
  [[nodiscard]] bool is_manager() const {
    return local_node_state == "active" && control_available;
  }
};

struct ServiceInfo {
  std::string id;
  std::string name;
  std::uint64_t version = 0;  // Version.Index, for update
  std::map<std::string, std::string> labels;
  nlohmann::json spec;  // as the engine keeps it, the base of an update
};

// Where a task is in Swarm's states (new ... running, then an end).
enum class TaskPhase {
  kStarting,  // new, allocated, assigned, accepted, preparing, ready, starting
  kPending,   // pending: waiting for a node that fits (Status.Err says why)
  kRunning,
  kFailed,   // failed, rejected (Status.Err says why)
  kEnded,    // complete, shutdown, remove, orphaned
  kUnknown,  // a state this code does not know
};
TaskPhase task_phase(std::string_view state);

struct TaskInfo {
  std::string id;
  std::string node_id;  // empty until assigned
  std::string state;    // Status.State
  std::string desired_state;
  std::string message;  // Status.Message
  // Status.Err: why a task failed or was rejected, and why one is pending ("no suitable node
  // (scheduling constraints not satisfied on 3 nodes)"; Message is "pending task scheduling").
  std::string err;
  std::int64_t exit_code = 0;
  // The task's address on each network it is attached to (network id -> IP, CIDR cut off);
  // empty before the task has its attachments.
  std::map<std::string, std::string> addresses;
  [[nodiscard]] TaskPhase phase() const { return task_phase(state); }
  // The address on `network_id`, or "".
  [[nodiscard]] std::string address_on(const std::string& network_id) const;
};

// A secret or a network as a list shows it: enough to find this server's orphans.
struct LabelledObject {
  std::string id;
  std::string name;
  std::map<std::string, std::string> labels;
};

struct NodeInfo {
  std::string id;
  std::string hostname;
  std::string state;         // Status.State: ready, down, unknown, disconnected
  std::string availability;  // Spec.Availability: active, pause, drain
  std::string role;          // Spec.Role
  [[nodiscard]] bool usable() const { return state == "ready" && availability == "active"; }
};

class SwarmApi {
 public:
  explicit SwarmApi(SwarmTransport& transport) : transport_(transport) {}

  SwarmError info(ManagerInfo& out);

  // `data` is the secret's value: sent base64-encoded in the body, never in an error.
  SwarmError create_secret(const std::string& name,
                           const std::map<std::string, std::string>& labels, std::string_view data,
                           std::string& id);
  // Removes are idempotent: an object already gone (404) is no error.
  SwarmError remove_secret(const std::string& id);

  // Secrets carrying every one of `labels` (their names and labels; a list never has values).
  SwarmError list_secrets(const std::map<std::string, std::string>& labels,
                          std::vector<LabelledObject>& out);

  SwarmError create_network(const nlohmann::json& body, std::string& id);
  SwarmError list_networks(const std::map<std::string, std::string>& labels,
                           std::vector<LabelledObject>& out);
  SwarmError connect_network(const std::string& network, const std::string& container);
  SwarmError disconnect_network(const std::string& network, const std::string& container,
                                bool force = true);
  SwarmError remove_network(const std::string& id);

  SwarmError create_service(const nlohmann::json& spec, std::string& id);
  SwarmError inspect_service(const std::string& id, ServiceInfo& out);
  SwarmError update_service(const std::string& id, std::uint64_t version,
                            const nlohmann::json& spec);
  SwarmError remove_service(const std::string& id);
  // Services carrying every one of `labels` (key=value).
  SwarmError list_services(const std::map<std::string, std::string>& labels,
                           std::vector<ServiceInfo>& out);

  // The tasks of one service; with `desired_running`, only those Swarm wants running. A service
  // that does not exist (removed) is an error with not_found(), not an empty list.
  SwarmError list_tasks(const std::string& service_id, bool desired_running,
                        std::vector<TaskInfo>& out);

  SwarmError inspect_node(const std::string& id, NodeInfo& out);

 private:
  // Sends the call; on success parses the body (when `parsed` is given) as JSON within
  // kMaxAnswerBytes. `what` names the call in errors.
  SwarmError call(std::string_view method, const std::string& path, const std::string& body,
                  nlohmann::json* parsed, bool missing_ok = false);
  SwarmTransport& transport_;
};

}  // namespace execmcp::plugins::docker_swarm
