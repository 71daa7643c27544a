// The file tools in the agent's container (read_file, write_file): file calls done by
// execmcp-runner itself (exec_mode agent), else short shell scripts on a command path. Either
// way the container's mounts and user decide what is allowed, as for a command.
#pragma once

#include <string>

#include "docker_common/commands/command_path.hpp"
#include "docker_common/commands/exec_command_path.hpp"
#include "docker_common/commands/runner_command_path.hpp"
#include "docker_common/lifecycle/container_lifecycle.hpp"

namespace execmcp::plugins::docker_common {

// read_file and write_file as execmcp-runner's own file calls on `runner`, relative paths from
// `cwd` (in the sandbox's view), a read capped at `max_bytes`; nullopt when the runner cannot
// start and the path has an exec to fall back to (then the caller runs its scripts). Shared by the
// container backends (ContainerFiles) and the docker-swarm backend, whose only way is the runner.
std::optional<sdk::FileReadResult> read_through_runner(RunnerCommandPath& runner,
                                                       const std::string& cwd,
                                                       const sdk::FileReadRequest& request,
                                                       std::size_t max_bytes);
std::optional<sdk::FileWriteResult> write_through_runner(RunnerCommandPath& runner,
                                                         const std::string& cwd,
                                                         const sdk::FileWriteRequest& request);

class ContainerFiles {
 public:
  // `runner` (null in exec mode) does the file calls itself while it can; otherwise `commands`
  // runs them as scripts, and `exec` knows whether input reaches the container and writes in
  // pieces when it does not. All of them outlive this object.
  ContainerFiles(ContainerLifecycle& lifecycle, CommandPath& commands, ExecCommandPath& exec,
                 RunnerCommandPath* runner)
      : lifecycle_(lifecycle), commands_(commands), exec_(exec), runner_(runner) {}

  sdk::FileReadResult read_file(const sdk::FileReadRequest& request);
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request);

 private:
  // Through the runner's file calls; nullopt when the runner cannot start (then the scripts).
  std::optional<sdk::FileReadResult> read_by_runner(const sdk::FileReadRequest& request,
                                                    std::size_t max_bytes);
  std::optional<sdk::FileWriteResult> write_by_runner(const sdk::FileWriteRequest& request);
  // A call for read_file / write_file: `script` ($0 `name`) with `args` in the agent's cwd, marked
  // for the kill sweep.
  ContainerCommand file_call(std::string name, std::string script, std::vector<std::string> args,
                             const sdk::CancelToken* cancel) const;
  // A refusal naming the protected path `requested` lies at or beneath, as written; "" otherwise.
  [[nodiscard]] std::string protected_refusal(const std::string& requested) const;
  // write_file over a path that carries no input: base64 pieces in the arguments of execs.
  sdk::FileWriteResult write_file_in_pieces(const sdk::FileWriteRequest& request);

  ContainerLifecycle& lifecycle_;
  CommandPath& commands_;
  ExecCommandPath& exec_;
  RunnerCommandPath* runner_;
};

}  // namespace execmcp::plugins::docker_common
