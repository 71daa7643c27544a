// sdk::BackgroundProcesses over a command path: a process started as an entry of the table and a
// call on the path, ended (TERM, grace, KILL) and forgotten once its on_exit() ran. Shared by the
// container backends (ContainerBackend) and the docker-swarm backend.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "docker_common/commands/command_path.hpp"
#include "docker_common/commands/container_background.hpp"
#include "execmcp/sdk/background_processes.hpp"

namespace execmcp::plugins::docker_common {

// Starts `command` (already prepared) under `shell` in `work_dir` (already resolved) with `env`
// on `commands`, as a new entry of `table`: its id and pid, or the error. Throws only what the
// table or the path throws (std::bad_alloc): the caller's guard names the backend.
sdk::BackgroundStarted start_background_on(BackgroundTable& table, CommandPath& commands,
                                           sdk::BackgroundObserver* observer,
                                           const std::string& work_dir, const std::string& shell,
                                           const std::string& command,
                                           const std::vector<std::string>& env);

// Ends the process `id` (TERM, `grace`, KILL) and waits for its on_exit(); then forgets it.
void terminate_background_on(BackgroundTable& table, CommandPath& commands, std::uint64_t id,
                             std::chrono::milliseconds grace) noexcept;

// Every process of `table`, one at a time.
void end_all_background_on(BackgroundTable& table, CommandPath& commands,
                           std::chrono::milliseconds grace) noexcept;

}  // namespace execmcp::plugins::docker_common
