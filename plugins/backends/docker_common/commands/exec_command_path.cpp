// Commands as one exec each: the wrapper, the kill sweep, stdin fed in turns with the output, and
// the container brought back once when it is gone.
#include "docker_common/commands/exec_command_path.hpp"

#include <signal.h>

#include <optional>
#include <stop_token>
#include <thread>

#include "docker_common/commands/container_scripts.hpp"
#include "runner_client/exec_stream_decoder.hpp"
#include "supervision/command_output.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using Clock = std::chrono::steady_clock;
using Kind = EngineError::Kind;
namespace sv = supervision;

// The wrapper's word on stderr that its own sweep could not finish (forks kept failing).
constexpr const char* kSweepIncomplete = "execmcp-sweep-incomplete\n";

// Collects decoded exec output with per-stream caps (draining past the cap) and streams the kept
// part to the sink, like the local backend.
class CappedCollector final : public runner_client::ExecStreamDecoder::Handler {
 public:
  CappedCollector(sdk::ExecResult& result, std::size_t cap, sdk::OutputSink* sink)
      : out_(sv::OutputCapture::of_stdout(result, cap, sink)),
        err_(sv::OutputCapture::of_stderr(result, cap, sink)) {}

  void on_payload(runner_client::ExecStreamDecoder::Stream stream, std::string_view data) override {
    if (stream == runner_client::ExecStreamDecoder::Stream::SystemError) {
      daemon_error_.append(data);
      return;
    }
    if (stream == runner_client::ExecStreamDecoder::Stream::Stdout) {
      out_.append(data);
      return;
    }
    stderr_tail_.append(data);
    if (stderr_tail_.size() > 64) stderr_tail_.erase(0, stderr_tail_.size() - 64);
    err_.append(data);
  }

  [[nodiscard]] const std::string& daemon_error() const { return daemon_error_; }
  // The last bytes of stderr, kept even past the cap (the wrapper's sentinel lands there).
  [[nodiscard]] const std::string& stderr_tail() const { return stderr_tail_; }

 private:
  sv::OutputCapture out_;
  sv::OutputCapture err_;
  std::string daemon_error_;
  std::string stderr_tail_;
};

// The engine created the exec but the runtime found the container's init gone: the command never
// ran (runc: "stopped state"; gVisor, whose sandbox was ending: "deleted state").
bool exec_never_ran(const sdk::ExecResult& r) {
  for (const std::string_view says : {"OCI runtime exec failed", "cannot exec in a stopped state",
                                      "cannot exec in a deleted state"})
    if (r.exit_code == 126 && (r.stdout_data.find(says) != std::string::npos ||
                               r.stderr_data.find(says) != std::string::npos))
      return true;
  return false;
}

// The exec's own form of a call: an agent's command under the wrapper, else the script with its
// arguments.
std::vector<std::string> exec_form(const ContainerCommand& c) {
  if (c.agent_command)
    return {"/bin/sh", "-c", scripts::kCallWrapper, "execmcp", c.shell, c.script, c.marker};
  std::vector<std::string> cmd = {c.shell, "-c", c.script};
  if (!c.name.empty() || !c.args.empty()) cmd.push_back(c.name);
  cmd.insert(cmd.end(), c.args.begin(), c.args.end());
  return cmd;
}

}  // namespace

ExecCommandPath::ExecCommandPath(ContainerLifecycle& lifecycle, ContainerProbe& probe)
    : lifecycle_(lifecycle),
      probe_(probe),
      engine_(lifecycle.engine()),
      events_(engine_, lifecycle.name(), [&lifecycle](sdk::LogLevel level, const std::string& m) {
        lifecycle.log(level, m);
      }) {
  if (engine_.input_always_arrives()) input_path_ = 1;
}

