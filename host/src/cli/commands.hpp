// The execmcp subcommands (serve, exec, check-config, plugins) behind main().
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/configured_agent.hpp"

namespace execmcp::host::cli {

struct ServeRequest {
  std::string server_version;
  std::size_t max_concurrent = 8;
  bool finish_calls_on_eof = false;
  // Unset: the server's defaults.
  std::optional<std::size_t> max_message_bytes;
  std::optional<std::size_t> max_message_values;
  std::optional<std::size_t> max_outbound_bytes;
  std::optional<std::size_t> max_queued_calls;
  // serve --http (see Arguments).
  std::string http_address;
  std::string tls_cert_file;
  std::string tls_key_file;
  bool insecure_no_auth = false;
  std::optional<std::size_t> max_connections;
  std::optional<std::size_t> max_calls_per_agent;
};

// Serves MCP for a started agent until the client goes away or a signal arrives; returns the exit
// code. Provided by main() so the core library does not depend on the MCP library.
using ServeFunction = std::function<int(ConfiguredAgent& agent, const ServeRequest& request)>;
// Serves MCP over HTTP for built agents (started or not: each starts on first use) until
// SIGINT/SIGTERM; returns the exit code. Also provided by main().
using HttpServeFunction =
    std::function<int(const Config& config, const std::vector<ConfiguredAgent*>& agents,
                      const ServeRequest& request)>;

// Runs the command line (argv without the program name); returns the process exit code.
int run(const std::vector<std::string>& argv, const ServeFunction& serve,
        const HttpServeFunction& serve_http = {});

const char* version();

}  // namespace execmcp::host::cli
