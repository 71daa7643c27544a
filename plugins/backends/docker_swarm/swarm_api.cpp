// The docker-swarm backend's Engine API calls and the defensive reading of their answers.
#include "docker_swarm/swarm_api.hpp"

#include <cctype>
#include <chrono>

#include "docker_client/docker_endpoint.hpp"
#include "execmcp/common/base64.hpp"

namespace execmcp::plugins::docker_swarm {
namespace {

using nlohmann::json;

// A string member, or "" when absent or of another type.
std::string str(const json& j, const char* key) {
  if (!j.is_object()) return {};
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// An object member, or an empty object when absent or of another type.
const json& obj(const json& j, const char* key) {
  static const json empty = json::object();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty;
}

// An array member, or an empty array.
const json& arr(const json& j, const char* key) {
  static const json empty = json::array();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : empty;
}

using docker_client::url_encode;

std::string versioned(const std::string& path) {
  return std::string("/v") + kSwarmApiVersion + path;
}

// The call as errors name it: method and path, without the query.
std::string call_name(std::string_view method, const std::string& path) {
  return std::string(method) + " " + path.substr(0, path.find('?'));
}

std::string labels_filter(const std::map<std::string, std::string>& labels) {
  json values = json::array();
  for (const auto& [key, value] : labels) values.push_back(key + "=" + value);
  return url_encode(json{{"label", values}}.dump());
}

std::string cut_cidr(const std::string& address) {
  return address.substr(0, address.find('/'));
}

std::map<std::string, std::string> string_map(const json& j) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : j.items())
    if (value.is_string()) out[key] = value.get<std::string>();
  return out;
}

ServiceInfo parse_service(const json& j) {
  ServiceInfo s;
  s.id = str(j, "ID");
  const json& version = obj(j, "Version");
  if (version.contains("Index") && version["Index"].is_number_unsigned())
    s.version = version["Index"].get<std::uint64_t>();
  s.spec = obj(j, "Spec");
  s.name = str(s.spec, "Name");
  s.labels = string_map(obj(s.spec, "Labels"));
  return s;
}

TaskInfo parse_task(const json& j) {
  TaskInfo t;
  t.id = str(j, "ID");
  t.node_id = str(j, "NodeID");
  t.desired_state = str(j, "DesiredState");
  const json& status = obj(j, "Status");
  t.state = str(status, "State");
  t.message = str(status, "Message");
  t.err = str(status, "Err");
  const json& container = obj(status, "ContainerStatus");
  if (container.contains("ExitCode") && container["ExitCode"].is_number_integer())
    t.exit_code = container["ExitCode"].get<std::int64_t>();
  for (const auto& attachment : arr(j, "NetworksAttachments")) {
    const std::string network = str(obj(attachment, "Network"), "ID");
    const json& addresses = arr(attachment, "Addresses");
    if (network.empty() || addresses.empty() || !addresses[0].is_string()) continue;
    t.addresses[network] = cut_cidr(addresses[0].get<std::string>());
  }
  return t;
}

}  // namespace

TaskPhase task_phase(std::string_view state) {
  if (state == "running") return TaskPhase::kRunning;
  if (state == "pending") return TaskPhase::kPending;
  if (state == "failed" || state == "rejected") return TaskPhase::kFailed;
  if (state == "complete" || state == "shutdown" || state == "remove" || state == "orphaned")
    return TaskPhase::kEnded;
  if (state == "new" || state == "allocated" || state == "assigned" || state == "accepted" ||
      state == "preparing" || state == "ready" || state == "starting")
    return TaskPhase::kStarting;
  return TaskPhase::kUnknown;
}

std::string TaskInfo::address_on(const std::string& network_id) const {
  auto it = addresses.find(network_id);
  return it == addresses.end() ? std::string() : it->second;
}

EngineTransport::EngineTransport(docker_client::DockerEndpoint endpoint)
    : client_(std::move(endpoint)) {}

