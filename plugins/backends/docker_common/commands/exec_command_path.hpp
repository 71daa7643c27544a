// Commands as one exec each (exec_mode: exec, and the runner's fallback): an agent's command runs
// under the sweep wrapper (scripts/call_wrapper.sh); a kill, a timeout or a cancel ends every
// process of the call with the kill sweep (ContainerProbe::kill_marked()).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "docker_common/commands/command_path.hpp"
#include "docker_common/commands/container_events.hpp"
#include "docker_common/commands/container_probe.hpp"
#include "docker_common/lifecycle/container_lifecycle.hpp"

namespace execmcp::plugins::docker_common {

// Whether the container stopped while a command ran, for a runtime whose exec streams outlive
// their container (ContainerLifecycle::execs_outlive_container()): without it such a command would
// wait for its timeout. With the engine's events (ContainerEvents) it asks the engine only when a
// death event came, a stream began or ended, or kEveryWithEvents passed (a stream gone quiet
// without ending); without them once per kEvery. Never where the runtime ends the streams itself
// (runc).
class StopCheck {
 public:
  static constexpr std::chrono::milliseconds kEvery{1000};
  static constexpr std::chrono::milliseconds kEveryWithEvents{5000};
  // `events`: null where they are not followed.
  StopCheck(ContainerLifecycle& lifecycle, const ContainerEvents* events);
  // True once the container is seen not running (or gone).
  bool stopped();

 private:
  ContainerLifecycle& lifecycle_;
  const ContainerEvents* events_;
  bool enabled_;
  ContainerEvents::Mark seen_;
  std::chrono::steady_clock::time_point next_;
};

class ExecCommandPath final : public CommandPath {
 public:
  // `probe` sweeps what a killed call leaves; both outlive this object.
  ExecCommandPath(ContainerLifecycle& lifecycle, ContainerProbe& probe);

  // Runs one exec to completion (or timeout/cancel), recovering the container once if needed:
  // also when runc found its init gone (the command never ran).
  sdk::ExecResult run(const ContainerCommand& command) override;
  std::string start_background(const std::shared_ptr<BackgroundProcess>& bg,
                               const std::string& shell, const std::string& command,
                               const std::vector<std::string>& env, long& pid) override;
  void terminate_background(BackgroundProcess& bg, std::chrono::milliseconds grace) override;
  // Also ends the following of the engine's events (the next StopCheck starts it again).
  void stop() noexcept override {
    stop_generation_.fetch_add(1);
    events_.stop();
  }
  void close() noexcept override {}

  // The stop check of one command (both command paths): it follows the engine's events of the
  // container from the first command that needs them on.
  StopCheck stop_check();
  // The engine's events of the container (followed once a stop check needs them).
  [[nodiscard]] const ContainerEvents& events() const { return events_; }
  // One exec, without the second try of run().
  sdk::ExecResult run_once(const ContainerCommand& command);
  // "" when input reaches processes in the container over this engine (checked once, with a
  // harmless exec, unless the engine or the runner's start already told), else kNoUpgrade.
  std::string check_input_path();
  // What the runner's start learned about input: it arrives (`carries`), or never will.
  void note_input_path(bool carries) { input_path_ = carries ? 1 : -1; }
  [[nodiscard]] bool input_never_arrives() const { return input_path_.load() < 0; }

 private:
  // Starts a process in the container, bringing the container back once if it is gone or stopped
  // (when `recover`); null and `error` on failure.
  std::unique_ptr<ExecSession> start_exec(const ExecOptions& options, bool recover,
                                          std::vector<std::string>& notices, std::string& error);
  // SIGTERM to every process marked with `marker`, then up to `grace` for them to exit.
  void term_marked(const std::string& marker, std::chrono::milliseconds grace);

  ContainerLifecycle& lifecycle_;
  ContainerProbe& probe_;
  Engine& engine_;
  std::atomic<std::uint64_t> stop_generation_{0};
  std::atomic<int> input_path_{0};  // 1: input reaches the container, -1: never, 0: unknown
  ContainerEvents events_;
};

}  // namespace execmcp::plugins::docker_common
