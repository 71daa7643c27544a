// The docker-api executor backend: one persistent container per agent, driven over the Engine API.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "docker_client.hpp"
#include "docker_common/container_spec.hpp"
#include "docker_common/docker_settings.hpp"
#include "docker_common/workspace_access.hpp"
#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::plugins::docker_api {

class DockerApiBackend final : public sdk::ExecutorBackend {
 public:
  // Throws std::invalid_argument on bad settings.
  explicit DockerApiBackend(const sdk::BackendInit& init);
  ~DockerApiBackend() override = default;

  std::string start() override;
  void stop() noexcept override;
  void cleanup() noexcept override;

  sdk::ExecResult execute(const sdk::ExecRequest& request) override;
  sdk::FileReadResult read_file(const sdk::FileReadRequest& request) override;
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request) override;

  [[nodiscard]] sdk::BackendTraits traits() const override;

 private:
  struct ExecSpec {
    std::vector<std::string> cmd;
    std::string work_dir;
    std::vector<std::string> env;
    std::optional<std::string> stdin_data;
    std::chrono::milliseconds timeout{0};  // 0: none
    std::size_t output_cap = sdk::kDefaultOutputCap;
    sdk::OutputSink* sink = nullptr;
    const sdk::CancelToken* cancel = nullptr;
    std::string marker;   // EXECMCP_CALL value, for the kill sweep
    bool recover = true;  // bring a stopped container back and run once more
  };

  struct ContainerState {
    bool known = false;  // false: no such container, or the engine did not answer
    bool running = false;
    int exit_code = -1;  // PID 1's, once stopped
    bool oom_killed = false;
  };

  std::string api(const std::string& path);
  std::string ensure_api_version();
  std::string user();
  std::string check_image();
  std::string prepare_workspace_access();
  void remove_orphans();
  // The container spec with every mount source checked (see docs/security.md, Container mounts);
  // "" or why the container must not start.
  std::string checked_spec(docker_common::ContainerSpec& spec);
  // Adds the writable bind sources of every other execmcp container on this engine.
  std::string add_other_agents_roots(std::vector<docker_common::WritableRoot>& roots);
  std::string create_and_start();
  // Brings back a container that is gone or not running; "" or an error.
  std::string recover_container(std::vector<std::string>& notices);
  // Runs one exec to completion (or timeout/cancel), recovering the container once if needed.
  // An exec for read_file / write_file: `cmd` in the agent's cwd, marked for the kill sweep.
  ExecSpec file_exec(std::vector<std::string> cmd, const sdk::CancelToken* cancel) const;
  sdk::ExecResult run_exec(const ExecSpec& spec);
  sdk::ExecResult run_exec_once(const ExecSpec& spec);
  // True once the container is not running (or gone), false if it still runs after `timeout`.
  bool wait_stopped(std::chrono::milliseconds timeout);
  ContainerState inspect_state();
  // Adds a notice saying who killed a command: the OOM killer, or PID 1 dying from inside.
  void explain_kill(sdk::ExecResult& result);
  void kill_marked(const std::string& marker);
  void log(sdk::LogLevel level, const std::string& message) const;

  sdk::BackendInit init_;
  docker_common::DockerSettings settings_;
  DockerClient client_;
  std::string name_;
  std::string host_name_;

  std::mutex mutex_;  // guards api_version_, user_ and access_granted_
  std::string api_version_;
  docker_common::UserChoice user_;  // chosen by prepare_workspace_access()
  bool access_granted_ = false;
  std::mutex recover_mutex_;  // one container recovery at a time
  std::atomic<std::uint64_t> stop_generation_{0};
  std::atomic<long> oom_kills_seen_{0};  // the memory cgroup's oom_kill count at our last look
};

}  // namespace execmcp::plugins::docker_api
