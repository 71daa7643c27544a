// Commands through execmcp-runner, the agent in the container (exec_mode: agent): starting and
// re-establishing the runner's channel, delivering the program (a part of the container's
// lifecycle: its mount or volume in the spec, and which container it was copied into), running a
// call on it, and falling back to one exec per call (ExecCommandPath) when the runner cannot
// start. See docs/docker-backend.md.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "docker_common/commands/command_path.hpp"
#include "docker_common/commands/container_probe.hpp"
#include "docker_common/commands/exec_command_path.hpp"
#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "docker_common/lifecycle/container_part.hpp"
#include "runner_client/runner_channel.hpp"

namespace execmcp::plugins::docker_common {

// A file call done by the runner itself (no shell): what it answered, or why it did not.
struct RunnerFileResult {
  std::string data;      // a read's bytes (a list's entries), at most the call's cap
  bool dropped = false;  // bytes past the cap came and were dropped
  supervision::runner::FileReport report;
  std::string error;  // the call did not complete (the container, the engine, a timeout)
};

class RunnerCommandPath final : public CommandPath, private ContainerPart {
 public:
  // `fallback` runs what the runner cannot, `probe` sweeps what a call leaves; all three outlive
  // this object. Adds itself to `lifecycle` as the part that delivers the runner.
  RunnerCommandPath(ContainerLifecycle& lifecycle, ExecCommandPath& fallback,
                    ContainerProbe& probe);

  // Through the runner (falling back to one exec, with a notice, when it cannot start).
  sdk::ExecResult run(const ContainerCommand& command) override;
  std::string start_background(const std::shared_ptr<BackgroundProcess>& bg,
                               const std::string& shell, const std::string& command,
                               const std::vector<std::string>& env, long& pid) override;
  void terminate_background(BackgroundProcess& bg, std::chrono::milliseconds grace) override;
  // A file call on the runner (`input`: a write's bytes), its answer's bytes capped at `cap`;
  // nullopt when the runner cannot start (the caller runs its script through run() instead,
  // which falls back to one exec and says so).
  std::optional<RunnerFileResult> run_file(const supervision::runner::FileRequest& request,
                                           const std::string* input, std::size_t cap,
                                           std::chrono::milliseconds timeout);
  // Readiness without a shell: the runner's channel opened (its hello says it runs, as the
  // container user) and a stat of / answered. "" or why not; nullopt when the runner cannot
  // start (the caller then runs `true` through run(), which falls back to one exec).
  std::optional<std::string> ready();
  void stop() noexcept override;
  // The runner ends with its channel (and its commands with it); in attach mode the program we
  // delivered is removed too.
  void close() noexcept override;

  // How execmcp-runner reaches the container (None: missing) and where it is on this machine.
  [[nodiscard]] RunnerDelivery delivery() const { return delivery_; }
  [[nodiscard]] const std::string& runner_host_path() const { return host_path_; }

 private:
  // The runner's delivery as a part: its mount (or volume) in the container's spec; a container
  // made anew has an empty volume.
  std::string prepare_spec(ContainerSpec& spec) override;
  void on_container_start(bool created) override {
    if (created) ++incarnation_;
  }

  // The live channel, started or re-established on demand; null with `why` when it cannot start,
  // and `runner_fault` true when the runner is at fault (not the engine or the container).
  std::shared_ptr<runner_client::RunnerChannel> runner_channel(std::vector<std::string>& notices,
                                                               std::string& why,
                                                               bool& runner_fault);
  std::string open_runner_channel(std::vector<std::string>& notices,
                                  std::shared_ptr<runner_client::RunnerChannel>& out,
                                  bool& runner_fault);
  // Puts execmcp-runner into the container's runner volume (engines that cannot see host files).
  EngineError copy_runner();
  // Attach mode's runner delivery: the program sent through an exec's stdin into a private
  // directory under /tmp (else $HOME) that is writable and executable; sets runner_path_.
  EngineError deliver_runner_by_exec();
  // Runs the call on the channel; nullopt when the channel broke before the runner took the call
  // (so the command never ran). A channel that broke, or whose runner stopped answering, is
  // dropped, so the next call starts a new runner.
  std::optional<sdk::ExecResult> run_on_runner(
      const ContainerCommand& command,
      const std::shared_ptr<runner_client::RunnerChannel>& channel);
  void drop_runner(const std::shared_ptr<runner_client::RunnerChannel>& channel);
  [[nodiscard]] bool runner_copied() const { return copied_for_.load() == incarnation_.load(); }

  ContainerLifecycle& lifecycle_;
  ExecCommandPath& exec_;
  ContainerProbe& probe_;
  Engine& engine_;
  std::string host_path_;  // execmcp-runner next to this plugin's directory
  RunnerDelivery delivery_ = RunnerDelivery::None;
  // Counts the containers created under the lifecycle's name: a new one has an empty volume.
  std::atomic<std::uint64_t> incarnation_{0};
  std::atomic<std::uint64_t> stop_generation_{0};
  std::string runner_path_;  // where it runs in the container (guarded by runner_mutex_)
  std::mutex runner_mutex_;  // guards the four below; held while a channel opens
  std::shared_ptr<runner_client::RunnerChannel> runner_;
  std::uint64_t runner_for_ = 0;  // the container incarnation runner_ was opened into
  std::chrono::steady_clock::time_point runner_retry_at_{};
  std::string runner_failure_;
  // The container incarnation execmcp-runner was copied into (incarnation_);
  // kNotCopied when the volume may have lost it.
  static constexpr std::uint64_t kNotCopied = ~std::uint64_t{0};
  std::atomic<std::uint64_t> copied_for_{kNotCopied};
};

}  // namespace execmcp::plugins::docker_common
