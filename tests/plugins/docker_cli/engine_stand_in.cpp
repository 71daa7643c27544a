// Stands in for docker_common/engine.cpp (container_info_from_inspect, describe_failure) until it
// is in this tree; CMake builds this file only while that one does not exist.
#include "docker_common/engine.hpp"

namespace execmcp::plugins::docker_common {

std::string describe_failure(const EngineError& error, std::string_view doing) {
  if (error.kind == EngineError::Kind::kUnreachable) return error.message;
  return std::string(doing) + " failed: " + error.message;
}

ContainerInfo container_info_from_inspect(const nlohmann::json& doc) {
  ContainerInfo info;
  info.id = doc.value("Id", std::string());
  info.name = doc.value("Name", std::string());
  if (!info.name.empty() && info.name.front() == '/') info.name.erase(0, 1);
  if (doc.contains("Config") && doc["Config"].is_object() && doc["Config"].contains("Labels") &&
      doc["Config"]["Labels"].is_object())
    for (const auto& [k, v] : doc["Config"]["Labels"].items())
      if (v.is_string()) info.labels[k] = v.get<std::string>();
  if (doc.contains("Mounts") && doc["Mounts"].is_array())
    for (const auto& m : doc["Mounts"])
      if (m.is_object())
        info.mounts.push_back({m.value("Type", std::string()), m.value("Source", std::string()),
                               m.value("Destination", std::string()), m.value("RW", false)});
  if (doc.contains("State") && doc["State"].is_object()) {
    const auto& s = doc["State"];
    info.state.exists = true;
    info.state.running = s.value("Running", false);
    info.state.exit_code =
        s.contains("ExitCode") && s["ExitCode"].is_number_integer() ? s["ExitCode"].get<int>() : -1;
    info.state.oom_killed = s.value("OOMKilled", false);
  }
  return info;
}

}  // namespace execmcp::plugins::docker_common
