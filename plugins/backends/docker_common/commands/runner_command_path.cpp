// Commands through execmcp-runner: the channel, the program's delivery, one call on it, and the
// fallback to one exec per call. See docs/docker-backend.md.
#include "docker_common/commands/runner_command_path.hpp"

#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "docker_common/commands/container_scripts.hpp"
#include "docker_common/engine/tar_archive.hpp"
#include "docker_common/log_text.hpp"
#include "runner_client/run_call.hpp"
#include "supervision/command_output.hpp"
#include "supervision/program_path.hpp"

namespace execmcp::plugins::docker_common {

namespace {

using Clock = std::chrono::steady_clock;
using Kind = EngineError::Kind;
namespace sv = supervision;
namespace rp = supervision::runner;

// How long a starting runner may take to say hello (a cold container on a loaded machine).
constexpr auto kHelloTimeout = std::chrono::seconds(15);
// After a failed start, calls run with one exec each for this long before the runner is tried
// again (each attempt costs an exec).
constexpr auto kRetryPause = std::chrono::seconds(30);
// How long a kill request may go unanswered before the call's processes are killed from outside.
constexpr auto kKillGrace = std::chrono::seconds(15);

// The runner program's bytes, to copy or pipe into a container.
EngineError read_runner(const std::string& path, std::string& bytes) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  bytes = buffer.str();
  if (!in || bytes.empty())
    return EngineError::sentence(
        Kind::kOther, "cannot read execmcp-runner at " + path + " to copy it into the container");
  return {};
}

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

RunnerCommandPath::RunnerCommandPath(ContainerLifecycle& lifecycle, ExecCommandPath& fallback,
                                     ContainerProbe& probe)
    : lifecycle_(lifecycle),
      exec_(fallback),
      probe_(probe),
      engine_(lifecycle.engine()),
      host_path_(sv::program_beside_plugin("execmcp-runner")),
      runner_path_(kRunnerPath) {
  // A missing runner is said on each call (then run with one exec each); the container must
  // still start, so nothing is mounted from a path that is not there.
  // An attached container was created without our mount: the program is sent in by exec.
  if (::access(host_path_.c_str(), X_OK) == 0)
    delivery_ = engine_.sees_host_files() && !lifecycle_.attached() ? RunnerDelivery::Bind
                                                                    : RunnerDelivery::Copy;
  lifecycle_.parts().add(*this);
}

std::string RunnerCommandPath::prepare_spec(ContainerSpec& spec) {
  spec.runner = delivery_;
  spec.runner_source = host_path_;
  return {};
}

EngineError RunnerCommandPath::copy_runner() {
  if (lifecycle_.attached()) return deliver_runner_by_exec();
  std::string bytes;
  if (auto err = read_runner(host_path_, bytes); !err.ok()) return err;
  const std::string tar = single_file_tar("execmcp-runner", bytes, 0555);
  auto err = engine_.copy_into(lifecycle_.name(), kRunnerDir, tar);
  if (err.ok()) copied_for_ = incarnation_.load();
  return err;
}

EngineError RunnerCommandPath::deliver_runner_by_exec() {
  std::string bytes;
  if (auto err = read_runner(host_path_, bytes); !err.ok()) return err;
  // As the exec user, so the file is its own and close() can remove it (scripts/
  // deliver_runner.sh says where it goes).
  {  // A stopped container is the call's error, not the runner's fault (no exec-mode fallback).
    std::vector<std::string> unused;
    if (auto why = lifecycle_.recover(unused); !why.empty())
      return EngineError::sentence(Kind::kNotRunning, why);
  }
  std::string tag;
  const std::string instance_id = lifecycle_.init()->instance_id;
  for (char c : instance_id.empty() ? std::to_string(::getpid()) : instance_id)
    tag.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '-');
  ContainerCommand spec;
  spec.script = scripts::kDeliverRunner;
  spec.name = "execmcp-deliver";
  spec.args = {tag};
  spec.work_dir = "/";
  spec.stdin_data = std::move(bytes);
  spec.timeout = std::chrono::seconds(120);
  spec.output_cap = 4096;
  spec.marker = "execmcp-deliver-" + tag;
  spec.recover = false;
  const auto r = exec_.run(spec);
  const auto at = r.stdout_data.find("execmcp-at:");
  if (!r.error.empty() || r.exit_code != 0 || at == std::string::npos) {
    std::string said = r.error.empty() ? r.stderr_data : r.error;
    while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
    return EngineError::sentence(Kind::kOther, "cannot put execmcp-runner into container " +
                                                   lifecycle_.name() + ": " + said.substr(0, 1024));
  }
  std::string dir = r.stdout_data.substr(at + 11);
  dir = dir.substr(0, dir.find('\n'));
  runner_path_ = dir + "/execmcp-runner";
  copied_for_ = incarnation_.load();
  return {};
}