HttpResponse EngineTransport::request(std::string_view method, const std::string& path,
                                      const std::string& body) {
  return client_.request(method, path, body, std::chrono::seconds(30));
}

SwarmError SwarmApi::call(std::string_view method, const std::string& path, const std::string& body,
                          json* parsed, bool missing_ok) {
  const std::string name = call_name(method, path);
  const HttpResponse r = transport_.request(method, versioned(path), body);
  if (!r.error.empty()) return {0, name + ": " + r.error};
  if (missing_ok && r.status == 404) return {};
  if (!r.ok()) {
    // "HTTP 409: <the engine's message>", of a bounded part of the body.
    return {r.status,
            name + ": " + docker_client::engine_message(r.status, r.body.substr(0, 4096))};
  }
  if (!parsed) return {};
  if (r.body.size() > kMaxAnswerBytes)
    return {0, name + ": the engine's answer of " + std::to_string(r.body.size()) +
                   " bytes is over the " + std::to_string(kMaxAnswerBytes) + " this reads"};
  *parsed = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (parsed->is_discarded()) return {0, name + ": the engine's answer is not JSON"};
  return {};
}

SwarmError SwarmApi::info(ManagerInfo& out) {
  json j;
  if (auto e = call("GET", "/info", {}, &j); !e.ok()) return e;
  const json& swarm = obj(j, "Swarm");
  out.node_id = str(swarm, "NodeID");
  out.local_node_state = str(swarm, "LocalNodeState");
  const auto it = swarm.find("ControlAvailable");
  out.control_available = it != swarm.end() && it->is_boolean() && it->get<bool>();
  return {};
}

namespace {
// The "Id" or "ID" of a create's answer, or an error naming the call.
SwarmError created_id(const json& j, const char* what, std::string& id) {
  id = str(j, "ID");
  if (id.empty()) id = str(j, "Id");
  if (id.empty()) return {0, std::string(what) + ": the engine's answer has no ID"};
  return {};
}
}  // namespace

SwarmError SwarmApi::create_secret(const std::string& name,
                                   const std::map<std::string, std::string>& labels,
                                   std::string_view data, std::string& id) {
  json j;
  const json body{{"Name", name}, {"Labels", labels}, {"Data", common::base64_encode(data)}};
  if (auto e = call("POST", "/secrets/create", body.dump(), &j); !e.ok()) return e;
  return created_id(j, "POST /secrets/create", id);
}

SwarmError SwarmApi::remove_secret(const std::string& id) {
  return call("DELETE", "/secrets/" + url_encode(id), {}, nullptr, true);
}

SwarmError SwarmApi::list_secrets(const std::map<std::string, std::string>& labels,
                                  std::vector<LabelledObject>& out) {
  json j;
  if (auto e = call("GET", "/secrets?filters=" + labels_filter(labels), {}, &j); !e.ok()) return e;
  if (!j.is_array()) return {0, "GET /secrets: the engine's answer is not a list"};
  out.clear();
  for (const auto& s : j) {
    const json& spec = obj(s, "Spec");
    LabelledObject o{str(s, "ID"), str(spec, "Name"), string_map(obj(spec, "Labels"))};
    if (!o.id.empty()) out.push_back(std::move(o));
  }
  return {};
}

SwarmError SwarmApi::list_networks(const std::map<std::string, std::string>& labels,
                                   std::vector<LabelledObject>& out) {
  json j;
  if (auto e = call("GET", "/networks?filters=" + labels_filter(labels), {}, &j); !e.ok()) return e;
  if (!j.is_array()) return {0, "GET /networks: the engine's answer is not a list"};
  out.clear();
  for (const auto& n : j) {
    LabelledObject o{str(n, "Id"), str(n, "Name"), string_map(obj(n, "Labels"))};
    if (o.id.empty()) o.id = str(n, "ID");
    if (!o.id.empty()) out.push_back(std::move(o));
  }
  return {};
}