StopCheck::StopCheck(ContainerLifecycle& lifecycle, const ContainerEvents* events)
    : lifecycle_(lifecycle),
      events_(events),
      enabled_(lifecycle.execs_outlive_container()),
      seen_(events ? events->mark() : ContainerEvents::Mark{}),
      next_(Clock::now() + (seen_.live ? kEveryWithEvents : kEvery)) {}

bool StopCheck::stopped() {
  if (!enabled_) return false;
  bool look = Clock::now() >= next_;
  bool event = false;  // a death event, or a stream begun or ended since the last look
  if (events_) {
    const auto now = events_->mark();
    event = now.live != seen_.live || now.epoch != seen_.epoch || now.deaths != seen_.deaths;
    seen_ = now;
  }
  if (!look && !event) return false;
  const auto state = lifecycle_.inspect_state();
  const bool stopped = state && (!state->exists || !state->running);
  // Still running after a death event (a replayed one, or the engine not done yet): look again
  // soon.
  next_ = Clock::now() + (seen_.live && !event ? kEveryWithEvents : kEvery);
  return stopped;
}

StopCheck ExecCommandPath::stop_check() {
  if (!lifecycle_.execs_outlive_container()) return StopCheck(lifecycle_, nullptr);
  events_.start();
  return StopCheck(lifecycle_, &events_);
}

std::string ExecCommandPath::check_input_path() {
  if (input_path_ != 0) return input_path_ > 0 ? "" : kNoUpgrade;
  ExecOptions options;
  options.cmd = {"true"};
  options.attach_stdin = true;
  options.work_dir = "/";
  options.user = lifecycle_.user();
  std::vector<std::string> notices;
  std::string error;
  auto session = start_exec(options, true, notices, error);
  if (!session) return error;
  input_path_ = session->carries_input() ? 1 : -1;
  if (input_path_ < 0) lifecycle_.log(sdk::LogLevel::Warn, kNoUpgrade);
  return input_path_ > 0 ? "" : kNoUpgrade;
}

std::unique_ptr<ExecSession> ExecCommandPath::start_exec(const ExecOptions& options, bool recover,
                                                         std::vector<std::string>& notices,
                                                         std::string& error) {
  if (lifecycle_.attached() && options.user.empty()) {  // the container's default user may be root
    error =
        "container " + lifecycle_.name() + " has not been checked yet: the backend did not start";
    return nullptr;
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    EngineError err;
    auto session = engine_.exec(lifecycle_.name(), options, err);
    if (session) return session;
    if ((err.kind == Kind::kNotFound || err.kind == Kind::kNotRunning) && attempt == 0 && recover) {
      if (error = lifecycle_.recover(notices); !error.empty()) return nullptr;
      continue;
    }
    error = describe_failure(err, "creating the exec");
    return nullptr;
  }
  error = "creating the exec failed";
  return nullptr;
}

