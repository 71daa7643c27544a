// The probes both command paths share: a short script and the kill sweep as one exec each, and
// the explanation of a command killed from outside.
#include "docker_common/commands/container_probe.hpp"

#include <optional>
#include <thread>

#include "docker_common/commands/command_path.hpp"
#include "docker_common/commands/container_scripts.hpp"
#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "runner_client/exec_stream_decoder.hpp"
#include "supervision/command_output.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using Clock = std::chrono::steady_clock;
using Kind = EngineError::Kind;
namespace sv = supervision;

constexpr std::size_t kProbeOutputCap = 4096;

// A probe's output, capped per stream, and the engine's own error stream.
class ProbeOutput final : public runner_client::ExecStreamDecoder::Handler {
 public:
  explicit ProbeOutput(sdk::ExecResult& result)
      : out_(sv::OutputCapture::of_stdout(result, kProbeOutputCap, nullptr)),
        err_(sv::OutputCapture::of_stderr(result, kProbeOutputCap, nullptr)) {}
  void on_payload(runner_client::ExecStreamDecoder::Stream stream, std::string_view data) override {
    if (stream == runner_client::ExecStreamDecoder::Stream::SystemError) {
      if (daemon_error_.size() < kProbeOutputCap) daemon_error_.append(data.substr(0, 1024));
    } else {
      (stream == runner_client::ExecStreamDecoder::Stream::Stdout ? out_ : err_).append(data);
    }
  }
  [[nodiscard]] const std::string& daemon_error() const { return daemon_error_; }

 private:
  sv::OutputCapture out_;
  sv::OutputCapture err_;
  std::string daemon_error_;
};

// Why a container stopped under a command, as far as its state tells. Where the limits bound the
// whole sandbox (gVisor) the sandbox itself ends: at its memory limit (which bounds the Sentry and
// its host threads too) the host's OOM killer takes it, and at the engine's pids limit the Sentry
// cannot make a host thread and exits 2 (a Go panic). The ptrace platform makes host threads per
// process and per Sentry thread, so a fork bomb reaches either limit before its RLIMIT_NPROC
// (docs/docker-backend.md, gVisor).
std::string why_stopped(const ContainerState& state, const RuntimeProfile& runtime,
                        const DockerSettings& settings) {
  if (!runtime.limits_end_the_sandbox) return "something killed it from inside";
  const auto mib = [](std::int64_t bytes) { return std::to_string(bytes / (1024 * 1024)); };
  if (state.oom_killed)
    return "the gVisor sandbox reached its memory limit" +
           (settings.memory_bytes ? " (" + mib(*settings.memory_bytes) + " MiB)" : std::string()) +
           ", which bounds gVisor's own kernel and host threads too (a memory hog, or a fork bomb)";
  if (state.exit_code == 2)
    return "gVisor's kernel gave up, as it does when the sandbox reaches the engine's pids limit" +
           (settings.pids_limit > 0 ? " (" +
                                          std::to_string(engine_pids_limit(
                                              settings.pids_limit, runtime.pids_limit_is_nproc)) +
                                          " host tasks)"
                                    : std::string()) +
           ": each process there costs host threads, more the more processes run (a fork bomb "
           "gets there before pids_limit)";
  return "something killed it from inside";
}

// The "oom_kill N" count of the container's memory cgroup (v2 memory.events, v1 oom_control).
std::optional<long> parse_oom_kills(const std::string& text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line(text.data() + pos, end - pos);
    if (line.starts_with("oom_kill ")) {
      try {
        return std::stol(std::string(line.substr(9)));
      } catch (...) {
        return std::nullopt;
      }
    }
    pos = end + 1;
  }
  return std::nullopt;
}

}  // namespace

