// Tests for the strict parsing of the Docker backends' settings.
#include "docker_common/docker_settings.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace execmcp::plugins::docker_common {
namespace {

std::string error_of(const std::string& json) {
  try {
    parse_docker_settings(json);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(DockerSettings, DefaultsWhenEmpty) {
  auto s = parse_docker_settings("{}");
  EXPECT_EQ(s.image, "execmcp/runtime:latest");
  EXPECT_EQ(s.network, "none");
  EXPECT_EQ(s.pids_limit, 512);
  // Memory is bounded unless the operator says "none"; the disk has no default (see the docs).
  EXPECT_EQ(s.memory_bytes, DockerSettings::kDefaultMemoryBytes);
  EXPECT_FALSE(parse_docker_settings(R"({"memory": "none"})").memory_bytes);
  EXPECT_FALSE(s.disk_bytes);
  EXPECT_FALSE(s.cpus);
  EXPECT_EQ(s.shell, "/bin/sh");
  EXPECT_TRUE(s.user.empty());
  EXPECT_EQ(parse_docker_settings("").image, "execmcp/runtime:latest");
}

TEST(DockerSettings, ParsesEveryKey) {
  auto s = parse_docker_settings(R"({
    "image": "img:1", "memory": "512m", "cpus": 1.5, "pids_limit": 64, "network": "bridge",
    "user": "1234:1234", "env": {"A": "1"}, "docker_host": "unix:///x.sock",
    "extra_mounts": [{"source": "/data", "target": "/mnt/data", "read_only": false}],
    "command_prefix": "set -e;", "venv_path": "/opt/venv", "shell": "/bin/bash"})");
  EXPECT_EQ(s.image, "img:1");
  EXPECT_EQ(*s.memory_bytes, 512LL * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*s.cpus, 1.5);
  EXPECT_EQ(s.pids_limit, 64);
  EXPECT_EQ(s.network, "bridge");
  EXPECT_EQ(s.user, "1234:1234");
  EXPECT_EQ(s.env.at("A"), "1");
  EXPECT_EQ(s.docker_host, "unix:///x.sock");
  ASSERT_EQ(s.extra_mounts.size(), 1u);
  EXPECT_EQ(s.extra_mounts[0].target, "/mnt/data");
  EXPECT_FALSE(s.extra_mounts[0].read_only);
  EXPECT_EQ(s.command_prefix, "set -e;");
  EXPECT_EQ(s.venv_path, "/opt/venv");
  EXPECT_EQ(s.shell, "/bin/bash");
  EXPECT_EQ(*parse_docker_settings(R"({"memory": 1048576})").memory_bytes, 1048576);
  EXPECT_EQ(*parse_docker_settings(R"({"disk": "10g"})").disk_bytes, 10LL << 30);
  const auto scratch = parse_docker_settings(R"({"tmpfs_size": "64m", "writable_rootfs": true})");
  EXPECT_EQ(scratch.tmpfs_bytes, 64LL << 20);
  EXPECT_TRUE(scratch.writable_rootfs);
  EXPECT_NE(error_of(R"({"writable_rootfs": "yes"})").find("'writable_rootfs'"), std::string::npos);
}

TEST(DockerSettings, ErrorsNameTheKey) {
  EXPECT_NE(error_of(R"({"imagee": "x"})").find("unknown setting 'imagee' (known: image,"),
            std::string::npos);
  const auto mem = error_of(R"({"memory": "lots"})");
  EXPECT_NE(mem.find("'memory'"), std::string::npos) << mem;
  EXPECT_NE(mem.find("512m"), std::string::npos) << mem;
  EXPECT_NE(error_of(R"({"memory": true})").find("'memory'"), std::string::npos);
  EXPECT_NE(error_of(R"({"disk": "none"})").find("'disk'"), std::string::npos);
  EXPECT_NE(error_of(R"({"disk": 0})").find("'disk'"), std::string::npos);
  EXPECT_NE(error_of(R"({"cpus": "2"})").find("'cpus'"), std::string::npos);
  EXPECT_NE(error_of(R"({"cpus": -1})").find("'cpus'"), std::string::npos);
  EXPECT_NE(error_of(R"({"network": "overlay"})").find("none, bridge, host"), std::string::npos);
  EXPECT_NE(error_of(R"({"pids_limit": 1.5})").find("'pids_limit'"), std::string::npos);
  EXPECT_NE(error_of(R"({"env": {"A": 1}})").find("'env.A'"), std::string::npos);
  EXPECT_NE(error_of(R"({"extra_mounts": [{"source": "rel"}]})").find("extra_mounts[0].source"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"extra_mounts": [{"source": "/a", "mode": "ro"}]})").find("mode"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"shell": "sh"})").find("'shell'"), std::string::npos);
  EXPECT_NE(error_of("[1]").find("object"), std::string::npos);
  EXPECT_NE(error_of("{").find("JSON"), std::string::npos);
}

TEST(DockerSettings, ExecModeIsAgentUnlessSetToExec) {
  EXPECT_EQ(parse_docker_settings("{}").exec_mode, ExecMode::Agent);
  EXPECT_EQ(parse_docker_settings(R"({"exec_mode": "agent"})").exec_mode, ExecMode::Agent);
  EXPECT_EQ(parse_docker_settings(R"({"exec_mode": "exec"})").exec_mode, ExecMode::Exec);
  for (const char* bad :
       {R"({"exec_mode": "Exec"})", R"({"exec_mode": "runner"})", R"({"exec_mode": ""})",
        R"({"exec_mode": 1})", R"({"exec_mode": null})"}) {
    const auto error = error_of(bad);
    EXPECT_NE(error.find("'exec_mode'"), std::string::npos) << bad << ": " << error;
    EXPECT_NE(error.find("agent, exec"), std::string::npos) << bad << ": " << error;
  }
  EXPECT_NE(error_of(R"({"exec_mod": "exec"})").find("exec_mode"), std::string::npos);
}

TEST(DockerSettings, RootIsNeverAccepted) {
  for (const char* user : {"root", "0", "0:0", "root:root", "00"}) {
    const std::string json = std::string(R"({"user": ")") + user + "\"}";
    EXPECT_NE(error_of(json).find("'user'"), std::string::npos) << user;
    EXPECT_TRUE(is_root_user(user)) << user;
  }
  EXPECT_FALSE(is_root_user("1000"));
  EXPECT_FALSE(is_root_user("1000:0"));
  EXPECT_FALSE(is_root_user("execmcp"));
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
