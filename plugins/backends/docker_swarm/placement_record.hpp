// Where a swarm sandbox's workspace lives: the node that first placed it and the volume on that
// node, kept as <workspace dir>/.execmcp-placement on the server's host. Volumes are node-local
// and a manager cannot list them, so this file is the only way back to a user's files; the
// workspace directory on the host holds nothing else on docker-swarm.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace execmcp::plugins::docker_swarm {

inline constexpr const char* kPlacementFileName = ".execmcp-placement";
// A record longer than this is not one of ours: refused, not parsed.
inline constexpr std::size_t kMaxPlacementBytes = 4096;

struct Placement {
  std::string node_id;
  std::string hostname;      // the node's, for messages
  std::string volume;        // the workspace volume's name on that node
  std::int64_t created = 0;  // seconds since the epoch, when the sandbox was first placed there

  [[nodiscard]] bool empty() const { return node_id.empty(); }
};

// The record's path in `workspace_dir`.
std::string placement_path(const std::string& workspace_dir);

// The record in `workspace_dir`: nullopt with `error` "" when there is none, nullopt with `error`
// set when it cannot be read or is not a record (a symlink, too long, not JSON of its shape).
std::optional<Placement> read_placement(const std::string& workspace_dir, std::string& error);

// Writes the record (a temporary file renamed over it, mode 0600). "" or why not.
std::string write_placement(const std::string& workspace_dir, const Placement& placement);

}  // namespace execmcp::plugins::docker_swarm
