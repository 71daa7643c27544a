// What a failed docker / podman CLI run means, in plain words: its stderr (read in the C locale)
// classified into the engine error kinds the container backend acts on.
#pragma once

#include <string>
#include <string_view>

#include "docker_cli/child_process.hpp"
#include "docker_common/engine/engine.hpp"

namespace execmcp::plugins::docker_cli {

// Which engine a CLI run tried to reach, for messages.
struct CliTarget {
  // "docker (DOCKER_HOST=ssh://root@127.0.0.1:2222)", "docker --context prod"
  std::string describe;
  std::string docker_host;  // the DOCKER_HOST the CLI got ("" when none)
  std::string context;      // the --context it got ("" when none)
  bool podman = false;      // the CLI is Podman's (its words differ)
};

// Where the engine was looked for: DOCKER_HOST, the context, or the address the CLI names.
std::string engine_address(std::string_view err, const CliTarget& target);

// How much of the CLI's stderr a message keeps.
inline constexpr std::size_t kStderrKept = 512;

// The CLI's stderr as one line for a message: "Error: " / "Error response from daemon: "
// prefixes and "WARNING:" lines dropped, lines joined with "; ", cut at kStderrKept bytes (on a
// character boundary).
std::string trimmed_stderr(std::string_view err);

// "user@host:port" of an ssh:// URL or of the ssh command line the CLI quotes ("" when neither).
std::string ssh_destination(std::string_view err, std::string_view docker_host);

// The error for a run that failed (spawn error, timeout, or a non-zero exit).
docker_common::EngineError classify_cli_failure(const CliRun& run, const CliTarget& target);

}  // namespace execmcp::plugins::docker_cli
