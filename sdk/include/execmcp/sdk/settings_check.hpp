// A plugin's own check of its settings, which the host runs before it creates the plugin (and
// `execmcp check-config` runs without creating it), so each problem is reported at the config line
// of the setting at fault. Optional: a plugin without one is checked by its factory alone.
#pragma once

#include <exception>
#include <string>
#include <vector>

#include <boost/dll/alias.hpp>

namespace execmcp::sdk {

// One thing wrong with a plugin's settings.
struct SettingsProblem {
  // RFC 6901 pointer into the settings object at the value at fault: "/deny/1", "/memory"; "" for
  // the settings as a whole. The host shows it as the config's own key and line.
  std::string pointer;
  // Plain words, without the setting's name: "invalid regular expression '(': missing ')'".
  std::string message;
};

// Reads `settings_json` (a JSON object) and appends every problem found; appends nothing when the
// settings are fine. Must not create the plugin's objects or touch the world (files, engines):
// the factory still checks what only a start can.
using SettingsCheck = void(const std::string& settings_json,
                           std::vector<SettingsProblem>& problems);

inline constexpr const char* kSettingsCheckSymbol = "execmcp_check_settings";

// The token of `key` in a JSON pointer ('~' and '/' escaped as RFC 6901 says).
inline std::string pointer_token(const std::string& key) {
  std::string token;
  for (const char c : key) {
    if (c == '~') {
      token += "~0";
    } else if (c == '/') {
      token += "~1";
    } else {
      token += c;
    }
  }
  return token;
}

namespace detail {
template <class Check>
void guarded_check(Check& check, const std::string& settings_json,
                   std::vector<SettingsProblem>& problems) noexcept {
  try {
    check(settings_json, problems);
  } catch (const std::exception& e) {
    try {
      problems.push_back({"", e.what()});
    } catch (...) {
    }
  } catch (...) {
    try {
      problems.push_back({"", "the plugin's settings check failed (unknown exception)"});
    } catch (...) {
    }
  }
}
}  // namespace detail

}  // namespace execmcp::sdk

// Export `function` (a SettingsCheck) as the plugin's settings check. Use once, at namespace
// scope, in the .cpp file that exports the plugin.
#define EXECMCP_SETTINGS_CHECK(function)                                                \
  namespace execmcp_plugin_export {                                                     \
  void execmcp_check_settings(const std::string& settings_json,                         \
                              std::vector<::execmcp::sdk::SettingsProblem>& problems) { \
    ::execmcp::sdk::detail::guarded_check(function, settings_json, problems);           \
  }                                                                                     \
  }                                                                                     \
  BOOST_DLL_ALIAS(execmcp_plugin_export::execmcp_check_settings, execmcp_check_settings)
