// What a local command runs as and with, whichever way it runs (host or sandbox): the settings'
// command_prefix, the venv (venv_path, else a `.venv` in the work dir or the agent's cwd) and
// environment, then the request's own variables. The paths are the same in the sandbox, where
// the workspace is mounted at its host path.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "local_settings.hpp"

namespace execmcp::plugins::local {

using Env = std::vector<std::pair<std::string, std::string>>;

struct PreparedCommand {
  std::string command;                        // with command_prefix
  std::optional<std::filesystem::path> venv;  // the venv to activate, if any
};

// Checks the request's variable names, applies command_prefix and picks the venv for a command in
// `work_dir`. "" or why the command may not run.
std::string prepare_command(const LocalSettings& settings, const std::string& cwd,
                            const std::string& request_command, const Env& request_env,
                            const std::string& work_dir, PreparedCommand& out);

// `base`, then the settings' env, the venv activated (its bin/ leads PATH), then the request's
// variables; as NAME=value entries.
std::vector<std::string> command_environment(std::map<std::string, std::string> base,
                                             const LocalSettings& settings,
                                             const std::optional<std::filesystem::path>& venv,
                                             const Env& request_env);

// The server's own environment, as a map.
std::map<std::string, std::string> host_environment();

}  // namespace execmcp::plugins::local
