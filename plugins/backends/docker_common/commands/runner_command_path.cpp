// Commands through execmcp-runner: the channel (opened at its site), one call on it, and the
// fallback to one exec per call. See docs/docker-backend.md.
#include "docker_common/commands/runner_command_path.hpp"

#include <signal.h>

#include "docker_common/log_text.hpp"
#include "runner_client/run_call.hpp"
#include "supervision/command_output.hpp"

namespace execmcp::plugins::docker_common {

namespace {

using Clock = std::chrono::steady_clock;
namespace sv = supervision;
namespace rp = supervision::runner;

// After a failed start, calls run with one exec each for this long before the runner is tried
// again (each attempt costs an exec).
constexpr auto kRetryPause = std::chrono::seconds(30);
// How long a kill request may go unanswered before the call's processes are killed from outside.
constexpr auto kKillGrace = std::chrono::seconds(15);

// How long a started background process may take to report its pid before the start is given up.
constexpr auto kPidTimeout = std::chrono::seconds(30);
// How long a background kill request may go unanswered (past its grace) before the sweep ends it.
constexpr auto kBackgroundKillGrace = std::chrono::seconds(15);

// The runner's own form of a call: `<shell> -c <command>`, a script's arguments set with `set --`.
std::string runner_form(const ContainerCommand& c) {
  if (c.agent_command) return c.script;
  std::string command = "set --";
  for (const auto& arg : c.args) command += " " + sv::shell_quote(arg);
  return command + "\n" + c.script;
}

// A call's error where there is no exec to fall back to: the runner could not be reached.
std::string no_runner(const std::string& why) {
  return "execmcp-runner cannot be reached: " + why;
}

// Turns a runner call's frames into the host observer's calls.
class BackgroundRelay final : public runner_client::RunnerCallObserver {
 public:
  explicit BackgroundRelay(BackgroundProcess* bg) : bg_(bg) {}
  void on_pid(long pid) noexcept override { bg_->pid = pid; }
  void on_output(sdk::StreamKind kind, std::string_view bytes) noexcept override {
    if (bg_->pid.load() != 0) bg_->observer->on_output(kind, bytes);
  }
  void on_end(const supervision::runner::DoneReport* report,
              const std::string& lost) noexcept override {
    if (report == nullptr) {
      sdk::BackgroundExit exit;
      exit.killed = bg_->terminating.load();
      exit.error = kAgentLost;
      return bg_->finish(exit, lost);
    }
    const bool ours = report->killed || bg_->terminating.load();
    auto exit = exit_of(report->exit_code, ours || report->signalled);
    exit.killed = ours;
    if (!report->error.empty()) exit.error = report->error;
    bg_->finish(exit,
                report->error.empty() ? "the process ended before it started" : report->error);
  }