sdk::ExecResult ExecProbe::run(const std::string& script, std::chrono::milliseconds timeout,
                               const std::string& name, const std::vector<std::string>& args) {
  const auto started = Clock::now();
  sdk::ExecResult result;
  auto finish = [&]() -> sdk::ExecResult {
    result.duration_seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return std::move(result);
  };
  if (auto err = lifecycle_.connect(); !err.empty()) {
    result.error = err;
    return finish();
  }
  ExecOptions options;
  options.cmd = {"/bin/sh", "-c", script, name};
  options.cmd.insert(options.cmd.end(), args.begin(), args.end());
  options.user = lifecycle_.user();
  options.work_dir = "/";
  if (lifecycle_.attached() && options.user.empty()) {  // its default user may be root
    result.error =
        "container " + lifecycle_.name() + " has not been checked yet: the backend did not start";
    return finish();
  }
  EngineError err;
  auto session = lifecycle_.engine().exec(lifecycle_.name(), options, err);
  if (!session) {
    result.error = describe_failure(err, "creating the exec");
    return finish();
  }
  ProbeOutput output(result);
  const auto deadline = started + timeout;
  bool timed_out = false;
  for (;;) {
    const auto rs = session->read(std::chrono::milliseconds(50), output);
    if (!rs.error.empty()) {
      result.error = rs.error;
      break;
    }
    if (rs.eof) break;
    if (Clock::now() >= deadline) {
      timed_out = result.timed_out = true;
      break;
    }
  }
  const auto exit = session->finish(timed_out);
  if (exit.code) result.exit_code = *exit.code;
  if (!output.daemon_error().empty() && result.error.empty())
    result.error = "Docker reported an error: " + output.daemon_error();
  if (!exit.engine_answered && !timed_out && result.error.empty()) result.error = kLostDocker;
  return finish();
}