SwarmError SwarmApi::create_network(const json& body, std::string& id) {
  json j;
  if (auto e = call("POST", "/networks/create", body.dump(), &j); !e.ok()) return e;
  return created_id(j, "POST /networks/create", id);
}

SwarmError SwarmApi::connect_network(const std::string& network, const std::string& container) {
  return call("POST", "/networks/" + url_encode(network) + "/connect",
              json{{"Container", container}}.dump(), nullptr);
}

SwarmError SwarmApi::disconnect_network(const std::string& network, const std::string& container,
                                        bool force) {
  return call("POST", "/networks/" + url_encode(network) + "/disconnect",
              json{{"Container", container}, {"Force", force}}.dump(), nullptr, true);
}

SwarmError SwarmApi::remove_network(const std::string& id) {
  return call("DELETE", "/networks/" + url_encode(id), {}, nullptr, true);
}

SwarmError SwarmApi::create_service(const json& spec, std::string& id) {
  json j;
  if (auto e = call("POST", "/services/create", spec.dump(), &j); !e.ok()) return e;
  return created_id(j, "POST /services/create", id);
}

SwarmError SwarmApi::inspect_service(const std::string& id, ServiceInfo& out) {
  json j;
  const std::string path = "/services/" + url_encode(id);
  if (auto e = call("GET", path, {}, &j); !e.ok()) return e;
  out = parse_service(j);
  if (out.id.empty() || out.version == 0)
    return {0, "GET " + path + ": the engine's answer has no service ID or Version.Index"};
  return {};
}

SwarmError SwarmApi::update_service(const std::string& id, std::uint64_t version,
                                    const json& spec) {
  // The answer's Warnings are not read.
  return call("POST", "/services/" + url_encode(id) + "/update?version=" + std::to_string(version),
              spec.dump(), nullptr);
}

SwarmError SwarmApi::remove_service(const std::string& id) {
  return call("DELETE", "/services/" + url_encode(id), {}, nullptr, true);
}

SwarmError SwarmApi::list_services(const std::map<std::string, std::string>& labels,
                                   std::vector<ServiceInfo>& out) {
  json j;
  if (auto e = call("GET", "/services?filters=" + labels_filter(labels), {}, &j); !e.ok()) return e;
  if (!j.is_array()) return {0, "GET /services: the engine's answer is not a list"};
  out.clear();
  for (const auto& s : j)
    if (auto info = parse_service(s); !info.id.empty()) out.push_back(std::move(info));
  return {};
}

SwarmError SwarmApi::list_tasks(const std::string& service_id, bool desired_running,
                                std::vector<TaskInfo>& out) {
  json filters{{"service", json::array({service_id})}};
  if (desired_running) filters["desired-state"] = json::array({"running"});
  json j;
  if (auto e = call("GET", "/tasks?filters=" + url_encode(filters.dump()), {}, &j); !e.ok())
    return e;
  if (!j.is_array()) return {0, "GET /tasks: the engine's answer is not a list"};
  out.clear();
  for (const auto& t : j)
    if (auto info = parse_task(t); !info.id.empty()) out.push_back(std::move(info));
  return {};
}

SwarmError SwarmApi::inspect_node(const std::string& id, NodeInfo& out) {
  json j;
  const std::string path = "/nodes/" + url_encode(id);
  if (auto e = call("GET", path, {}, &j); !e.ok()) return e;
  out.id = str(j, "ID");
  out.hostname = str(obj(j, "Description"), "Hostname");
  out.state = str(obj(j, "Status"), "State");
  out.availability = str(obj(j, "Spec"), "Availability");
  out.role = str(obj(j, "Spec"), "Role");
  if (out.id.empty() || out.state.empty())
    return {0, "GET " + path + ": the engine's answer has no node ID or Status.State"};
  return {};
}

}  // namespace execmcp::plugins::docker_swarm
