// How a command reaches the agent's container: the CommandPath interface, with two ways
// (runner_command_path.hpp: through execmcp-runner; exec_command_path.hpp: one exec per call).
// A call is described once (ContainerCommand); each path builds its own form of it.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "docker_common/commands/container_background.hpp"
#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::plugins::docker_common {

// The environment variable that marks every process of one call (for the kill sweep).
inline constexpr const char* kMarkerVar = "EXECMCP_CALL";

// Why nothing can be sent to a process in the container over this engine connection.
inline constexpr const char* kNoUpgrade =
    "this engine connection cannot carry input to a process in the container: Docker's exec "
    "stream came back as HTTP 200, not 101 Switching Protocols, so bytes sent after the request "
    "never arrive (a proxy in between refuses to upgrade a request with a body, as HAProxy 2.4 to "
    "3.0 does; see docs/deployment.md)";

// A call whose stream ended while the engine stopped answering.
inline constexpr const char* kLostDocker =
    "lost Docker during the command (was the engine restarted or stopped?): its exit code is "
    "unknown, and it may not have finished; the next call starts the container again";

// One call in the container: `<shell> -c <script>` with `args` as $1...
struct ContainerCommand {
  std::string shell = "/bin/sh";
  std::string script;
  std::string name;               // $0, when run as one exec (execmcp-read, ...)
  std::vector<std::string> args;  // $1...
  // An agent's command: run as one exec, it goes under the wrapper that sweeps what it leaves.
  bool agent_command = false;
  std::string work_dir;
  std::vector<std::string> env;  // NAME=value
  std::optional<std::string> stdin_data;
  std::chrono::milliseconds timeout{0};  // 0: none
  std::size_t output_cap = sdk::kDefaultOutputCap;
  sdk::OutputSink* sink = nullptr;
  const sdk::CancelToken* cancel = nullptr;
  std::string marker;   // EXECMCP_CALL value, for the kill sweep
  bool recover = true;  // bring a stopped container back and run once more
};

// Every method may be called from several threads at once; none throws past its caller's guard.
class CommandPath {
 public:
  virtual ~CommandPath() = default;

  // Runs one call to completion (or timeout, cancel, stop()).
  virtual sdk::ExecResult run(const ContainerCommand& command) = 0;
  // Starts `bg` (its id, observer, marker and work_dir set) running `command` with `env`: "" and
  // its pid in `pid` (0 when the path cannot tell), or why it did not start.
  virtual std::string start_background(const std::shared_ptr<BackgroundProcess>& bg,
                                       const std::string& shell, const std::string& command,
                                       const std::vector<std::string>& env, long& pid) = 0;
  // Asks a started background process to end (TERM, `grace`, KILL); its end comes through its
  // observer as usual.
  virtual void terminate_background(BackgroundProcess& bg, std::chrono::milliseconds grace) = 0;
  // Ends every call in flight (killed as by a cancel).
  virtual void stop() noexcept = 0;
  // Before the container goes (cleanup): drops whatever this path keeps in it.
  virtual void close() noexcept = 0;
};

}  // namespace execmcp::plugins::docker_common
