// Which Docker backend the Docker tests run, and how. One test source covers every backend:
//   EXECMCP_TEST_BACKEND           docker-api (the default) or docker-cli
//   EXECMCP_TEST_EXEC_MODE         agent or exec (unset: the backend's default, agent)
//   EXECMCP_TEST_BACKEND_SETTINGS  a JSON object merged into every settings JSON a test builds
//                                  (an SSH docker_host, Podman's binary and flags)
//   EXECMCP_TEST_OUTSIDE_CLI       the CLI for "outside" actions (docker, or podman)
//   EXECMCP_TEST_RUNTIME           the `runtime` setting of every container the tests create
//                                  (e.g. runsc; unset: the engine's default). A run skips, saying
//                                  why, when the engine has no runtime of that name.
// A value the tests do not know stops the run: a typo must not quietly test the default twice.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

namespace execmcp::docker_test {

[[noreturn]] inline void bad_test_setting(const char* name, const char* expected,
                                          const char* value) {
  std::fprintf(stderr, "%s must be %s (got '%s')\n", name, expected, value);
  std::exit(2);
}

// "docker-api" or "docker-cli".
inline std::string test_backend() {
  const char* value = std::getenv("EXECMCP_TEST_BACKEND");
  if (value == nullptr || *value == '\0') return "docker-api";
  const std::string backend = value;
  if (backend != "docker-api" && backend != "docker-cli")
    bad_test_setting("EXECMCP_TEST_BACKEND", "docker-api or docker-cli", value);
  return backend;
}

// The plugin library of test_backend().
inline const char* test_plugin_path() {
  if (test_backend() == "docker-api") return EXECMCP_DOCKER_API_PLUGIN;
#ifdef EXECMCP_DOCKER_CLI_PLUGIN
  return EXECMCP_DOCKER_CLI_PLUGIN;
#else
  bad_test_setting("EXECMCP_TEST_BACKEND", "docker-api (this build has no docker-cli plugin)",
                   "docker-cli");
#endif
}

// "agent", "exec", or "" when the variable is unset (the backend's default applies).
inline std::string test_exec_mode() {
  const char* value = std::getenv("EXECMCP_TEST_EXEC_MODE");
  if (value == nullptr || *value == '\0') return "";
  const std::string mode = value;
  if (mode != "agent" && mode != "exec")
    bad_test_setting("EXECMCP_TEST_EXEC_MODE", "agent or exec", value);
  return mode;
}

// The extra settings every backend of this run gets (an object; empty when unset).
inline nlohmann::json test_backend_settings() {
  const char* value = std::getenv("EXECMCP_TEST_BACKEND_SETTINGS");
  if (value == nullptr || *value == '\0') return nlohmann::json::object();
  auto settings = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!settings.is_object())
    bad_test_setting("EXECMCP_TEST_BACKEND_SETTINGS", "a JSON object", value);
  return settings;
}

// The CLI that tests use to look at (or act on) containers from outside the backend.
inline std::string outside_cli() {
  const char* value = std::getenv("EXECMCP_TEST_OUTSIDE_CLI");
  if (value == nullptr || *value == '\0') return "docker";
  const std::string cli = value;
  if (cli != "docker" && cli != "podman")
    bad_test_setting("EXECMCP_TEST_OUTSIDE_CLI", "docker or podman", value);
  return cli;
}

// The runtime of this run's containers ("" when unset: the engine's default).
inline std::string test_runtime() {
  const char* value = std::getenv("EXECMCP_TEST_RUNTIME");
  if (value == nullptr || *value == '\0') return "";
  const std::string runtime = value;
  if (runtime.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != std::string::npos)
    bad_test_setting("EXECMCP_TEST_RUNTIME", "a runtime name such as runsc", value);
  return runtime;
}

// True when this run's runtime is gVisor's runsc, whose kernel differs where the tests say so
// (docs/docker-backend.md, "gVisor").
inline bool under_gvisor() {
  return test_runtime().starts_with("runsc");
}

// The settings with this run's exec_mode and extra settings added, where the test did not choose
// them itself. Text that is not a JSON object is returned unchanged: the tests of bad settings
// keep getting the error they expect.
inline std::string with_test_settings(const std::string& settings_json) {
  auto settings = nlohmann::json::parse(settings_json.empty() ? "{}" : settings_json, nullptr,
                                        /*allow_exceptions=*/false);
  if (!settings.is_object()) return settings_json;
  const std::string mode = test_exec_mode();
  if (!mode.empty() && !settings.contains("exec_mode")) settings["exec_mode"] = mode;
  // Not in attach mode: that container is not ours to give a runtime.
  if (const auto runtime = test_runtime();
      !runtime.empty() && !settings.contains("runtime") && !settings.contains("container"))
    settings["runtime"] = runtime;
  const auto extra = test_backend_settings();  // items() must not outlive the object it walks
  for (const auto& [key, value] : extra.items())
    if (!settings.contains(key)) settings[key] = value;
  return settings.dump();
}

}  // namespace execmcp::docker_test
