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

// Since SDK 2.4. A plugin's own words for its settings: the lines `execmcp check-config` prints
// under the agent (without newlines; the host indents them), as the plugin reads `settings_json`
// and with the defaults it applies ("network: egress, only through the agent's own proxy, ..."),
// so the host never repeats a plugin's defaults or parses its settings. Run without creating the
// plugin, like the check, and also on settings the check refuses: describe what is written, and
// skip what cannot be read (the check reports it). Optional: without one nothing is printed.
using SettingsDescription = void(const std::string& settings_json, std::vector<std::string>& lines);

inline constexpr const char* kSettingsDescriptionSymbol = "execmcp_describe_settings";

namespace detail {
template <class Describe>
void guarded_description(Describe& describe, const std::string& settings_json,
                         std::vector<std::string>& lines) noexcept {
  try {
    describe(settings_json, lines);
  } catch (...) {
    // A description is only shown: one that fails shows nothing more.
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

// Export `function` (a SettingsDescription) as the plugin's description of its settings (SDK 2.4).
// Use once, at namespace scope, in the .cpp file that exports the plugin.
#define EXECMCP_SETTINGS_DESCRIPTION(function)                                   \
  namespace execmcp_plugin_export {                                              \
  void execmcp_describe_settings(const std::string& settings_json,               \
                                 std::vector<std::string>& lines) {              \
    ::execmcp::sdk::detail::guarded_description(function, settings_json, lines); \
  }                                                                              \
  }                                                                              \
  BOOST_DLL_ALIAS(execmcp_plugin_export::execmcp_describe_settings, execmcp_describe_settings)
