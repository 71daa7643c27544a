// The docker-swarm backend: each sandbox a Swarm service of one task on its own internal overlay
// network (ServiceLifecycle), spoken to only through its listening runner (SwarmRunnerSite under
// docker_common's RunnerCommandPath, with no exec to fall back to): commands, file tools and
// background processes as on the container backends, and SandboxControl for per_user (idle stop
// as Replicas 0, resume, warm sandboxes whose placement record moves with the claimed workspace).
// See docs/docker-backend.md (docker-swarm) and docs/architecture.md.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "docker_common/commands/container_background.hpp"
#include "docker_common/commands/runner_command_path.hpp"
#include "docker_swarm/service_lifecycle.hpp"
#include "docker_swarm/swarm_api.hpp"
#include "docker_swarm/swarm_runner_site.hpp"
#include "docker_swarm/swarm_settings.hpp"
#include "execmcp/sdk/background_processes.hpp"
#include "execmcp/sdk/executor_backend.hpp"
#include "execmcp/sdk/sandbox_control.hpp"

namespace execmcp::plugins::docker_swarm {

// Where the workspace is in a swarm sandbox (the volume's mount point).
inline constexpr const char* kSwarmWorkspace = "/workspace";

class SwarmBackend final : public sdk::ExecutorBackend,
                           public sdk::BackgroundProcesses,
                           public sdk::SandboxControl {
 public:
  // Throws docker_common::SettingError on bad settings, std::invalid_argument on a bad
  // docker_host. `transport` (tests) replaces the engine client made from docker_host.
  explicit SwarmBackend(const sdk::BackendInit& init,
                        std::unique_ptr<SwarmTransport> transport = nullptr);
  ~SwarmBackend() override;

  // Checks the engine is a manager and the grants fit a swarm sandbox, sweeps this owner's
  // orphans (once per process), places the sandbox and opens its runner.
  std::string start() override;
  void stop() noexcept override;
  // Removes the service, its secret and network; never the volume.
  void cleanup() noexcept override;

  sdk::ExecResult execute(const sdk::ExecRequest& request) override;
  sdk::FileReadResult read_file(const sdk::FileReadRequest& request) override;
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request) override;
  [[nodiscard]] sdk::BackendTraits traits() const override;
  [[nodiscard]] void* query_interface(std::string_view id) noexcept override;

  sdk::BackgroundStarted start_background(const sdk::BackgroundRequest& request,
                                          sdk::BackgroundObserver* observer) noexcept override;
  void terminate_background(std::uint64_t id, std::chrono::milliseconds grace) noexcept override;

  // Ends every call and background process, drops the channel, Replicas 0.
  std::string suspend() noexcept override;
  // Replicas 1 + ForceUpdate (or a new sandbox when it is gone or its node lost), then the
  // runner's hello and a stat of /.
  std::string resume() noexcept override;
  // The placement record moved with the renamed directory: only where it is written changes.
  std::string relocate_workspace(const std::string& host_path) noexcept override;

 private:
  // `requested` in the sandbox's view, within /workspace (lexically: the host has no copy of the
  // files to resolve against); "" or why it is refused.
  std::string resolve_work_dir(const std::string& requested, std::string& path) const;
  std::vector<std::string> call_env(
      const std::vector<std::pair<std::string, std::string>>& extra) const;
  // "" or why the grants ask for what a swarm sandbox cannot do (context paths, protected paths).
  std::string check_grants() const;
  // A path of a call in the sandbox's view: one under the workspace's host directory is mapped
  // into /workspace; others are as given (relative ones are taken from /workspace by the runner).
  std::string sandbox_path(const std::string& path) const;

  sdk::BackendInit init_;
  SwarmSettings settings_;
  std::unique_ptr<SwarmTransport> transport_;
  SwarmApi api_;
  ServiceLifecycle lifecycle_;
  SwarmRunnerSite site_;
  SwarmProbe probe_;
  docker_common::RunnerCommandPath commands_;
  docker_common::BackgroundTable background_;
  std::mutex sandbox_mutex_;  // one suspend, resume or relocation at a time
  mutable std::mutex cwd_mutex_;
  std::string host_cwd_;  // the workspace's host directory (moved by relocate_workspace())
};

// The lifecycle's configuration from the backend's init and settings (tests read it too).
LifecycleConfig lifecycle_config(const sdk::BackendInit& init, const SwarmSettings& settings);

}  // namespace execmcp::plugins::docker_swarm