 private:
  BackgroundProcess* bg_;  // outlives every call: erased only once `ended`
};

}  // namespace

RunnerCommandPath::RunnerCommandPath(RunnerSite& site, ExecCommandPath* fallback,
                                     ContainerProbe& probe)
    : site_(site), exec_(fallback), probe_(probe) {}

std::shared_ptr<runner_client::RunnerChannel> RunnerCommandPath::runner_channel(
    std::vector<std::string>& notices, std::string& why, bool& runner_fault) {
  std::lock_guard lock(runner_mutex_);
  runner_fault = true;
  // A channel into a container that has since been replaced (start() again, a recovery that made
  // a new one) is dead even while its reader has not seen the stream's end yet.
  if (runner_ && runner_for_ != site_.incarnation()) {
    site_.log(sdk::LogLevel::Info, "execmcp-runner's channel was into the container " +
                                       site_.name() +
                                       " before it was made again; opening a new one");
    runner_.reset();
  }
  if (runner_ && runner_->alive()) return runner_;
  if (runner_) {
    site_.log(sdk::LogLevel::Warn, "execmcp-runner in " + site_.name() + " is gone (" +
                                       log_text(runner_->failure()) + "); starting it again");
    runner_.reset();
  }
  // A property of the way to the site (an engine connection that cannot carry input to an
  // exec): no use trying again.
  if (auto never = site_.unreachable_for_good(); !never.empty()) {
    why = std::move(never);
    return nullptr;
  }
  if (Clock::now() < runner_retry_at_) {
    why = runner_failure_;
    return nullptr;
  }
  // The incarnation before the opening: a container made anew while it opened (start() again)
  // may have taken the channel it opened with it, which under gVisor never ends by itself, so the
  // next call drops it rather than waiting on it (seen once in CI: StartAgainWhileCallsRunIsSafe
  // under runsc).
  const std::uint64_t opening_for = site_.incarnation();
  SiteError error;
  runner_ = site_.open(notices, error);
  runner_fault = error.kind != SiteError::Kind::kPlace;
  why = std::move(error.why);
  runner_for_ = opening_for;
  if (!why.empty() || !runner_) {
    if (why.empty()) why = "the runner's site gave no channel and no reason";
    runner_.reset();
    if (!runner_fault) return nullptr;  // the engine or the container: the next call tries again
    runner_failure_ = why;
    runner_retry_at_ = Clock::now() + kRetryPause;
    site_.log(sdk::LogLevel::Warn,
              "execmcp-runner cannot start in " + site_.name() + ": " + log_text(why) +
                  (exec_ != nullptr ? "; commands run with one exec each for now"
                                    : "; calls fail until it is tried again"));
    return nullptr;
  }
  return runner_;
}

void RunnerCommandPath::drop_runner(const std::shared_ptr<runner_client::RunnerChannel>& channel) {
  std::lock_guard lock(runner_mutex_);
  if (runner_ == channel) runner_.reset();
}

std::optional<sdk::ExecResult> RunnerCommandPath::run_on_runner(
    const ContainerCommand& spec, const std::shared_ptr<runner_client::RunnerChannel>& shared) {
  runner_client::RunnerChannel& channel = *shared;
  const auto started = Clock::now();
  const std::uint64_t generation = stop_generation_.load();
  sdk::ExecResult result;
  rp::RunSpec run;
  run.output_cap = spec.output_cap;
  run.work_dir = spec.work_dir;
  run.shell = spec.shell;
  run.command = runner_form(spec);
  run.env = spec.env;
  run.env.push_back(std::string(kMarkerVar) + "=" + spec.marker);
  std::string error;
  auto call = channel.start(run, spec.stdin_data ? &*spec.stdin_data : nullptr, error);
  if (!call) {
    if (channel.alive()) {  // refused by us (too long), not a broken channel
      result.error = error;
      return result;
    }
    drop_runner(shared);
    return std::nullopt;
  }

  auto stopped = site_.stop_watch();
  runner_client::RunWatch watch;
  watch.output_cap = spec.output_cap;
  watch.sink = spec.sink;
  watch.cancel = spec.cancel;
  if (spec.timeout.count() > 0) watch.deadline = started + spec.timeout;
  watch.backend_stopped = [&] { return stop_generation_.load() != generation; };
  watch.kill_grace = kKillGrace;
  watch.target_gone = [&] { return stopped(); };
  const auto end = runner_client::watch_run(channel, *call, watch, result);
  if (end == runner_client::RunEnd::kUnanswered) {
    // The runner did not answer (stopped, or starved): end the command from outside.
    probe_.kill_marked(spec.marker);
    result.notices.push_back(
        "execmcp-runner did not answer the kill request in time; the command's processes "
        "were killed from outside, and the next call starts a new runner");
    drop_runner(shared);
    result.exit_code = -1;
  } else if (end == runner_client::RunEnd::kTargetGone) {
    // The container stopped, and the engine left the runner's stream open (StopCheck).
    drop_runner(shared);
    // Sent into a container that had already stopped: never ran, so sent again once it is back.
    if (!call->started()) return std::nullopt;
    result.exit_code = -1;  // ContainerBackend::execute() says that the container stopped
  } else if (const auto& done = call->done(); done && done->not_run) {
    // The container is going down: sent again once it has stopped and is brought back.
    drop_runner(shared);
    site_.wait_stopped(std::chrono::seconds(5));
    return std::nullopt;
  } else if (done) {
    runner_client::apply_report(*done, result);
  } else {
    drop_runner(shared);
    if (!call->started()) return std::nullopt;
    // The channel broke during the call: the engine went away, the runner was killed (by a
    // command, perhaps this one), or the container stopped. The command ran; how it ended is
    // unknown (exit code -1), and what is left of it is found by its marker.
    if (site_.manager_lost()) {
      result.error = kLostDocker;
    } else {
      probe_.kill_marked(spec.marker);
      result.exit_code = -1;
      result.notices.push_back(
          "execmcp-runner, the agent in the container, ended during the command (" + call->lost() +
          "): a command may have killed it, or the container stopped; the command's exit code "
          "is unknown, and the next call starts a new runner");
      // Whether the container stopped is said once, by the backend's KillExplainer
      // (container_probe.hpp) for every command that ended without an exit code (issue 28, finding
      // 7: it was said twice).
    }
  }
  result.duration_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return result;
}

sdk::ExecResult RunnerCommandPath::run(const ContainerCommand& spec) {
  std::vector<std::string> notices;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string why;
    bool runner_fault = true;
    auto channel = runner_channel(notices, why, runner_fault);
    if (!channel && (!runner_fault || exec_ == nullptr)) {
      sdk::ExecResult failed;
      failed.error = runner_fault ? no_runner(why) : why;
      failed.notices = std::move(notices);
      return failed;
    }
    if (!channel) {
      auto result = exec_->run(spec);
      notices.push_back("the in-container agent (execmcp-runner) could not start (" + why +
                        "); this call ran with one docker exec instead");
      result.notices.insert(result.notices.begin(), notices.begin(), notices.end());
      return result;
    }
    if (auto result = run_on_runner(spec, channel)) {
      result->notices.insert(result->notices.begin(), notices.begin(), notices.end());
      return std::move(*result);
    }
    // The command never ran (the channel broke before the runner started it, or the runner saw
    // the container going down): once more on a fresh runner, in a container brought back.
  }
  sdk::ExecResult failed;
  failed.error = "execmcp-runner's channel broke twice before it could take the call";
  failed.notices = std::move(notices);
  return failed;
}

