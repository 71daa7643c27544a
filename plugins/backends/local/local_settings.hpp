// The local backend's settings, parsed strictly from the agent config's JSON text.
#pragma once

#include <map>
#include <string>

namespace execmcp::plugins::local {

struct LocalSettings {
  std::string shell = "/bin/sh";           // runs `<shell> -c <command>`
  std::string command_prefix;              // e.g. "uv run": prepended to every command
  std::string venv_path;                   // absolute, or relative to the agent's cwd
  bool auto_venv = true;                   // use a `.venv` found in the work dir or the agent's cwd
  std::map<std::string, std::string> env;  // extra environment for every command
};

// Throws std::invalid_argument naming the key and what is expected.
LocalSettings parse_local_settings(const std::string& settings_json);

}  // namespace execmcp::plugins::local