sdk::ExecResult ExecCommandPath::run_once(const ContainerCommand& spec) {
  const auto started = Clock::now();
  sdk::ExecResult result;
  auto finish = [&]() -> sdk::ExecResult {
    result.duration_seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return std::move(result);
  };
  const std::uint64_t generation = stop_generation_.load();

  if (auto err = lifecycle_.connect(); !err.empty()) {
    result.error = err;
    return finish();
  }
  if (spec.stdin_data) {
    // Input that cannot arrive would leave `cat >` with an empty file: refuse before it runs.
    if (auto err = check_input_path(); !err.empty()) {
      result.error = err;
      return finish();
    }
  }
  ExecOptions options;
  options.cmd = exec_form(spec);
  options.env = spec.env;
  options.user = lifecycle_.user();
  options.work_dir = spec.work_dir;
  options.attach_stdin = spec.stdin_data.has_value();
  std::string error;
  auto session = start_exec(options, spec.recover, result.notices, error);
  if (!session) {
    result.error = error;
    return finish();
  }
  // Stdin is fed in turns with reading the output: a command that stops reading (it failed, e.g.
  // ENOSPC or EROFS) must not block us, and its stderr must still be read.
  std::string stdin_error;
  std::string_view stdin_left;
  bool stdin_open = false;
  if (spec.stdin_data) {
    stdin_left = *spec.stdin_data;
    stdin_open = true;
    if (stdin_left.empty()) {
      session->close_stdin();
      stdin_open = false;
    }
  }

  CappedCollector collector(result, spec.output_cap, spec.sink);
  const bool has_deadline = spec.timeout.count() > 0;
  const auto deadline = started + spec.timeout;
  bool killed = false;
  bool container_stopped = false;  // and the engine left the stream open (StopCheck)
  StopCheck stop_check = this->stop_check();
  Clock::time_point drain_until{};
  for (;;) {
    if (!killed) {
      const auto cause = sv::kill_cause(spec.cancel, stop_generation_.load() != generation,
                                        has_deadline ? std::optional(deadline) : std::nullopt);
      sv::record_kill(result, cause);
      if (cause != sv::KillCause::None) {
        killed = true;
        probe_.kill_marked(spec.marker);
        drain_until = Clock::now() + std::chrono::seconds(2);
      }
    } else if (Clock::now() >= drain_until) {
      break;  // something outside our marker still holds the stream open; stop waiting
    }
    auto wait = std::chrono::milliseconds(50);
    if (stdin_open && !killed) {
      auto w = session->write_some(stdin_left, std::chrono::milliseconds(20));
      stdin_left.remove_prefix(w.bytes);
      if (!w.error.empty()) {
        stdin_error = w.error;
        stdin_open = false;
      } else if (stdin_left.empty()) {
        session->close_stdin();
        stdin_open = false;
      }
      wait = std::chrono::milliseconds(stdin_open ? 1 : 50);
    }
    const auto rs = session->read(wait, collector);
    if (!rs.error.empty()) {
      if (!killed) result.error = rs.error;
      break;
    }
    if (rs.eof) break;
    if (stop_check.stopped()) {
      container_stopped = true;  // KillExplainer says so: the exit code is unknown
      break;
    }
  }
  // A stopped container's exec has nothing more to say (gVisor keeps its stream open).
  const auto exit = killed || !container_stopped ? session->finish(killed) : session->abandon();
  session.reset();
  if (stdin_open && stdin_error.empty()) stdin_error = sv::stdin_shortfall_error(stdin_left.size());
  if (std::string_view(collector.stderr_tail()).ends_with(kSweepIncomplete)) {
    const std::string_view sentinel = kSweepIncomplete;
    if (std::string_view(result.stderr_data).ends_with(sentinel))
      result.stderr_data.resize(result.stderr_data.size() - sentinel.size());
    if (!killed) probe_.kill_marked(spec.marker);
  }
  if (!collector.daemon_error().empty() && result.error.empty())
    result.error = "Docker reported an error: " + collector.daemon_error();
  if (exit.code) result.exit_code = *exit.code;
  // The stream ended and the engine cannot say how the command ended: it went away (restarted or
  // stopped) while the command ran, and whatever output came is all there is.
  if (!exit.engine_answered && !killed && result.error.empty()) result.error = kLostDocker;
  // Only a command that claims success while its input was cut short is an error here; one that
  // failed says why on its stderr.
  if (!stdin_error.empty() && result.error.empty() && result.exit_code == 0)
    result.error = stdin_error;
  return finish();
}

sdk::ExecResult ExecCommandPath::run(const ContainerCommand& spec) {
  auto result = run_once(spec);
  if (!spec.recover || !exec_never_ran(result) || !lifecycle_.wait_stopped(std::chrono::seconds(5)))
    return result;
  // The container stopped between our last look and this exec (its PID 1 was killed from
  // inside): bring it back and run the command, which never started, once more.
  std::vector<std::string> notices;
  if (auto err = lifecycle_.recover(notices); !err.empty()) {
    sdk::ExecResult failed;
    failed.error = err;
    failed.duration_seconds = result.duration_seconds;
    return failed;
  }
  auto again = run_once(spec);
  again.notices.insert(again.notices.begin(), notices.begin(), notices.end());
  return again;
}

