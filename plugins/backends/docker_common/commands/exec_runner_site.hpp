// The runner's site in a container on the engine we talk to (exec_mode: agent on docker-api and
// docker-cli): execmcp-runner delivered into the container (a part of its lifecycle: its mount or
// volume in the spec, and which container it was copied into), started by an exec whose stream is
// the channel, and the container brought back once per opening when it is gone or stopped.
// See runner_site.hpp and docs/docker-backend.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "docker_common/commands/container_probe.hpp"
#include "docker_common/commands/exec_command_path.hpp"
#include "docker_common/commands/runner_site.hpp"
#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "docker_common/lifecycle/container_part.hpp"

namespace execmcp::plugins::docker_common {

class ExecRunnerSite final : public RunnerSite, private ContainerPart {
 public:
  // `exec` delivers the program in attach mode and learns whether input reaches the container;
  // `probe` removes what was delivered; all three outlive this object. Adds itself to `lifecycle`
  // as the part that delivers the runner.
  ExecRunnerSite(ContainerLifecycle& lifecycle, ExecCommandPath& exec, ContainerProbe& probe);

  [[nodiscard]] const std::string& name() const override { return lifecycle_.name(); }
  void log(sdk::LogLevel level, const std::string& message) const override {
    lifecycle_.log(level, message);
  }
  // The engine's and the container's failures are kPlace; the runner's own (missing, not copied,
  // silent, of another build, no input over this engine) are kRunner.
  std::shared_ptr<runner_client::RunnerChannel> open(std::vector<std::string>& notices,
                                                     SiteError& error) override;
  std::string recover(std::vector<std::string>& notices) override;
  [[nodiscard]] std::uint64_t incarnation() const override { return incarnation_.load(); }
  [[nodiscard]] std::string unreachable_for_good() const override {
    return exec_.input_never_arrives() ? kNoUpgrade : "";
  }
  std::function<bool()> stop_watch() override;
  bool manager_lost() override;
  void wait_stopped(std::chrono::milliseconds timeout) override {
    lifecycle_.wait_stopped(timeout);
  }
  // In attach mode the program we delivered is removed.
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

  // The opening itself; "" and `out`, or why not, with `runner_fault` true when the runner is at
  // fault (not the engine or the container).
  std::string open_runner_channel(std::vector<std::string>& notices,
                                  std::shared_ptr<runner_client::RunnerChannel>& out,
                                  bool& runner_fault);
  // Puts execmcp-runner into the container's runner volume (engines that cannot see host files).
  EngineError copy_runner();
  // Attach mode's runner delivery: the program sent through an exec's stdin into a private
  // directory under /tmp (else $HOME) that is writable and executable; sets runner_path_.
  EngineError deliver_runner_by_exec();
  [[nodiscard]] bool runner_copied() const { return copied_for_.load() == incarnation_.load(); }
  [[nodiscard]] std::string runner_path() const;

  ContainerLifecycle& lifecycle_;
  ExecCommandPath& exec_;
  ContainerProbe& probe_;
  Engine& engine_;
  std::string host_path_;  // execmcp-runner next to this plugin's directory
  RunnerDelivery delivery_ = RunnerDelivery::None;
  // Counts the containers created under the lifecycle's name: a new one has an empty volume.
  std::atomic<std::uint64_t> incarnation_{0};
  mutable std::mutex path_mutex_;
  std::string runner_path_;  // where it runs in the container (guarded by path_mutex_)
  // The container incarnation execmcp-runner was copied into (incarnation_);
  // kNotCopied when the volume may have lost it.
  static constexpr std::uint64_t kNotCopied = ~std::uint64_t{0};
  std::atomic<std::uint64_t> copied_for_{kNotCopied};
};

}  // namespace execmcp::plugins::docker_common
