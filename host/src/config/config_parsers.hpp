// The two schema readers behind load_config(), and the pieces they share.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/config.hpp"
#include "config/yaml_reader.hpp"

namespace execmcp::host::config_detail {

// The native schema (`execmcp: 1`): strict, unknown keys are errors.
void parse_native(const YAML::Node& root, YamlReader& reader, Config& config,
                  const std::string& base_dir);
// The MassGen schema: acts on the code-execution keys and lists every other key it meets in
// Config::ignored.
void parse_massgen(const YAML::Node& root, YamlReader& reader, Config& config,
                   const std::string& base_dir);

// The MassGen key names execmcp acts on (at any level: backend, agent, orchestrator,
// coordination) and the known ones it skips, by reason. Kept disjoint by a unit test; a key in
// neither is listed as "unknown to execmcp".
struct MassgenKeyLists {
  std::set<std::string> acted_on;
  std::map<std::string, std::set<std::string>> skipped;  // why -> names
};
const MassgenKeyLists& massgen_key_lists();

// A path value with ${VAR} / ~ expanded and made absolute against base_dir.
std::optional<std::string> get_path(YamlReader& reader, const YAML::Node& node,
                                    std::string_view path, const std::string& base_dir);
// `[{path, permission: read|write, protected_paths: [...]}]`; strict rejects unknown keys in each
// entry. Protected paths outside their context or missing are errors; on a read-only context, a
// warning in `config`.
void read_context_paths(YamlReader& reader, const YAML::Node& list, std::string_view path,
                        const std::string& base_dir, bool strict, std::vector<ContextPath>& out,
                        Config& config);
// A new agent for the entry `node` at `path`: where it was read, and its required `id` (left
// empty after an error). Ids end up in container names and log lines, so they are kept to a safe
// alphabet.
AgentConfig read_agent_header(YamlReader& reader, const YAML::Node& node, const std::string& path);

// The `server:` section (native schema); runs after the agents are read, to check the ids tokens
// name. Token secrets read from env/file are hashed at once and never kept or shown.
void parse_server(const YAML::Node& node, YamlReader& reader, Config& config,
                  const std::string& base_dir);

}  // namespace execmcp::host::config_detail
