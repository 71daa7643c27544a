// The sanitize filter's rules as a plain C++ API, shared by the plugin and its tests.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "execmcp/sdk/command_filter.hpp"

namespace execmcp::plugins::sanitize {

struct RuleInfo {
  std::string_view id;      // e.g. "rm-root"
  std::string_view blocks;  // one line: what it blocks
  bool configurable;        // may be listed in the `allow` setting
};

// Every rule, in the order they are checked.
[[nodiscard]] const std::vector<RuleInfo>& rules();

struct Settings {
  std::set<std::string> allowed;  // ids of configurable rules switched off
};

// Parses the plugin's settings (`{"allow": ["sudo", ...]}`, "" counts as `{}`). Throws
// std::invalid_argument naming the key and what is expected.
[[nodiscard]] Settings parse_settings(std::string_view settings_json);

// Judges one command line on the simple commands it would run. `work_dir` is the one the request
// names (absolute, relative to the agent's cwd, or ""): relative paths resolve against it when
// absolute. Never throws except bad_alloc.
[[nodiscard]] sdk::FilterVerdict judge(std::string_view command_line, const Settings& settings,
                                       std::string_view work_dir = {});

}  // namespace execmcp::plugins::sanitize
