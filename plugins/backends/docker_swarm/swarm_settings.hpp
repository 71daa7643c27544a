// The docker-swarm backend's settings, parsed strictly: its own keys, and the Docker backends'
// keys it cannot honour refused by name with the reason (it has no exec path, no attach mode, no
// host mounts, no egress yet). See docs/docker-backend.md (docker-swarm).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "execmcp/sdk/settings_check.hpp"

namespace execmcp::plugins::docker_swarm {

inline constexpr const char* kDefaultSwarmImage = "execmcp/swarm-runtime:latest";

struct SwarmSettings {
  std::string image = kDefaultSwarmImage;  // must hold /usr/lib/execmcp/execmcp-runner
  std::string docker_host;                 // a manager; "": $DOCKER_HOST, then the default socket
  // The container the server runs in, connected to each sandbox's network; "": the server's own
  // container, found from its hostname (Docker's default hostname is the container's short id).
  std::string server_container;
  std::string owner_id;                               // "": the hostname
  std::int64_t memory_bytes = std::int64_t{1} << 30;  // 0: no limit
  double cpus = 0;                                    // 0: no limit
  std::int64_t pids_limit = 512;                      // <= 0: no limit
  std::int64_t reserve_memory_bytes = 0;
  double reserve_cpus = 0;
  std::vector<std::string> constraints;
  bool encrypted = false;
  std::chrono::seconds start_timeout{60};
  std::string shell = "/bin/sh";
  std::map<std::string, std::string> env;
  std::string network = "none";
  std::int64_t tmpfs_bytes = std::int64_t{512} << 20;
};

// Throws docker_common::SettingError naming the key at fault (unknown keys list the known ones;
// the Docker backends' keys that this one cannot honour say why).
SwarmSettings parse_swarm_settings(const std::string& settings_json);

// EXECMCP_SETTINGS_CHECK: the first problem parse_swarm_settings() finds, at its setting.
void check_swarm_settings(const std::string& settings_json,
                          std::vector<sdk::SettingsProblem>& problems);

// EXECMCP_SETTINGS_DESCRIPTION: the settings as read, with the defaults applied.
void describe_swarm_settings(const std::string& settings_json, std::vector<std::string>& lines);

}  // namespace execmcp::plugins::docker_swarm
