// Command-line parsing for the execmcp program (hand-rolled: a handful of subcommands and options).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "config/massgen_flags.hpp"

namespace execmcp::host::cli {

struct Arguments {
  std::string command;  // serve | plugins | check-config | exec | version | help
  std::string config_file;
  std::string agent_id;                // the first --agent
  std::vector<std::string> agent_ids;  // every --agent (serve --http serves each)
  std::string log_level;               // empty: the command's default
  std::string audit_file;
  std::string work_dir;
  std::optional<std::size_t> max_concurrent;
  bool finish_on_eof = false;  // serve --on-eof finish
  bool strict = false;         // serve, check-config: a MassGen key not acted on is an error
  std::optional<std::size_t> max_message_bytes;   // serve: one incoming line
  std::optional<std::size_t> max_message_values;  // serve: JSON values in one message
  std::optional<std::size_t> max_outbound_bytes;  // serve: output the client has not read
  std::optional<std::size_t> max_queued_calls;    // serve: calls that may wait for a slot
  std::optional<double> timeout_seconds;
  // serve --http: the shared server.
  std::string http_address;  // "ADDR:PORT" (empty: stdio)
  std::string tls_cert_file;
  std::string tls_key_file;
  bool start_all = false;         // start every agent's backend before serving
  bool insecure_no_auth = false;  // allow no credentials on a non-loopback address
  std::optional<std::size_t> max_connections;
  std::optional<std::size_t> max_calls_per_agent;
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
