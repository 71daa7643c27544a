// Runs one shell command under a per-command supervisor process that can kill its whole tree.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "execmcp/sdk/types.hpp"

namespace execmcp::plugins::local {

struct SpawnSpec {
  std::string shell;             // absolute path of the shell
  std::string command;           // passed as `<shell> -c <command>`
  std::string work_dir;          // absolute, existing
  std::vector<std::string> env;  // complete environment, "NAME=value"
};

struct RunControl {
  std::chrono::milliseconds timeout{0};  // <= 0: no timeout
  std::size_t output_cap = sdk::kDefaultOutputCap;
  sdk::OutputSink* sink = nullptr;
  const sdk::CancelToken* cancel = nullptr;
  // Set by the backend's stop(): kills the command like a cancel.
  const std::atomic<bool>* stop = nullptr;
};

// Runs the command to completion (or until it is killed) and fills exit code, output, flags and
// duration. Never throws; failures to start land in `error`.
sdk::ExecResult run_supervised(const SpawnSpec& spec, const RunControl& control);

}  // namespace execmcp::plugins::local
