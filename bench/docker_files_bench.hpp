// execmcp_docker_bench's file-tools rows: read_file and write_file of a 1 KiB and a 1 MiB file on
// each measured backend, one call in flight, against execute("true") on the same backend.
#pragma once

#include <string>
#include <vector>

#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::bench {

struct FileBenchBackend {
  std::string label;
  std::string key;  // names its own files in the workspace
  sdk::ExecutorBackend* backend = nullptr;
};

// Measures `calls` calls of each row per backend, the rows alternating in `rounds`, and prints
// one Markdown table: p50 and p90 in ms and p50 over the same backend's execute("true") p50.
// `workspace` is the host path every backend has as its cwd. Throws when a call fails.
void measure_file_tools(const std::vector<FileBenchBackend>& backends, const std::string& workspace,
                        int calls, int rounds);

}  // namespace execmcp::bench
