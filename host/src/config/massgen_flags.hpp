// `execmcp serve --massgen ...`: MassGen's code-execution server flags, turned into a one-agent
// config, so a MassGen user swaps one command.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace execmcp::host {

// The flags of MassGen's code-execution server (its create_server() argparse), as given.
struct MassgenFlags {
  std::vector<std::string> allowed_paths;  // first: the workspace; the rest: read-only context
  std::string execution_mode = "local";    // local | docker
  std::string agent_id;
  std::string instance_id;
  bool enable_sudo = false;
  std::vector<std::string> allowed_commands;  // regexes, matched at the start (re.match)
  std::vector<std::string> blocked_commands;
  std::optional<long long> timeout;          // seconds
  std::optional<long long> max_output_size;  // bytes
  std::string local_skills_directory;
};

struct ParsedMassgenFlags {
  MassgenFlags flags;
  std::string error;  // non-empty: a usage error
};

// argparse's syntax: `--flag value`, `--flag=value`, a list flag takes the words up to the next
// `--...`, an unambiguous prefix names its flag, a repeated flag's last value wins.
ParsedMassgenFlags parse_massgen_flags(const std::vector<std::string>& argv);

// The flags as a MassGen-schema config with one agent; relative paths resolve against
// `process_cwd` (MassGen starts its server in the workspace). Throws ConfigError.
std::shared_ptr<const Config> massgen_flags_config(const MassgenFlags& flags,
                                                   const std::string& process_cwd);

// The flag names, for messages.
const std::vector<std::string>& massgen_flag_names();

}  // namespace execmcp::host