std::optional<RunnerFileResult> RunnerCommandPath::run_file(const rp::FileRequest& request,
                                                            const std::string* input,
                                                            std::size_t cap,
                                                            std::chrono::milliseconds timeout) {
  std::vector<std::string> notices;  // a file tool's result carries none: the log has them
  RunnerFileResult result;
  for (int attempt = 0; attempt < 2; ++attempt) {
    // A container made anew after this (start() again, a recovery) takes the runner with it;
    // where execs outlive their container (gVisor) its stream stays open and would never answer.
    const std::uint64_t incarnation = site_.incarnation();
    std::string why;
    bool runner_fault = true;
    auto channel = runner_channel(notices, why, runner_fault);
    if (!channel && runner_fault && exec_ != nullptr) return std::nullopt;
    if (!channel) {
      result.error = runner_fault ? no_runner(why) : why;
      return result;
    }
    std::string error;
    auto call = channel->start_file(request, input, cap, error);
    if (!call) {
      if (channel->alive()) {  // refused by us (too long), not a broken channel
        result.error = error;
        return result;
      }
      drop_runner(channel);
      continue;
    }
    const auto deadline = Clock::now() + timeout;
    auto place_stopped = site_.stop_watch();
    std::vector<runner_client::RunnerCall::Chunk> chunks;
    bool over = false;
    bool stopped = false;
    while (!over && !stopped && Clock::now() < deadline) {
      over = call->wait(std::chrono::milliseconds(50), chunks);
      stopped = !over && (site_.incarnation() != incarnation || place_stopped());
    }
    call->wait(std::chrono::milliseconds(0), chunks);  // what came with the end
    for (auto& c : chunks)
      if (c.kind == sdk::StreamKind::Stdout) result.data += c.data;
    result.dropped = call->dropped(sdk::StreamKind::Stdout);
    if (const auto& done = call->file_done()) {
      result.report = *done;
      return result;
    }
    channel->forget(*call);
    if (!over && !stopped) {
      result.error = "execmcp-runner did not answer the file call within " +
                     std::to_string(timeout.count() / 1000) + " s";
      return result;
    }
    // The channel broke (or the container stopped) during the call: once more on a fresh runner,
    // in a container brought back (a read or a write of the same bytes may be done twice).
    drop_runner(channel);
    result.data.clear();
  }
  result.error = "execmcp-runner's channel broke twice before it could take the call";
  return result;
}

