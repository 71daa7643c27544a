// The exec_mode every Docker test runs the docker-api backend in: EXECMCP_TEST_EXEC_MODE (agent or
// exec; unset means the backend's default, agent), injected into each settings JSON a test builds.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

namespace execmcp::docker_test {

// "agent", "exec", or "" when the variable is unset (the backend's default applies). Any other
// value stops the run: a typo must not quietly test the default mode twice.
inline std::string test_exec_mode() {
  const char* value = std::getenv("EXECMCP_TEST_EXEC_MODE");
  if (value == nullptr || *value == '\0') return "";
  const std::string mode = value;
  if (mode != "agent" && mode != "exec") {
    std::fprintf(stderr, "EXECMCP_TEST_EXEC_MODE must be agent or exec (got '%s')\n", value);
    std::exit(2);
  }
  return mode;
}

// The settings with "exec_mode" added when EXECMCP_TEST_EXEC_MODE is set, unless the test chose
// one itself. Text that is not a JSON object is returned unchanged: the tests of bad settings
// keep getting the error they expect.
inline std::string with_test_exec_mode(const std::string& settings_json) {
  const std::string mode = test_exec_mode();
  if (mode.empty()) return settings_json;
  auto settings = nlohmann::json::parse(settings_json.empty() ? "{}" : settings_json, nullptr,
                                        /*allow_exceptions=*/false);
  if (!settings.is_object() || settings.contains("exec_mode")) return settings_json;
  settings["exec_mode"] = mode;
  return settings.dump();
}

}  // namespace execmcp::docker_test
