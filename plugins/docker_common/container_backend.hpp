// One persistent container per agent, whatever engine drives it: its lifecycle
// (ContainerLifecycle), commands through execmcp-runner or one exec each, the kill sweep, output
// caps and the file tools. The docker-api and docker-cli plugins are this class over their own
// Engine.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "docker_common/container_lifecycle.hpp"
#include "docker_common/container_spec.hpp"
#include "docker_common/docker_settings.hpp"
#include "docker_common/engine.hpp"
#include "docker_common/runner_channel.hpp"
#include "execmcp/sdk/background_processes.hpp"
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

class ContainerBackend : public sdk::ExecutorBackend, public sdk::BackgroundProcesses {
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
  // Offers sdk::BackgroundProcesses (kBackgroundProcessesId).
  [[nodiscard]] void* query_interface(std::string_view id) noexcept override;

  // --- background processes (the end of container_backend.cpp) ---
  sdk::BackgroundStarted start_background(const sdk::BackgroundRequest& request,
                                          sdk::BackgroundObserver* observer) noexcept override;
  void terminate_background(std::uint64_t id, std::chrono::milliseconds grace) noexcept override;

 private:
  struct Background;
  class BackgroundRelay;
  // Ends every background process (TERM, `grace`, KILL) and returns once each on_exit() ran.
  void end_all_background(std::chrono::milliseconds grace) noexcept;
  // One process per exec (exec_mode exec, or when the runner cannot start).
  std::string start_background_exec(const std::shared_ptr<Background>& bg,
                                    const std::string& command,
                                    const std::vector<std::string>& env);
  // SIGTERM to every process marked with `marker`, then up to `grace` for them to exit.
  void term_marked(const std::string& marker, std::chrono::milliseconds grace);
  // work_dir resolved inside the grants and existing; "" or why it is refused.
  // A refusal naming the protected path `requested` lies at or beneath, as written; "" otherwise.
  [[nodiscard]] std::string protected_refusal(const std::string& requested) const;
  std::string resolve_work_dir(const std::string& requested, std::string& path) const;
  // The command as the shell gets it: command_prefix and venv_path applied.
  std::string prepared_command(const std::string& command) const;
  struct ExecSpec {
    std::vector<std::string> cmd;  // as one exec
    std::string shell;             // as one call on execmcp-runner: `<shell> -c <command>`
    std::string command;
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

  [[nodiscard]] bool attached() const { return lifecycle_.attached(); }
  std::string user() { return lifecycle_.user(); }
  // Attach mode's runner delivery: the program sent through an exec's stdin into a private
  // directory under /tmp (else $HOME) that is writable and executable; sets runner_path_.
  EngineError deliver_runner_by_exec();
  // Starts a process in the container, bringing the container back once if it is gone or stopped
  // (when `recover`); null and `error` on failure.
  std::unique_ptr<ExecSession> start_exec(const ExecOptions& options, bool recover,
                                          std::vector<std::string>& notices, std::string& error);
  // An exec for read_file / write_file: `cmd` in the agent's cwd, marked for the kill sweep.
  ExecSpec file_exec(std::vector<std::string> cmd, const sdk::CancelToken* cancel) const;
  // Runs one exec to completion (or timeout/cancel), recovering the container once if needed.
  sdk::ExecResult run_exec(const ExecSpec& spec);
  sdk::ExecResult run_exec_once(const ExecSpec& spec);
  // "" when input reaches processes in the container over this engine (checked once, with a
  // harmless exec, unless the engine or the runner's start already told), else kNoUpgrade.
  std::string check_input_path();
  // write_file over a path that carries no input: base64 pieces in the arguments of execs.
  sdk::FileWriteResult write_file_in_pieces(const sdk::FileWriteRequest& request);
  // Runs one call the way exec_mode says: through execmcp-runner (falling back to run_exec, with a
  // notice, when it cannot start) or as one exec.
  sdk::ExecResult run(const ExecSpec& spec);

  // --- execmcp-runner, the agent in the container (container_backend_runner.cpp) ---
  // The live channel, started or re-established on demand; null with `why` when it cannot start,
  // and `runner_fault` true when the runner is at fault (not the engine or the container).
  std::shared_ptr<RunnerChannel> runner_channel(std::vector<std::string>& notices, std::string& why,
                                                bool& runner_fault);
  std::string open_runner_channel(std::vector<std::string>& notices,
                                  std::shared_ptr<RunnerChannel>& out, bool& runner_fault);
  // Puts execmcp-runner into the container's runner volume (engines that cannot see host files).
  EngineError copy_runner();
  // Runs the call on the channel; nullopt when the channel broke before the runner took the call
  // (so the command never ran). A channel that broke, or whose runner stopped answering, is
  // dropped, so the next call starts a new runner.
  std::optional<sdk::ExecResult> run_on_runner(const ExecSpec& spec,
                                               const std::shared_ptr<RunnerChannel>& channel);
  void drop_runner(const std::shared_ptr<RunnerChannel>& channel);

  // Adds a notice saying who killed a command: the OOM killer, or PID 1 dying from inside.
  void explain_kill(sdk::ExecResult& result);
  void kill_marked(const std::string& marker);
  void log(sdk::LogLevel level, const std::string& message) const {
    lifecycle_.log(level, message);
  }
  bool wait_stopped(std::chrono::milliseconds timeout) { return lifecycle_.wait_stopped(timeout); }
  std::optional<ContainerState> inspect_state() { return lifecycle_.inspect_state(); }
  std::vector<std::string> call_env(
      const std::vector<std::pair<std::string, std::string>>& extra) const {
    return lifecycle_.call_env(extra);
  }
  [[nodiscard]] bool runner_copied() const {
    return copied_for_.load() == lifecycle_.incarnation();
  }

  std::unique_ptr<Engine> engine_;
  ContainerLifecycle lifecycle_;
  // The lifecycle's, under the names the code below has always used.
  const sdk::BackendInit& init_;
  const std::string& backend_name_;
  const DockerSettings& settings_;
  const std::string& name_;
  std::atomic<std::uint64_t> stop_generation_{0};

  std::string runner_path_;  // where it runs in the container (guarded by runner_mutex_)
  std::mutex runner_mutex_;  // guards the three below; held while a channel opens
  std::shared_ptr<RunnerChannel> runner_;
  std::chrono::steady_clock::time_point runner_retry_at_{};
  std::string runner_failure_;
  // The container incarnation execmcp-runner was copied into (ContainerLifecycle::incarnation());
  // kNotCopied when the volume may have lost it.
  static constexpr std::uint64_t kNotCopied = ~std::uint64_t{0};
  std::atomic<std::uint64_t> copied_for_{kNotCopied};
  std::atomic<int> input_path_{0};  // 1: input reaches the container, -1: never, 0: unknown

  std::mutex background_mutex_;  // guards the two below
  std::map<std::uint64_t, std::shared_ptr<Background>> background_;
  std::uint64_t next_background_id_ = 1;
};

}  // namespace execmcp::plugins::docker_common
