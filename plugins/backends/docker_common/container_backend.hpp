// One persistent container per agent, whatever engine drives it: the facade that wires the
// container's lifecycle and its parts (container_lifecycle.hpp), the probes (container_probe.hpp),
// the way commands reach it (command_path.hpp: through execmcp-runner or one exec each), its files
// (container_files.hpp) and its background processes into an sdk::ExecutorBackend. The
// docker-api and docker-cli plugins are this class over their own Engine.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "docker_common/commands/command_path.hpp"
#include "docker_common/commands/container_background.hpp"
#include "docker_common/commands/container_files.hpp"
#include "docker_common/commands/container_probe.hpp"
#include "docker_common/commands/exec_command_path.hpp"
#include "docker_common/commands/exec_runner_site.hpp"
#include "docker_common/engine/engine.hpp"
#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "docker_common/settings/docker_settings.hpp"
#include "execmcp/sdk/background_processes.hpp"
#include "execmcp/sdk/executor_backend.hpp"
#include "execmcp/sdk/sandbox_control.hpp"

namespace execmcp::plugins::docker_common {

class ContainerBackend : public sdk::ExecutorBackend,
                         public sdk::BackgroundProcesses,
                         public sdk::SandboxControl {
 public:
  // `backend_name` prefixes unexpected errors ("docker-api: ..."). Throws std::invalid_argument on
  // bad settings.
  ContainerBackend(const sdk::BackendInit& init, std::string backend_name, DockerSettings settings,
                   std::unique_ptr<Engine> engine);
  ~ContainerBackend() override;

  std::string start() override;
  void stop() noexcept override;
  void cleanup() noexcept override;

  sdk::ExecResult execute(const sdk::ExecRequest& request) override;
  sdk::FileReadResult read_file(const sdk::FileReadRequest& request) override;
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request) override;

  [[nodiscard]] sdk::BackendTraits traits() const override;
  // Offers sdk::BackgroundProcesses (kBackgroundProcessesId), sdk::SandboxControl
  // (kSandboxControlId; an attached container refuses its calls) and what the container's parts
  // offer (with `network: egress`, sdk::NetworkEvents: what its proxy refused).
  [[nodiscard]] void* query_interface(std::string_view id) noexcept override;

  sdk::BackgroundStarted start_background(const sdk::BackgroundRequest& request,
                                          sdk::BackgroundObserver* observer) noexcept override;
  void terminate_background(std::uint64_t id, std::chrono::milliseconds grace) noexcept override;

  // Ends every call and background process, drops the runner's channel and stops the container
  // (docker stop, SIGKILL after kSuspendStopTimeout).
  std::string suspend() noexcept override;
  // Starts the container again (or makes a new one: gone, or its workspace moved) and opens the
  // runner's channel for the next call (its hello and a stat frame: no shell), or in exec mode
  // runs `true` with one exec.
  std::string resume() noexcept override;
  std::string relocate_workspace(const std::string& host_path) noexcept override;

 private:
  // Ends every background process (TERM, `grace`, KILL) and returns once each on_exit() ran.
  void end_all_background(std::chrono::milliseconds grace) noexcept;
  // work_dir resolved inside the grants and existing, in the commands' view
  // (resolve_container_work_dir); "" or why it is refused.
  std::string resolve_work_dir(const std::string& requested, std::string& path) const;
  // The command as the shell gets it: command_prefix and venv_path applied.
  std::string prepared_command(const std::string& command) const;

  // Declared in the order they depend on each other (and are destroyed in reverse).
  std::unique_ptr<Engine> engine_;
  ContainerLifecycle lifecycle_;
  ExecProbe probe_;
  ExecCommandPath exec_;
  std::unique_ptr<ExecRunnerSite> runner_site_;  // exec_mode agent only: where runner_ opens
  std::unique_ptr<CommandPath> runner_;          // exec_mode agent only
  CommandPath& commands_;                        // runner_ or exec_
  ContainerFiles files_;
  KillExplainer kill_explainer_;  // the lifecycle's last part: it reads the others' notices
  BackgroundTable background_;
  std::mutex sandbox_mutex_;  // one suspend, resume or relocation at a time
};

// How long suspend() lets the container's processes end after SIGTERM before SIGKILL.
inline constexpr std::chrono::seconds kSuspendStopTimeout{10};

}  // namespace execmcp::plugins::docker_common