std::string RunnerCommandPath::open_runner_channel(
    std::vector<std::string>& notices, std::shared_ptr<runner_client::RunnerChannel>& out,
    bool& runner_fault) {
  // The engine's and the container's failures are the call's error as they would be for an exec;
  // only the runner's own (missing, not copied, silent, of another build) allow the fallback.
  runner_fault = true;
  if (delivery_ == RunnerDelivery::None)
    return "execmcp-runner is missing or not executable at " + host_path_ +
           " (it is built and installed with the " + lifecycle_.backend_name() +
           " plugin, in the directory above it)";
  runner_fault = false;
  if (auto err = lifecycle_.connect(); !err.empty()) return err;
  ExecOptions options;
  if (lifecycle_.attached() && lifecycle_.user().empty())
    return "container " + lifecycle_.name() +
           " has not been checked yet: the backend did not start";
  options.attach_stdin = true;
  options.work_dir = "/";
  options.user = lifecycle_.user();
  // The container is brought back at most once per opening.
  bool recovered = false;
  auto bring_back = [&]() -> std::string {
    recovered = true;
    return lifecycle_.recover(notices);
  };
  std::string last_error;
  for (int attempt = 0; attempt < 2;) {
    runner_fault = false;
    // Copied before the runner starts: a container brought back as new has an empty volume.
    if (delivery_ == RunnerDelivery::Copy && !runner_copied()) {
      if (const auto err = copy_runner(); !err.ok()) {
        if (err.kind == Kind::kNotFound && !recovered) {
          if (auto why = bring_back(); !why.empty()) return why;
          continue;
        }
        runner_fault = err.kind != Kind::kUnreachable && err.kind != Kind::kNotRunning;
        return describe_failure(err, "copying execmcp-runner into the container");
      }
    }
    options.cmd = {runner_path_, rp::kChannelArg};  // attach mode: where it was delivered
    EngineError err;
    auto ends = engine_.open_channel(lifecycle_.name(), options, err);
    if (!ends) {
      if ((err.kind == Kind::kNotFound || err.kind == Kind::kNotRunning) && !recovered) {
        if (auto why = bring_back(); !why.empty()) return why;
        continue;
      }
      if (err.kind == Kind::kNoInput) {  // the runner would never hear from us
        runner_fault = true;
        exec_.note_input_path(false);
        return kNoUpgrade;
      }
      return describe_failure(err, "creating the exec");
    }
    runner_fault = true;
    exec_.note_input_path(true);
    auto channel = std::make_shared<runner_client::RunnerChannel>(
        std::move(*ends), [this](sdk::LogLevel level, const std::string& line) {
          lifecycle_.log(level, "execmcp-runner in " + lifecycle_.name() + ": " + line);
        });
    last_error = channel->wait_ready(kHelloTimeout);
    if (last_error.empty()) {
      out = std::move(channel);
      lifecycle_.log(sdk::LogLevel::Info,
                     "execmcp-runner is ready in container " + lifecycle_.name());
      return {};
    }
    ++attempt;
    // The container was stopping (or gone) when the runner's exec started ("cannot exec in a
    // stopped state", "is not running"): not the runner's fault. Once it has stopped, the next
    // attempt brings it back.
    const bool stopping = says_container_init_gone(last_error) ||
                          !lifecycle_.inspect_state().value_or(ContainerState{}).running;
    if (attempt == 1 && stopping) {
      lifecycle_.wait_stopped(std::chrono::seconds(5));
      if (auto why = bring_back(); !why.empty()) {
        runner_fault = false;
        return why;
      }
      continue;
    }
    // The volume may have lost the program (the container was recreated behind our back).
    if (delivery_ != RunnerDelivery::Copy) break;
    copied_for_ = kNotCopied;
  }
  return last_error;
}