void ExecProbe::kill_marked(const std::string& marker) {
  const std::string script = std::string("command -v python3 >/dev/null 2>&1 && exec python3 -c ") +
                             sv::shell_quote(scripts::kSweepPython) + " \"$1\"; " +
                             scripts::kSweepShell;
  ExecOptions options;
  options.cmd = {"/bin/sh", "-c", script, "execmcp-kill", marker};
  options.user = lifecycle_.user();
  if (lifecycle_.attached() && options.user.empty())
    return;  // nothing ran: start() never chose a user
  auto& engine = lifecycle_.engine();
  // A fork bomb can hold every pid for a moment, so the sweep's own exec may fail: retry.
  const auto give_up = Clock::now() + std::chrono::seconds(15);
  while (Clock::now() < give_up) {
    EngineError error;
    auto session = engine.exec(lifecycle_.name(), options, error);
    if (!session && (error.kind == Kind::kNotFound || error.kind == Kind::kNotRunning ||
                     error.kind == Kind::kUnreachable))
      return;  // no container, no processes
    if (session) {
      // Success is the sweep's own word on stdout: an exec that could not even start (no pid
      // left for it) must not count.
      sdk::ExecResult sweep;
      ProbeOutput output(sweep);
      const auto end = Clock::now() + std::chrono::seconds(15);
      while (Clock::now() < end) {
        const auto rs = session->read(std::chrono::milliseconds(200), output);
        if (rs.eof || !rs.error.empty()) break;
      }
      session.reset();  // its exit code says nothing: the sweep's word on stdout does
      if (sweep.stdout_data.find("execmcp-swept") != std::string::npos) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  lifecycle_.log(sdk::LogLevel::Warn,
                 "could not confirm that every process of call " + marker + " was killed");
}

void KillExplainer::decorate_result(std::uint64_t /*mark*/, sdk::ExecResult& result) {
  // A command killed by a signal: by whom (the OOM killer, or the container's PID 1 dying).
  if (!result.timed_out && !result.cancelled && result.error.empty() &&
      lifecycle_.runtime().ended_from_outside(result.exit_code))
    explain(result);
}

void KillExplainer::explain(sdk::ExecResult& result) {
  const auto looked = lifecycle_.inspect_state();
  if (!looked) {
    // The engine stopped answering as the command died: it went away (stopped or restarted) and
    // took the command with it. The exit status is the engine client's (a docker CLI child
    // exits 137 when its engine goes), not the command's.
    if (result.error.empty()) result.error = kLostDocker;
    return;
  }
  auto state = *looked;
  std::optional<long> oom_kills;
  const RuntimeProfile& runtime = lifecycle_.runtime();
  if (state.exists && state.running) {
    // Whether the kernel's OOM killer acted since we last looked: the engine's OOMKilled flag
    // says nothing while the container runs, so read the memory cgroup's own count. Where the
    // memory limit bounds the whole sandbox, the host's OOM killer ends the container (reported
    // below once it stopped), never one command in a running one; the probe only tells whether
    // it still runs.
    auto r = probe_.run(runtime.limits_end_the_sandbox
                            ? "true"
                            : "cat /sys/fs/cgroup/memory.events "
                              "/sys/fs/cgroup/memory/memory.oom_control 2>/dev/null; true",
                        std::chrono::seconds(10));
    if (r.error.empty() && r.exit_code == 0) {
      oom_kills = runtime.limits_end_the_sandbox ? 0 : parse_oom_kills(r.stdout_data);
    } else if (lifecycle_.wait_stopped(std::chrono::seconds(5))) {
      state = lifecycle_.inspect_state().value_or(ContainerState{});  // it was dying when we looked
    }
  }
  if (state.exists && !state.running) {
    // The engine learns of an OOM kill from an event of its own, which can land after the exit it
    // already reports (seen under gVisor on a loaded machine): a PID 1 ended by SIGKILL is looked
    // at again for up to 2 s before the kill is put down to something else. Unless the engine's
    // events say, at once or while it waits (ContainerEvents): an oom event came with the die, or
    // the engine signalled the container just before (docker kill or stop), so no OOM is coming.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    auto seen = events_ ? events_->mark() : ContainerEvents::Mark{};
    while (state.exit_code == 137 && !state.oom_killed) {
      if (events_) {
        const auto death = events_->last_death();
        if (death.seq != 0 && death.exit_code == state.exit_code &&
            std::chrono::steady_clock::now() - death.at < std::chrono::seconds(30)) {
          state.oom_killed = death.oom;
          if (death.oom || death.killed) break;
        }
      }
      if (std::chrono::steady_clock::now() >= deadline) break;
      if (events_) {
        seen = events_->wait_change(seen, std::chrono::milliseconds(200));  // a sleep without
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      const auto again = lifecycle_.inspect_state();
      if (!again || !again->exists || again->running) break;
      state = *again;
    }
    if (runtime.exit_is_sandbox_end(result.exit_code)) result.exit_code = -1;  // not the command's
    result.notices.push_back(
        "the container stopped during the command (its PID 1 exited with code " +
        std::to_string(state.exit_code) + ", OOMKilled=" + (state.oom_killed ? "true" : "false") +
        "): " + why_stopped(state, runtime, lifecycle_.settings()) + "; " +
        (lifecycle_.attached() ? "execmcp does not manage attached containers: start it again"
                               : "the next call starts it again"));
    return;
  }
  if (result.exit_code != 137 || !oom_kills) return;
  const long before = oom_kills_seen_.exchange(*oom_kills);
  if (*oom_kills > before) {
    result.notices.push_back(
        "the command was killed by the kernel's out-of-memory killer (exit 137): the container "
        "reached its memory limit" +
        (lifecycle_.settings().memory_bytes
             ? " (" + std::to_string(*lifecycle_.settings().memory_bytes / (1024 * 1024)) + " MiB)"
             : std::string()));
  } else {
    result.notices.push_back(
        "the command was killed with SIGKILL (exit 137), not by the out-of-memory killer");
  }
}

}  // namespace execmcp::plugins::docker_common
