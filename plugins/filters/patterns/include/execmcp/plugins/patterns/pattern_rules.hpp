// The patterns filter's allow/deny regex rules as a plain C++ API, shared by the plugin and tests.
#pragma once

#include <cstddef>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "execmcp/sdk/command_filter.hpp"
#include "execmcp/sdk/settings_check.hpp"

namespace execmcp::plugins::patterns {

// std::regex backtracks recursively (one stack frame per character), so longer lines are refused
// rather than risked; matching runs on a helper thread with a large stack.
inline constexpr std::size_t kMaxLineBytes = 64 * 1024;

struct Pattern {
  std::string source;  // as written in the config
  std::regex regex;    // ECMAScript
};

struct Settings {
  std::vector<Pattern> allow;  // empty: everything allowed
  std::vector<Pattern> deny;
};

// Parses `{"allow": [regex...], "deny": [regex...]}` ("" counts as `{}`). Throws
// std::invalid_argument naming the key (and index) and what is wrong, regex errors included.
[[nodiscard]] Settings parse_settings(std::string_view settings_json);

// The plugin's settings check (SDK 2.1): every problem parse_settings() would throw for the first
// of, each at its JSON pointer ("/deny/1"); invalid JSON throws.
void check_settings(const std::string& settings_json, std::vector<sdk::SettingsProblem>& problems);

// Deny: a pattern found anywhere (regex_search) in the line, in any simple command as written, or
// in any simple command's words joined by spaces. Allow (when non-empty): every simple command
// that would run must match some pattern at its start (like Python's re.match). Never throws
// except bad_alloc.
[[nodiscard]] sdk::FilterVerdict judge(std::string_view command_line, const Settings& settings);

}  // namespace execmcp::plugins::patterns
