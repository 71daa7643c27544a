// The ServiceSpec of a swarm sandbox and its update bodies (service_spec.hpp).
#include "docker_swarm/service_spec.hpp"

#include <cmath>
#include <stdexcept>

#include "docker_common/lifecycle/container_spec.hpp"

namespace execmcp::plugins::docker_swarm {
namespace {

using nlohmann::json;
namespace dc = docker_common;

constexpr std::int64_t kStopGraceNanos = 2'000'000'000;  // then SIGKILL
constexpr int kSecretFileMode = 0400;
constexpr int kScratchMode = 01777;

std::int64_t nano_cpus(double cpus) {
  return std::llround(cpus * 1e9);
}

void require(const std::string& value, const char* what) {
  if (value.empty())
    throw std::invalid_argument(std::string("swarm service spec: ") + what + " is empty");
}

json resources(const ServiceSettings& s) {
  json limits = json::object();
  if (s.cpus > 0) limits["NanoCPUs"] = nano_cpus(s.cpus);
  if (s.memory_bytes > 0) limits["MemoryBytes"] = s.memory_bytes;
  if (s.pids_limit > 0) limits["Pids"] = s.pids_limit;
  json reservations = json::object();
  if (s.reserve_cpus > 0) reservations["NanoCPUs"] = nano_cpus(s.reserve_cpus);
  if (s.reserve_memory_bytes > 0) reservations["MemoryBytes"] = s.reserve_memory_bytes;
  return {{"Limits", limits}, {"Reservations", reservations}};
}

json mounts(const ServiceSettings& s) {
  auto volume_labels = swarm_labels(s);
  volume_labels[kLabelUser] = s.user_key;
  json out = json::array({{{"Type", "volume"},
                           {"Source", s.volume},
                           {"Target", s.work_dir},
                           {"VolumeOptions", {{"Labels", volume_labels}}}}});
  for (const char* dir : dc::kScratchDirs)
    out.push_back({{"Type", "tmpfs"},
                   {"Target", dir},
                   {"TmpfsOptions", {{"SizeBytes", s.tmpfs_bytes}, {"Mode", kScratchMode}}}});
  return out;
}

bool is_node_pin(const json& constraint) {
  return constraint.is_string() && constraint.get<std::string>().rfind(kNodeIdConstraint, 0) == 0;
}

}  // namespace

std::map<std::string, std::string> swarm_labels(const ServiceSettings& settings,
                                                const std::string& role) {
  auto labels = dc::container_labels(settings.agent_id, settings.instance_id, settings.owner_pid,
                                     settings.owner_host);
  if (!role.empty()) labels[dc::kLabelRole] = role;
  if (!settings.owner_run.empty()) labels[kLabelOwnerRun] = settings.owner_run;
  if (!settings.owner_pidns.empty()) labels[kLabelOwnerPidns] = settings.owner_pidns;
  return labels;
}

std::vector<std::string> runner_listen_command() {
  return {kSwarmRunnerPath, "--execmcp-runner-listen=" + std::to_string(kRunnerPort),
          std::string("--execmcp-runner-key-file=") + kRunnerKeyPath};
}

std::vector<std::string> placement_constraints(const ServiceSettings& settings) {
  std::vector<std::string> out = settings.constraints;
  if (!settings.pinned_node.empty()) out.push_back(kNodeIdConstraint + settings.pinned_node);
  return out;
}

json service_spec(const ServiceSettings& s) {
  require(s.name, "the service name");
  require(s.image, "the image");
  require(s.network_id, "the network id");
  require(s.secret.id, "the secret id");
  require(s.secret.name, "the secret name");
  require(s.volume, "the workspace volume");
  const auto labels = swarm_labels(s);
  json container{{"Image", s.image},
                 {"Labels", labels},
                 {"Command", s.command.empty() ? runner_listen_command() : s.command},
                 {"User", s.user},
                 {"Dir", s.work_dir},
                 {"Env", s.env},
                 {"Init", true},
                 {"ReadOnly", true},
                 {"StopGracePeriod", kStopGraceNanos},
                 {"CapabilityDrop", json::array({"ALL"})},
                 {"Mounts", mounts(s)},
                 {"Secrets", json::array({{{"File",
                                            {{"Name", kRunnerKeyFileName},
                                             {"UID", s.secret.uid},
                                             {"GID", s.secret.gid},
                                             {"Mode", kSecretFileMode}}},
                                           {"SecretID", s.secret.id},
                                           {"SecretName", s.secret.name}}})}};
  json task{{"ContainerSpec", container},
            {"Resources", resources(s)},
            {"RestartPolicy", {{"Condition", "none"}}},
            {"Placement", {{"Constraints", placement_constraints(s)}}},
            {"Networks", json::array({{{"Target", s.network_id}}})},
            {"LogDriver",
             {{"Name", "json-file"},
              {"Options", {{"max-size", dc::kLogMaxSize}, {"max-file", dc::kLogMaxFiles}}}}}};
  return {{"Name", s.name},
          {"Labels", labels},
          {"TaskTemplate", task},
          {"Mode", {{"Replicated", {{"Replicas", 1}}}}},
          {"EndpointSpec", {{"Mode", "dnsrr"}}}};
}

json network_create_body(const ServiceSettings& settings, const std::string& name, bool encrypted) {
  require(name, "the network name");
  json body{{"Name", name},           {"Driver", "overlay"},
            {"Attachable", true},     {"Internal", true},
            {"CheckDuplicate", true}, {"Labels", swarm_labels(settings, kRoleSwarmNetwork)}};
  if (encrypted) body["Options"] = {{"encrypted", ""}};
  return body;
}

json pinned_spec(const json& spec, const std::string& node_id) {
  require(node_id, "the node id");
  json out = spec;
  json& placement = out["TaskTemplate"]["Placement"];
  json constraints = json::array();
  if (placement.is_object() && placement.contains("Constraints") &&
      placement["Constraints"].is_array())
    for (const auto& c : placement["Constraints"])
      if (!is_node_pin(c)) constraints.push_back(c);
  constraints.push_back(kNodeIdConstraint + node_id);
  placement["Constraints"] = constraints;
  return out;
}

json suspended_spec(const json& spec) {
  json out = spec;
  out["Mode"] = {{"Replicated", {{"Replicas", 0}}}};
  return out;
}

json resumed_spec(const json& spec) {
  json out = spec;
  out["Mode"] = {{"Replicated", {{"Replicas", 1}}}};
  json& task = out["TaskTemplate"];
  std::int64_t force = 0;
  if (task.contains("ForceUpdate") && task["ForceUpdate"].is_number_integer())
    force = task["ForceUpdate"].get<std::int64_t>();
  task["ForceUpdate"] = force + 1;
  return out;
}

}  // namespace execmcp::plugins::docker_swarm
