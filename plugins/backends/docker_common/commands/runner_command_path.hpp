// Commands through execmcp-runner, the agent in the container (exec_mode: agent): keeping the
// runner's channel (opened, and reopened when it broke or its place was made anew, at its site:
// runner_site.hpp), running a call on it, and falling back to one exec per call (ExecCommandPath)
// when the runner cannot start, where there is an exec to fall back to. See docs/docker-backend.md.
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
#include "docker_common/commands/runner_site.hpp"
#include "runner_client/runner_channel.hpp"

namespace execmcp::plugins::docker_common {

// A file call done by the runner itself (no shell): what it answered, or why it did not.
struct RunnerFileResult {
  std::string data;      // a read's bytes (a list's entries), at most the call's cap
  bool dropped = false;  // bytes past the cap came and were dropped
  supervision::runner::FileReport report;
  std::string error;  // the call did not complete (the container, the engine, a timeout)
};

class RunnerCommandPath final : public CommandPath {
 public:
  // `site` opens the runner's channel; `fallback` runs what the runner cannot (null: nothing
  // does, and a runner that cannot be reached is the call's error, with the reason); `probe`
  // sweeps what a call leaves. All outlive this object.
  RunnerCommandPath(RunnerSite& site, ExecCommandPath* fallback, ContainerProbe& probe);

  // Through the runner (falling back to one exec, with a notice, when it cannot start and there
  // is a fallback; without one, the call's error says why the runner cannot be reached).
  sdk::ExecResult run(const ContainerCommand& command) override;
  std::string start_background(const std::shared_ptr<BackgroundProcess>& bg,
                               const std::string& shell, const std::string& command,
                               const std::vector<std::string>& env, long& pid) override;
  void terminate_background(BackgroundProcess& bg, std::chrono::milliseconds grace) override;
  // A file call on the runner (`input`: a write's bytes), its answer's bytes capped at `cap`;
  // nullopt when the runner cannot start and there is a fallback (the caller runs its script
  // through run() instead, which falls back to one exec and says so).
  std::optional<RunnerFileResult> run_file(const supervision::runner::FileRequest& request,
                                           const std::string* input, std::size_t cap,
                                           std::chrono::milliseconds timeout);
  // Readiness without a shell: the runner's channel opened (its hello says it runs, as the
  // container user) and a stat of / answered. "" or why not; nullopt when the runner cannot
  // start and there is a fallback (the caller then runs `true` through run(), one exec).
  std::optional<std::string> ready();
  void stop() noexcept override;
  // The runner ends with its channel (and its commands with it); the site drops what it put
  // there (in attach mode, the program it delivered).
  void close() noexcept override;

 private:
  // The live channel, started or re-established on demand; null with `why` when it cannot start,
  // and `runner_fault` true when the runner is at fault (not the engine or the container).
  std::shared_ptr<runner_client::RunnerChannel> runner_channel(std::vector<std::string>& notices,
                                                               std::string& why,
                                                               bool& runner_fault);
  // Runs the call on the channel; nullopt when the channel broke before the runner took the call
  // (so the command never ran). A channel that broke, or whose runner stopped answering, is
  // dropped, so the next call starts a new runner.
  std::optional<sdk::ExecResult> run_on_runner(
      const ContainerCommand& command,
      const std::shared_ptr<runner_client::RunnerChannel>& channel);
  void drop_runner(const std::shared_ptr<runner_client::RunnerChannel>& channel);

  RunnerSite& site_;
  ExecCommandPath* exec_;  // null: no fallback
  ContainerProbe& probe_;
  std::atomic<std::uint64_t> stop_generation_{0};
  std::mutex runner_mutex_;  // guards the four below; held while a channel opens
  std::shared_ptr<runner_client::RunnerChannel> runner_;
  std::uint64_t runner_for_ = 0;  // the site's incarnation runner_ was opened into
  std::chrono::steady_clock::time_point runner_retry_at_{};
  std::string runner_failure_;
};

}  // namespace execmcp::plugins::docker_common