std::shared_ptr<runner_client::RunnerChannel> RunnerCommandPath::runner_channel(
    std::vector<std::string>& notices, std::string& why, bool& runner_fault) {
  std::lock_guard lock(runner_mutex_);
  runner_fault = true;
  // A channel into a container that has since been replaced (start() again, a recovery that made
  // a new one) is dead even while its reader has not seen the stream's end yet.
  if (runner_ && runner_for_ != incarnation_.load()) {
    lifecycle_.log(sdk::LogLevel::Info, "execmcp-runner's channel was into the container " +
                                            lifecycle_.name() +
                                            " before it was made again; opening a new one");
    runner_.reset();
  }
  if (runner_ && runner_->alive()) return runner_;
  if (runner_) {
    lifecycle_.log(sdk::LogLevel::Warn, "execmcp-runner in " + lifecycle_.name() + " is gone (" +
                                            log_text(runner_->failure()) + "); starting it again");
    runner_.reset();
  }
  if (exec_.input_never_arrives()) {  // a property of the way to the engine: no use trying again
    why = kNoUpgrade;
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
  const std::uint64_t opening_for = incarnation_.load();
  why = open_runner_channel(notices, runner_, runner_fault);
  runner_for_ = opening_for;
  if (!why.empty()) {
    runner_.reset();
    if (!runner_fault) return nullptr;  // the engine or the container: the next call tries again
    runner_failure_ = why;
    runner_retry_at_ = Clock::now() + kRetryPause;
    lifecycle_.log(sdk::LogLevel::Warn, "execmcp-runner cannot start in " + lifecycle_.name() +
                                            ": " + log_text(why) +
                                            "; commands run with one exec each for now");
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

  StopCheck stop_check = exec_.stop_check();
  runner_client::RunWatch watch;
  watch.output_cap = spec.output_cap;
  watch.sink = spec.sink;
  watch.cancel = spec.cancel;
  if (spec.timeout.count() > 0) watch.deadline = started + spec.timeout;
  watch.backend_stopped = [&] { return stop_generation_.load() != generation; };
  watch.kill_grace = kKillGrace;
  watch.target_gone = [&] { return stop_check.stopped(); };
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
    lifecycle_.wait_stopped(std::chrono::seconds(5));
    return std::nullopt;
  } else if (done) {
    runner_client::apply_report(*done, result);
  } else {
    drop_runner(shared);
    if (!call->started()) return std::nullopt;
    // The channel broke during the call: the engine went away, the runner was killed (by a
    // command, perhaps this one), or the container stopped. The command ran; how it ended is
    // unknown (exit code -1), and what is left of it is found by its marker.
    ContainerInfo info;
    if (engine_.inspect(lifecycle_.name(), info).kind == Kind::kUnreachable) {
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
    if (!channel && !runner_fault) {
      sdk::ExecResult failed;
      failed.error = why;
      failed.notices = std::move(notices);
      return failed;
    }
    if (!channel) {
      auto result = exec_.run(spec);
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
    const std::uint64_t incarnation = incarnation_.load();
    std::string why;
    bool runner_fault = true;
    auto channel = runner_channel(notices, why, runner_fault);
    if (!channel && runner_fault) return std::nullopt;
    if (!channel) {
      result.error = why;
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
    StopCheck stop_check = exec_.stop_check();
    std::vector<runner_client::RunnerCall::Chunk> chunks;
    bool over = false;
    bool stopped = false;
    while (!over && !stopped && Clock::now() < deadline) {
      over = call->wait(std::chrono::milliseconds(50), chunks);
      stopped = !over && (incarnation_.load() != incarnation || stop_check.stopped());
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
    return "execmcp-runner in " + lifecycle_.name() + " cannot see the container's root (" +
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
  if (!channel) {
    lifecycle_.log(sdk::LogLevel::Warn,
                   "background process runs with one docker exec: the in-container "
                   "agent could not start (" +
                       log_text(why) + ")");
    return exec_.start_background(bg, shell, command, env, pid);
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
  if (!channel || !bg.call) return exec_.terminate_background(bg, grace);
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
  exec_.stop();
}

void RunnerCommandPath::close() noexcept {
  try {
    std::string dir;
    {
      std::lock_guard lock(runner_mutex_);
      runner_.reset();
      if (runner_path_ != kRunnerPath) dir = runner_path_.substr(0, runner_path_.rfind('/'));
    }
    // An attached container stays as it was: only what we put there goes (our calls died with the
    // runner's channel; stop() ended the rest).
    if (!lifecycle_.attached() || dir.empty() || !lifecycle_.connect().empty()) return;
    probe_.run("rm -rf -- \"$1\"", std::chrono::seconds(15), "execmcp-cleanup", {dir});
  } catch (...) {
    // cleanup never throws; the host may call it from a signal path.
  }
}

}  // namespace execmcp::plugins::docker_common
