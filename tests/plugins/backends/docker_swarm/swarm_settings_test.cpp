// The docker-swarm backend's settings: defaults, values read, and every refusal naming its setting
// and why (no exec path, no attach mode, no egress, a bad value), as check-config reports them.
#include "docker_swarm/swarm_settings.hpp"

#include <gtest/gtest.h>

#include "docker_common/settings/docker_settings.hpp"
#include "docker_swarm/swarm_backend.hpp"

namespace execmcp::plugins::docker_swarm {
namespace {

// The one problem check_swarm_settings() finds in `json`, as "pointer: message".
std::string problem(const std::string& json) {
  std::vector<sdk::SettingsProblem> problems;
  check_swarm_settings(json, problems);
  if (problems.empty()) return "";
  return problems[0].pointer + ": " + problems[0].message;
}

TEST(SwarmSettings, Defaults) {
  const auto s = parse_swarm_settings("{}");
  EXPECT_EQ(s.image, "execmcp/swarm-runtime:latest");
  EXPECT_EQ(s.memory_bytes, 1LL << 30);
  EXPECT_EQ(s.pids_limit, 512);
  EXPECT_EQ(s.network, "none");
  EXPECT_FALSE(s.encrypted);
  EXPECT_EQ(s.start_timeout, std::chrono::seconds(60));
  EXPECT_EQ(s.shell, "/bin/sh");
  EXPECT_EQ(s.tmpfs_bytes, 512LL << 20);
  EXPECT_EQ(problem("{}"), "");
}

TEST(SwarmSettings, ValuesAreRead) {
  const auto s = parse_swarm_settings(R"({
    "image": "reg/img:1", "docker_host": "tcp://manager:2375", "server_container": "srv",
    "owner_id": "execmcp-server", "memory": "2g", "cpus": 1.5, "pids_limit": 64,
    "reserve_memory": "256m", "reserve_cpus": 0.25,
    "constraints": ["node.role==worker", "node.labels.tier!=db"], "encrypted": true,
    "start_timeout": 30, "shell": "/bin/bash", "env": {"A": "1"}, "network": "none",
    "tmpfs_size": "64m"})");
  EXPECT_EQ(s.image, "reg/img:1");
  EXPECT_EQ(s.docker_host, "tcp://manager:2375");
  EXPECT_EQ(s.server_container, "srv");
  EXPECT_EQ(s.owner_id, "execmcp-server");
  EXPECT_EQ(s.memory_bytes, 2LL << 30);
  EXPECT_DOUBLE_EQ(s.cpus, 1.5);
  EXPECT_EQ(s.pids_limit, 64);
  EXPECT_EQ(s.reserve_memory_bytes, 256LL << 20);
  EXPECT_DOUBLE_EQ(s.reserve_cpus, 0.25);
  EXPECT_EQ(s.constraints.size(), 2u);
  EXPECT_TRUE(s.encrypted);
  EXPECT_EQ(s.start_timeout, std::chrono::seconds(30));
  EXPECT_EQ(s.env.at("A"), "1");
  EXPECT_EQ(s.tmpfs_bytes, 64LL << 20);
  EXPECT_EQ(parse_swarm_settings(R"({"memory":"none"})").memory_bytes, 0);
}

TEST(SwarmSettings, WhatNeedsExecIsRefusedByName) {
  EXPECT_NE(problem(R"({"exec_mode":"exec"})")
                .find("/exec_mode: not on docker-swarm: docker-swarm "
                      "has no exec path"),
            std::string::npos)
      << problem(R"({"exec_mode":"exec"})");
  EXPECT_NE(problem(R"({"container":"c"})").find("/container: not on docker-swarm: attach mode"),
            std::string::npos);
  EXPECT_NE(
      problem(R"({"preinstall":{"system":["git"]}})").find("/preinstall: not on docker-swarm"),
      std::string::npos);
  EXPECT_NE(problem(R"({"extra_mounts":[]})").find("/extra_mounts: not on docker-swarm"),
            std::string::npos);
  EXPECT_NE(problem(R"({"runtime":"runsc"})").find("default-runtime"), std::string::npos);
}

TEST(SwarmSettings, NetworkOtherThanNoneIsRefusedSayingWhy) {
  for (const char* n : {"egress", "bridge", "host"}) {
    const auto p = problem(std::string(R"({"network":")") + n + "\"}");
    EXPECT_NE(p.find("/network: only 'none' on docker-swarm"), std::string::npos) << p;
    EXPECT_NE(p.find("internal overlay"), std::string::npos) << p;
  }
  EXPECT_NE(problem(R"({"egress":{}})").find("/egress: not on docker-swarm"), std::string::npos);
}

TEST(SwarmSettings, BadValuesNameTheirSetting) {
  EXPECT_EQ(problem(R"({"memory":"lots"})").rfind("/memory: ", 0), 0u);
  EXPECT_EQ(problem(R"({"cpus":0})"), "/cpus: expected a positive number of CPUs, e.g. 1.5");
  EXPECT_EQ(problem(R"({"reserve_cpus":-1})").rfind("/reserve_cpus: ", 0), 0u);
  EXPECT_EQ(problem(R"({"pids_limit":"many"})").rfind("/pids_limit: ", 0), 0u);
  EXPECT_EQ(problem(R"({"constraints":["node.role"]})").rfind("/constraints/0: ", 0), 0u);
  EXPECT_NE(problem(R"({"constraints":["node.id==abc"]})").find("the backend's own pin"),
            std::string::npos);
  EXPECT_EQ(problem(R"({"encrypted":"yes"})"), "/encrypted: expected true or false");
  EXPECT_EQ(problem(R"({"start_timeout":0})").rfind("/start_timeout: ", 0), 0u);
  EXPECT_EQ(problem(R"({"shell":"sh"})"), "/shell: expected an absolute path, e.g. /bin/sh");
  EXPECT_EQ(problem(R"({"image":""})"), "/image: expected a non-empty image reference");
  EXPECT_NE(problem(R"({"docker_host":"ssh://m"})").find("ssh://"), std::string::npos);
  const auto unknown = problem(R"({"colour":"blue"})");
  EXPECT_EQ(unknown.rfind("/colour: unknown setting (known: image, docker_host", 0), 0u) << unknown;
}

TEST(SwarmSettings, LifecycleConfigFromInit) {
  sdk::BackendInit init;
  init.agent_id = "agent";
  init.instance_id = "u-alice";
  init.cwd = "/srv/workspaces/alice";
  init.sandbox_cwd = "/workspace";
  SwarmSettings s;
  s.owner_id = "server-1";
  s.server_container = "srv";
  s.constraints = {"node.role==worker"};
  const auto c = lifecycle_config(init, s);
  EXPECT_EQ(c.service.name, "execmcp-agent-u-alice");
  EXPECT_EQ(c.service.owner_host, "server-1");
  EXPECT_EQ(c.service.user_key, "alice");
  EXPECT_EQ(c.service.work_dir, "/workspace");
  EXPECT_EQ(c.record_dir, "/srv/workspaces/alice");
  EXPECT_EQ(c.server_container, "srv");
  EXPECT_EQ(c.service.memory_bytes, 1LL << 30);
  // A long instance id keeps the service name within Swarm's 63 characters.
  init.instance_id = std::string(80, 'x');
  EXPECT_LE(lifecycle_config(init, s).service.name.size(), 63u);
}

}  // namespace
}  // namespace execmcp::plugins::docker_swarm
