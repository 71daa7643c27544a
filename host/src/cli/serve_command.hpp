// `execmcp serve`: the program put together (agents, signals, the server the options choose).
#pragma once

#include "cli/arguments.hpp"

namespace execmcp::host::cli {

// Serves over stdio (one agent) or HTTP (every agent, with --http) until the client goes away or
// SIGINT/SIGTERM; every agent is stopped (its container removed) before it returns the exit code.
int command_serve(const Arguments& args);

}  // namespace execmcp::host::cli