std::string ExecCommandPath::start_background(const std::shared_ptr<BackgroundProcess>& bg,
                                              const std::string& shell, const std::string& command,
                                              const std::vector<std::string>& env, long& pid) {
  pid = 0;  // the wrapper's shell does not say
  if (auto err = lifecycle_.connect(); !err.empty()) return err;
  ExecOptions options;
  options.cmd = {"/bin/sh", "-c", scripts::kCallWrapper, "execmcp", shell, command, bg->marker};
  options.env = env;
  options.user = lifecycle_.user();
  options.work_dir = bg->work_dir;
  std::vector<std::string> notices;
  std::string error;
  std::shared_ptr<ExecSession> session = start_exec(options, true, notices, error);
  if (!session) return error;
  bg->via_exec = true;
  BackgroundProcess* raw = bg.get();  // the thread is joined before *raw goes
  bg->thread = std::jthread([raw, session](std::stop_token stop) {
    struct Forward final : runner_client::ExecStreamDecoder::Handler {
      BackgroundProcess* bg = nullptr;
      std::string daemon_error;
      void on_payload(runner_client::ExecStreamDecoder::Stream stream,
                      std::string_view data) override {
        if (stream == runner_client::ExecStreamDecoder::Stream::Stdout)
          bg->observer->on_output(sdk::StreamKind::Stdout, data);
        else if (stream == runner_client::ExecStreamDecoder::Stream::Stderr)
          bg->observer->on_output(sdk::StreamKind::Stderr, data);
        else if (stream == runner_client::ExecStreamDecoder::Stream::SystemError &&
                 daemon_error.size() < 1024)
          daemon_error.append(data.substr(0, 1024));
      }
    } forward;
    forward.bg = raw;
    std::string lost;
    std::optional<Clock::time_point> give_up;
    for (;;) {
      const auto rs = session->read(std::chrono::milliseconds(200), forward);
      if (!rs.error.empty()) {
        lost = rs.error;
        break;
      }
      if (rs.eof || stop.stop_requested()) break;
      // Killed by the sweep: something outside the marker may still hold the stream open.
      if (raw->terminating.load() && !give_up) give_up = Clock::now() + std::chrono::seconds(10);
      if (give_up && Clock::now() > *give_up) break;
    }
    const bool killed = raw->terminating.load();
    const auto ended = session->finish(killed);
    sdk::BackgroundExit exit = ended.code ? exit_of(*ended.code, killed) : sdk::BackgroundExit{};
    exit.killed = killed;
    if (!lost.empty() && !killed) exit.error = lost;
    if (!forward.daemon_error.empty() && exit.error.empty())
      exit.error = "Docker reported an error: " + forward.daemon_error;
    if (!ended.engine_answered && !killed && exit.error.empty()) exit.error = kLostDocker;
    raw->finish(exit, {});
  });
  return {};
}

void ExecCommandPath::term_marked(const std::string& marker, std::chrono::milliseconds grace) {
  // One TERM to each marked process, then passes until none is left or the grace is over.
  const long passes = std::max<long>(1, static_cast<long>(grace.count() / 100));
  ContainerCommand c;
  c.script = scripts::kTermMarked;
  c.name = "execmcp-term";
  c.args = {marker, std::to_string(passes)};
  c.work_dir = "/";
  c.timeout = grace + std::chrono::seconds(15);
  c.output_cap = 4096;
  c.marker = random_marker();
  c.recover = false;
  run_once(c);
}

void ExecCommandPath::terminate_background(BackgroundProcess& bg, std::chrono::milliseconds grace) {
  if (!bg.via_exec) return;
  if (grace.count() > 0) term_marked(bg.marker, grace);
  probe_.kill_marked(bg.marker);
}

}  // namespace execmcp::plugins::docker_common
