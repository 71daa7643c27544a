// Command-line parsing for the execmcp program (hand-rolled: a handful of subcommands and options).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "config/massgen_flags.hpp"
#include "server/serve_options.hpp"

namespace execmcp::host::cli {

struct Arguments {
  std::string command;  // serve | plugins | check-config | exec | version | help
  std::string config_file;
  std::string agent_id;                // the first --agent
  std::vector<std::string> agent_ids;  // every --agent (serve --http serves each)
  std::string log_level;               // empty: the command's default
  std::string audit_file;
  std::string work_dir;
  bool strict = false;  // serve, check-config: a MassGen key not acted on is an error
  std::optional<double> timeout_seconds;
  bool start_all = false;  // serve --http: start every agent's backend before serving
  // serve: everything the servers need, filled here and handed on as is (--http sets its own
  // defaults for the calls at once and waiting).
  server::ServeOptions serve;
  std::vector<std::string> exec_command;  // after `--`
  // serve --massgen: MassGen's server flags (everything after --massgen) instead of a config.
  std::optional<MassgenFlags> massgen;
};

struct ParsedArguments {
  Arguments arguments;
  std::string error;  // non-empty: print it and the usage, exit 2
};

ParsedArguments parse_arguments(const std::vector<std::string>& argv);
std::string usage_text();

}  // namespace execmcp::host::cli