std::optional<std::string> RunnerCommandPath::ready() {
  rp::FileRequest stat;
  stat.op = rp::FileOp::kStat;
  stat.cwd = "/";
  stat.path = "/";
  const auto r = run_file(stat, nullptr, 0, std::chrono::seconds(60));
  if (!r) return std::nullopt;
  if (!r->error.empty()) return r->error;
  if (!r->report.error.empty() || r->report.kind != 'd')
    return "execmcp-runner in " + site_.name() + " cannot see the container's root (" +
           (r->report.error.empty() ? "not a directory" : r->report.error) + ")";
  return std::string();
}

std::string RunnerCommandPath::start_background(const std::shared_ptr<BackgroundProcess>& bg,
                                                const std::string& shell,
                                                const std::string& command,
                                                const std::vector<std::string>& env, long& pid) {
  pid = 0;
  std::vector<std::string> notices;
  std::string why;
  bool runner_fault = true;
  auto channel = runner_channel(notices, why, runner_fault);
  if (!channel && !runner_fault) return why;
  if (!channel && exec_ == nullptr) return no_runner(why);
  if (!channel) {
    site_.log(sdk::LogLevel::Warn,
              "background process runs with one docker exec: the in-container "
              "agent could not start (" +
                  log_text(why) + ")");
    return exec_->start_background(bg, shell, command, env, pid);
  }
  supervision::runner::RunSpec run;
  run.output_cap = 0;
  run.retain_output = false;
  run.work_dir = bg->work_dir;
  run.shell = shell;
  run.command = command;
  run.env = env;
  run.env.push_back(std::string(kMarkerVar) + "=" + bg->marker);
  std::string error;
  auto call = channel->start(run, nullptr, error, std::make_shared<BackgroundRelay>(bg.get()));
  if (!call) return error;
  bg->channel = channel;
  bg->call = call;
  if (call->wait_pid(kPidTimeout) == 0) {
    if (call->claim_end()) {  // never reported running: ended here, quietly
      channel->forget(*call);
      channel->kill(*call);
      probe_.kill_marked(bg->marker);
      return "the background process did not report that it runs within " +
             std::to_string(kPidTimeout.count()) + " s";
    }
    bg->wait_ended(std::chrono::hours(1));
    if (bg->pid.load() == 0) {
      std::lock_guard lock(bg->mutex);
      return bg->start_error.empty() ? "the background process did not start" : bg->start_error;
    }
  }
  pid = bg->pid.load() != 0 ? bg->pid.load() : call->wait_pid(std::chrono::seconds(0));
  return {};
}

void RunnerCommandPath::terminate_background(BackgroundProcess& bg,
                                             std::chrono::milliseconds grace) {
  auto channel = bg.channel.lock();
  if (!channel || !bg.call) {
    if (exec_ != nullptr) exec_->terminate_background(bg, grace);
    return;
  }
  channel->kill(*bg.call, grace);
  if (bg.wait_ended(grace + kBackgroundKillGrace)) return;
  // The runner did not answer: end the process from outside, and tell the host here.
  channel->forget(*bg.call);
  probe_.kill_marked(bg.marker);
  if (bg.call->claim_end()) {
    sdk::BackgroundExit exit;
    exit.killed = true;
    exit.signal = SIGKILL;
    bg.finish(exit, {});
  }
}

void RunnerCommandPath::stop() noexcept {
  stop_generation_.fetch_add(1);
  if (exec_ != nullptr) exec_->stop();
}

void RunnerCommandPath::close() noexcept {
  try {
    {
      std::lock_guard lock(runner_mutex_);
      runner_.reset();
    }
    site_.close();  // what was put there for the runner (attach mode's delivered program)
  } catch (...) {
    // cleanup never throws; the host may call it from a signal path.
  }
}

}  // namespace execmcp::plugins::docker_common
