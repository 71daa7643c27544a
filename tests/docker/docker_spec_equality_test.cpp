// The two Docker backends make the same container: for each config, docker-api and docker-cli each
// start one on the real engine, and `docker inspect` must show the same Config and HostConfig,
// apart from what names one container (its name, hostname and instance label).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <boost/dll/shared_library.hpp>
#include <nlohmann/json.hpp>

#include "docker_test_support.hpp"

namespace execmcp::docker_test {
namespace {

using nlohmann::json;

// No value, an empty list and an empty map: one value to the engine (the CLI sends `[]` where the
// API body sends nothing).
bool empty_value(const json& v) {
  return v.is_null() || ((v.is_array() || v.is_object()) && v.empty());
}

// Every path where `a` and `b` differ, with both values.
void diff(const json& a, const json& b, const std::string& path, std::vector<std::string>& out) {
  if (empty_value(a) && empty_value(b)) return;
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : a.items())
      diff(v, b.contains(k) ? b[k] : json(), path + "." + k, out);
    for (const auto& [k, v] : b.items())
      if (!a.contains(k)) diff(json(), v, path + "." + k, out);
    return;
  }
  if (a != b) out.push_back(path + ": docker-api " + a.dump() + " | docker-cli " + b.dump());
}

// Config and HostConfig of a container, without what only names it.
json comparable(const std::string& container) {
  const auto doc =
      json::parse(sh(outside_cli() + " inspect --type container " + container), nullptr, false);
  if (!doc.is_array() || doc.empty() || !doc[0].is_object()) return json();
  json out = {{"Config", doc[0].value("Config", json::object())},
              {"HostConfig", doc[0].value("HostConfig", json::object())}};
  out["Config"].erase("Hostname");
  if (out["Config"].contains("Labels") && out["Config"]["Labels"].is_object())
    out["Config"]["Labels"].erase("execmcp.instance");
  // Both plugins pass the variables in one order, but docker CLI 28 sometimes creates them in
  // another (seen in two runs: B before A); with distinct names the order means nothing.
  if (out["Config"].contains("Env") && out["Config"]["Env"].is_array()) {
    auto env = out["Config"]["Env"].get<std::vector<std::string>>();
    std::sort(env.begin(), env.end());
    out["Config"]["Env"] = env;
  }
  return out;
}

class Plugin {
 public:
  explicit Plugin(const char* path) : lib_(path, boost::dll::load_mode::rtld_now) {}
  std::unique_ptr<ExecutorBackend> create(BackendInit init, std::string& error) {
    auto& factory = lib_.get_alias<execmcp::sdk::BackendFactory>("execmcp_create_backend");
    init.log = &g_log;
    return std::unique_ptr<ExecutorBackend>(factory(init, error));
  }

 private:
  boost::dll::shared_library lib_;
};

struct Case {
  const char* name;
  std::string settings;
};

class DockerSpecEquality : public ::testing::TestWithParam<Case> {};

// Starts the backend, takes its container's comparable inspect, removes it.
json container_of(Plugin& plugin, const std::string& tag, const TempDir& ws, const TempDir& extra,
                  const std::string& settings, std::string& error) {
  BackendInit init;
  init.agent_id = "spec";
  init.instance_id = tag + instance_tag();
  init.cwd = ws.path();
  init.paths = {{ws.path(), true}, {extra.path() + "/context", false}};
  init.settings_json = with_test_settings(settings);
  auto backend = plugin.create(init, error);
  if (!backend) return json();
  error = backend->start();
  json out = error.empty() ? comparable("execmcp-spec-" + init.instance_id) : json();
  backend->cleanup();
  return out;
}

TEST_P(DockerSpecEquality, BothBackendsCreateTheSameContainer) {
  REQUIRE_ENGINE();
  static Plugin api(EXECMCP_DOCKER_API_PLUGIN);
  static Plugin cli(EXECMCP_DOCKER_CLI_PLUGIN);
  TempDir ws("spec");
  TempDir extra("specextra");
  fs::create_directories(extra.path() + "/context");
  fs::create_directories(extra.path() + "/rw");
  fs::create_directories(extra.path() + "/ro");
  std::string settings = GetParam().settings;
  while (settings.find("@EXTRA@") != std::string::npos)
    settings.replace(settings.find("@EXTRA@"), 7, extra.path());

  std::string api_error, cli_error;
  const json a = container_of(api, "a", ws, extra, settings, api_error);
  const json c = container_of(cli, "c", ws, extra, settings, cli_error);
  ASSERT_EQ(api_error, "");
  ASSERT_EQ(cli_error, "");
  ASSERT_TRUE(a.is_object());
  ASSERT_TRUE(c.is_object());
  std::vector<std::string> differences;
  diff(a, c, "", differences);
  std::string report;
  for (const auto& d : differences) report += "  " + d + "\n";
  EXPECT_TRUE(differences.empty()) << "the containers differ:\n" << report;
}

INSTANTIATE_TEST_SUITE_P(
    Configs, DockerSpecEquality,
    ::testing::Values(
        Case{"defaults", "{}"},
        Case{"limits", R"({"memory": "1g", "cpus": 1.5, "pids_limit": 100, "tmpfs_size": "64m"})"},
        Case{"no_limits", R"({"memory": "none", "pids_limit": 0})"},
        Case{"writable_rootfs", R"({"writable_rootfs": true, "network": "bridge"})"},
        Case{
            "mounts_env_user",
            R"({"extra_mounts": [{"source": "@EXTRA@/rw", "target": "/data/rw", "read_only": false},
                                  {"source": "@EXTRA@/ro", "target": "/data/ro"}],
                 "env": {"A": "1", "B": "two words"}, "user": "1000:1000"})"},
        Case{"exec_mode", R"({"exec_mode": "exec"})"},
        // The sudo image, its capabilities, no no-new-privileges, a writable image filesystem.
        Case{"sudo", R"({"sudo": true})"}, Case{"agent_mode", R"({"exec_mode": "agent"})"}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace execmcp::docker_test
