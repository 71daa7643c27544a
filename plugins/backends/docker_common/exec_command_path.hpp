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

#include "docker_common/command_path.hpp"
#include "docker_common/container_lifecycle.hpp"
#include "docker_common/container_probe.hpp"

namespace execmcp::plugins::docker_common {

// Whether the container stopped while a command ran, for a runtime whose exec streams outlive
// their container (ContainerLifecycle::execs_outlive_container()): without it such a command would
// wait for its timeout. Asks the engine at most once per kEvery; never where the runtime ends the
// streams itself (runc).
class StopCheck {
 public:
  static constexpr std::chrono::milliseconds kEvery{1000};
  explicit StopCheck(ContainerLifecycle& lifecycle)
      : lifecycle_(lifecycle),
        enabled_(lifecycle.execs_outlive_container()),
        next_(std::chrono::steady_clock::now() + kEvery) {}
  // True once the container is seen not running (or gone).
  bool stopped();

 private:
  ContainerLifecycle& lifecycle_;
  bool enabled_;
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
  void stop() noexcept override { stop_generation_.fetch_add(1); }
  void close() noexcept override {}

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
};

}  // namespace execmcp::plugins::docker_common
