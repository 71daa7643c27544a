// What both engines share: the failure wording and the parser of a container's inspect document.
#include "docker_common/engine/engine.hpp"

namespace execmcp::plugins::docker_common {

using nlohmann::json;

std::string describe_failure(const EngineError& error, std::string_view doing) {
  if (error.complete) return error.message;
  return std::string(doing) + " failed: " + error.message;
}

namespace {

std::string text_of(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

std::vector<std::string> strings_of(const json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key) && j[key].is_array())
    for (const auto& v : j[key])
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

}  // namespace

ImageInfo image_info_from_inspect(const json& doc) {
  ImageInfo info;
  if (!doc.is_object()) return info;
  info.id = text_of(doc, "Id");
  if (doc.contains("Config") && doc["Config"].is_object()) {
    const auto& config = doc["Config"];
    info.user = text_of(config, "User");
    info.cmd = strings_of(config, "Cmd");
    info.entrypoint = strings_of(config, "Entrypoint");
    if (config.contains("Labels") && config["Labels"].is_object())
      for (const auto& [k, v] : config["Labels"].items())
        if (v.is_string()) info.labels[k] = v.get<std::string>();
  }
  return info;
}

ContainerInfo container_info_from_inspect(const json& doc) {
  ContainerInfo info;
  if (!doc.is_object()) return info;
  info.id = text_of(doc, "Id");
  info.name = text_of(doc, "Name");
  if (!info.name.empty() && info.name.front() == '/') info.name.erase(0, 1);
  if (doc.contains("Config") && doc["Config"].is_object() && doc["Config"].contains("Labels") &&
      doc["Config"]["Labels"].is_object()) {
    for (const auto& [k, v] : doc["Config"]["Labels"].items())
      if (v.is_string()) info.labels[k] = v.get<std::string>();
  }
  if (doc.contains("Config") && doc["Config"].is_object())
    info.user = text_of(doc["Config"], "User");
  if (doc.contains("Mounts") && doc["Mounts"].is_array()) {
    for (const auto& m : doc["Mounts"]) {
      if (!m.is_object()) continue;
      info.mounts.push_back({text_of(m, "Type"), text_of(m, "Source"), text_of(m, "Destination"),
                             m.contains("RW") && m["RW"].is_boolean() && m["RW"].get<bool>()});
    }
  }
  if (doc.contains("NetworkSettings") && doc["NetworkSettings"].is_object() &&
      doc["NetworkSettings"].contains("Networks") &&
      doc["NetworkSettings"]["Networks"].is_object()) {
    for (const auto& [name, endpoint] : doc["NetworkSettings"]["Networks"].items())
      info.networks[name] = endpoint.is_object() ? text_of(endpoint, "IPAddress") : "";
  }
  if (doc.contains("State") && doc["State"].is_object()) {
    const auto& s = doc["State"];
    info.state.exists = true;
    info.state.running =
        s.contains("Running") && s["Running"].is_boolean() && s["Running"].get<bool>();
    info.state.exit_code =
        s.contains("ExitCode") && s["ExitCode"].is_number_integer() ? s["ExitCode"].get<int>() : -1;
    info.state.oom_killed =
        s.contains("OOMKilled") && s["OOMKilled"].is_boolean() && s["OOMKilled"].get<bool>();
  }
  return info;
}

bool says_container_init_gone(std::string_view text) {
  return text.find("stopped state") != std::string_view::npos ||
         text.find("deleted state") != std::string_view::npos;
}

RuntimeList runtime_list_from_info(const json& runtimes) {
  RuntimeList out;
  if (!runtimes.is_object()) return out;
  for (const auto& [name, runtime] : runtimes.items()) {
    auto& info = out[name];
    if (!runtime.is_object()) continue;
    if (const auto path = runtime.find("path"); path != runtime.end() && path->is_string())
      info.path = path->get<std::string>();
    const auto it = runtime.find("runtimeArgs");
    if (it == runtime.end() || !it->is_array()) continue;
    for (const auto& arg : *it)
      if (arg.is_string()) info.args.push_back(arg.get<std::string>());
  }
  return out;
}

NetworkInfo network_info_from_inspect(const json& doc) {
  NetworkInfo info;
  if (!doc.is_object()) return info;
  info.id = text_of(doc, "Id");
  info.name = text_of(doc, "Name");
  info.driver = text_of(doc, "Driver");
  info.internal =
      doc.contains("Internal") && doc["Internal"].is_boolean() && doc["Internal"].get<bool>();
  if (doc.contains("Labels") && doc["Labels"].is_object()) {
    for (const auto& [k, v] : doc["Labels"].items())
      if (v.is_string()) info.labels[k] = v.get<std::string>();
  }
  if (const auto ipam = doc.find("IPAM"); ipam != doc.end() && ipam->is_object())
    if (const auto config = ipam->find("Config"); config != ipam->end() && config->is_array())
      for (const auto& c : *config)
        if (c.is_object() && c.contains("Subnet") && c["Subnet"].is_string())
          info.subnets.push_back(c["Subnet"].get<std::string>());
  if (doc.contains("Options") && doc["Options"].is_object()) {
    for (const auto& [k, v] : doc["Options"].items())
      if (v.is_string()) info.options[k] = v.get<std::string>();
  }
  return info;
}

}  // namespace execmcp::plugins::docker_common
