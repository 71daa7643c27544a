// The container backend: exec with a per-call kill sweep, the runner, file tools and background
// processes, over ContainerLifecycle and any Engine.
#include "docker_common/container_backend.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <stop_token>
#include <thread>

#include "docker_common/base64.hpp"
#include "docker_common/container_scripts.hpp"
#include "docker_common/exec_stream_decoder.hpp"
#include "docker_common/log_text.hpp"
#include "execmcp/sdk/path_policy.hpp"
#include "supervision/command_output.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using Clock = std::chrono::steady_clock;
using Kind = EngineError::Kind;
namespace sv = supervision;
using sv::shell_quote;

// A short look into the container as one exec of `/bin/sh -c script`: from "/", its output capped,
// never recovering a stopped container (a probe must not bring it back). A template only because
// ContainerBackend::ExecSpec is private: callers name it, `probe_spec<ExecSpec>(...)`.
template <typename Spec>
Spec probe_spec(std::string script, std::chrono::milliseconds timeout) {
  Spec spec;
  spec.cmd = {"/bin/sh", "-c", std::move(script)};
  spec.work_dir = "/";
  spec.timeout = timeout;
  spec.output_cap = 4096;
  spec.marker = random_marker();
  spec.recover = false;
  return spec;
}

constexpr const char* kSweepIncomplete = "execmcp-sweep-incomplete\n";

// Collects decoded exec output with per-stream caps (draining past the cap) and streams the kept
// part to the sink, like the local backend.
class CappedCollector final : public ExecStreamDecoder::Handler {
 public:
  CappedCollector(sdk::ExecResult& result, std::size_t cap, sdk::OutputSink* sink)
      : out_(sv::OutputCapture::of_stdout(result, cap, sink)),
        err_(sv::OutputCapture::of_stderr(result, cap, sink)) {}

  void on_payload(ExecStreamDecoder::Stream stream, std::string_view data) override {
    if (stream == ExecStreamDecoder::Stream::SystemError) {
      daemon_error_.append(data);
      return;
    }
    if (stream == ExecStreamDecoder::Stream::Stdout) {
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

}  // namespace

ContainerBackend::ContainerBackend(const sdk::BackendInit& init, std::string backend_name,
                                   DockerSettings settings, std::unique_ptr<Engine> engine)
    : engine_(std::move(engine)),
      lifecycle_(init, std::move(backend_name), std::move(settings), *engine_),
      init_(lifecycle_.init()),
      backend_name_(lifecycle_.backend_name()),
      settings_(lifecycle_.settings()),
      name_(lifecycle_.name()),
      runner_path_(kRunnerPath) {
  if (engine_->input_always_arrives()) input_path_ = 1;
}

ContainerBackend::~ContainerBackend() {
  end_all_background(std::chrono::milliseconds(0));  // the host calls cleanup(); just in case
}

std::string ContainerBackend::start() {
  auto err = lifecycle_.start();
  if (!err.empty() || !lifecycle_.attached()) return err;
  try {
    // A user name (or uid) that is root inside the container is refused too: ask the container.
    return lifecycle_.accept_attached_user(
        run_exec_once(probe_spec<ExecSpec>(kAttachedUidProbe, std::chrono::seconds(30))));
  } catch (const std::exception& e) {
    return backend_name_ + " start failed: " + e.what();
  }
}

void ContainerBackend::kill_marked(const std::string& marker) {
  const std::string script = std::string("command -v python3 >/dev/null 2>&1 && exec python3 -c ") +
                             shell_quote(scripts::kSweepPython) + " \"$1\"; " +
                             scripts::kSweepShell;
  ExecOptions options;
  options.cmd = {"/bin/sh", "-c", script, "execmcp-kill", marker};
  options.user = user();
  if (attached() && options.user.empty()) return;  // nothing ran: start() never chose a user
  // A fork bomb can hold every pid for a moment, so the sweep's own exec may fail: retry.
  const auto give_up = Clock::now() + std::chrono::seconds(15);
  while (Clock::now() < give_up) {
    EngineError error;
    auto session = engine_->exec(name_, options, error);
    if (!session && (error.kind == Kind::kNotFound || error.kind == Kind::kNotRunning ||
                     error.kind == Kind::kUnreachable))
      return;  // no container, no processes
    if (session) {
      // Success is the sweep's own word on stdout: an exec that could not even start (no pid
      // left for it) must not count.
      sdk::ExecResult sweep;
      CappedCollector collector(sweep, 4096, nullptr);
      const auto end = Clock::now() + std::chrono::seconds(15);
      while (Clock::now() < end) {
        const auto rs = session->read(std::chrono::milliseconds(200), collector);
        if (rs.eof || !rs.error.empty()) break;
      }
      session.reset();  // its exit code says nothing: the sweep's word on stdout does
      if (sweep.stdout_data.find("execmcp-swept") != std::string::npos) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  log(sdk::LogLevel::Warn,
      "could not confirm that every process of call " + marker + " was killed");
}

std::string ContainerBackend::check_input_path() {
  if (input_path_ != 0) return input_path_ > 0 ? "" : kNoUpgrade;
  ExecOptions options;
  options.cmd = {"true"};
  options.attach_stdin = true;
  options.work_dir = "/";
  options.user = user();
  std::vector<std::string> notices;
  std::string error;
  auto session = start_exec(options, true, notices, error);
  if (!session) return error;
  input_path_ = session->carries_input() ? 1 : -1;
  if (input_path_ < 0) log(sdk::LogLevel::Warn, kNoUpgrade);
  return input_path_ > 0 ? "" : kNoUpgrade;
}

std::unique_ptr<ExecSession> ContainerBackend::start_exec(const ExecOptions& options, bool recover,
                                                          std::vector<std::string>& notices,
                                                          std::string& error) {
  if (attached() && options.user.empty()) {  // the container's default user may be root
    error = "container " + name_ + " has not been checked yet: the backend did not start";
    return nullptr;
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    EngineError err;
    auto session = engine_->exec(name_, options, err);
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

sdk::ExecResult ContainerBackend::run_exec_once(const ExecSpec& spec) {
  const auto started = Clock::now();
  sdk::ExecResult result;
  auto finish = [&]() -> sdk::ExecResult {
    result.duration_seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return std::move(result);
  };
  const std::uint64_t generation = stop_generation_.load();

  if (auto err = engine_->connect(); !err.ok()) {
    result.error = describe_failure(err, "reaching the engine at " + engine_->describe());
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
  options.cmd = spec.cmd;
  options.env = spec.env;
  options.user = user();
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
  Clock::time_point drain_until{};
  for (;;) {
    if (!killed) {
      const auto cause = sv::kill_cause(spec.cancel, stop_generation_.load() != generation,
                                        has_deadline ? std::optional(deadline) : std::nullopt);
      sv::record_kill(result, cause);
      if (cause != sv::KillCause::None) {
        killed = true;
        kill_marked(spec.marker);
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
  }
  const auto exit = session->finish(killed);
  session.reset();
  if (stdin_open && stdin_error.empty()) stdin_error = sv::stdin_shortfall_error(stdin_left.size());
  if (std::string_view(collector.stderr_tail()).ends_with(kSweepIncomplete)) {
    const std::string_view sentinel = kSweepIncomplete;
    if (std::string_view(result.stderr_data).ends_with(sentinel))
      result.stderr_data.resize(result.stderr_data.size() - sentinel.size());
    if (!killed) kill_marked(spec.marker);
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

namespace {

// The engine created the exec but runc found the container's init gone: the command never ran.
bool exec_never_ran(const sdk::ExecResult& r) {
  for (const std::string_view says : {"OCI runtime exec failed", "cannot exec in a stopped state"})
    if (r.exit_code == 126 && (r.stdout_data.find(says) != std::string::npos ||
                               r.stderr_data.find(says) != std::string::npos))
      return true;
  return false;
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

sdk::ExecResult ContainerBackend::run_exec(const ExecSpec& spec) {
  auto result = run_exec_once(spec);
  if (!spec.recover || !exec_never_ran(result) || !wait_stopped(std::chrono::seconds(5)))
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
  auto again = run_exec_once(spec);
  again.notices.insert(again.notices.begin(), notices.begin(), notices.end());
  return again;
}

void ContainerBackend::explain_kill(sdk::ExecResult& result) {
  const auto looked = inspect_state();
  if (!looked) {
    // The engine stopped answering as the command died: it went away (stopped or restarted) and
    // took the command with it. The exit status is the engine client's (a docker CLI child
    // exits 137 when its engine goes), not the command's.
    if (result.error.empty()) result.error = kLostDocker;
    return;
  }
  auto state = *looked;
  std::optional<long> oom_kills;
  if (state.exists && state.running) {
    // Whether the kernel's OOM killer acted since we last looked: the engine's OOMKilled flag
    // says nothing while the container runs, so read the memory cgroup's own count.
    auto r = run_exec_once(probe_spec<ExecSpec>(
        "cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control "
        "2>/dev/null; true",
        std::chrono::seconds(10)));
    if (r.error.empty() && r.exit_code == 0) {
      oom_kills = parse_oom_kills(r.stdout_data);
    } else if (wait_stopped(std::chrono::seconds(5))) {
      state = inspect_state().value_or(ContainerState{});  // it was dying when we looked
    }
  }
  if (state.exists && !state.running) {
    result.notices.push_back(
        "the container stopped during the command (its PID 1 exited with code " +
        std::to_string(state.exit_code) + ", OOMKilled=" + (state.oom_killed ? "true" : "false") +
        "): something killed it from inside; " +
        (attached() ? "execmcp does not manage attached containers: start it again"
                    : "the next call starts it again"));
    return;
  }
  if (result.exit_code != 137 || !oom_kills) return;
  const long before = lifecycle_.exchange_oom_kills(*oom_kills);
  if (*oom_kills > before) {
    result.notices.push_back(
        "the command was killed by the kernel's out-of-memory killer (exit 137): the container "
        "reached its memory limit" +
        (settings_.memory_bytes
             ? " (" + std::to_string(*settings_.memory_bytes / (1024 * 1024)) + " MiB)"
             : std::string()));
  } else {
    result.notices.push_back(
        "the command was killed with SIGKILL (exit 137), not by the out-of-memory killer");
  }
}

std::string ContainerBackend::resolve_work_dir(const std::string& requested,
                                               std::string& path) const {
  const auto resolved = sdk::resolve_inside(requested, init_.cwd, init_.paths, sdk::Access::Read);
  if (!resolved.error.empty()) return "work_dir refused: " + resolved.error;
  // Grants are mounted at their host paths, so the host can tell; runc would silently create
  // a missing working directory instead of failing.
  std::error_code ec;
  if (!std::filesystem::is_directory(resolved.path, ec))
    return "work_dir refused: '" + requested + "' (" + resolved.path +
           ") does not exist or is not a directory";
  path = resolved.path;
  return {};
}

std::string ContainerBackend::prepared_command(const std::string& request_command) const {
  std::string command = request_command;
  if (!settings_.command_prefix.empty()) command = settings_.command_prefix + " " + command;
  if (!settings_.venv_path.empty()) {
    const std::string venv = settings_.venv_path.front() == '/'
                                 ? settings_.venv_path
                                 : init_.cwd + "/" + settings_.venv_path;
    command = "export PATH=" + shell_quote(venv + "/bin") +
              ":\"$PATH\" VIRTUAL_ENV=" + shell_quote(venv) + "\n" + command;
  }
  return command;
}

sdk::ExecResult ContainerBackend::execute(const sdk::ExecRequest& request) {
  try {
    std::string work_dir;
    if (auto err = resolve_work_dir(request.work_dir, work_dir); !err.empty()) {
      sdk::ExecResult result;
      result.error = err;
      return result;
    }
    const std::string command = prepared_command(request.command);
    ExecSpec spec;
    spec.marker = random_marker();
    spec.cmd = {"/bin/sh", "-c",       scripts::kCallWrapper, "execmcp", settings_.shell,
                command,   spec.marker};
    spec.shell = settings_.shell;
    spec.command = command;
    spec.work_dir = work_dir;
    spec.env = call_env(request.env);
    spec.timeout = request.timeout;
    spec.output_cap = request.output_cap;
    spec.sink = request.sink;
    spec.cancel = request.cancel;
    auto result = run(spec);
    if (auto notice = lifecycle_.take_pending_notice(); !notice.empty())
      result.notices.insert(result.notices.begin(), std::move(notice));
    // A command killed by a signal: by whom (the OOM killer, or the container's PID 1 dying).
    if (!result.timed_out && !result.cancelled && result.error.empty() &&
        (result.exit_code == 137 || result.exit_code == 143 || result.exit_code < 0))
      explain_kill(result);
    return result;
  } catch (const std::exception& e) {
    sdk::ExecResult result;
    result.error = backend_name_ + ": " + e.what();
    return result;
  }
}

ContainerBackend::ExecSpec ContainerBackend::file_exec(std::vector<std::string> cmd,
                                                       const sdk::CancelToken* cancel) const {
  ExecSpec spec;
  spec.cancel = cancel;
  spec.marker = random_marker();
  // `cmd` is {shell, "-c", script, $0, $1...}; on the runner the arguments become `set --`.
  spec.shell = cmd.at(0);
  spec.command = "set --";
  for (std::size_t i = 4; i < cmd.size(); ++i) spec.command += " " + shell_quote(cmd[i]);
  spec.command += "\n" + cmd.at(2);
  spec.cmd = std::move(cmd);
  spec.work_dir = init_.cwd;
  spec.env = {std::string(kMarkerVar) + "=" + spec.marker};
  return spec;
}

namespace {

// Prologue of the file tools' scripts: anything but a regular file (a directory, FIFO, socket or
// device, also behind a symlink) is refused before it is opened, since opening a FIFO blocks
// until a peer comes. Should one be swapped in after the check, the exec's timeout and the call's
// cancel still end it.
constexpr const char* kRefuseSpecialFile =
    "if [ -e \"$1\" ] && [ ! -f \"$1\" ]; then "
    "if [ -d \"$1\" ]; then echo \"'$1' is a directory\" >&2; exit 21; fi; "
    "echo \"'$1' is not a regular file (a FIFO, socket or device)\" >&2; exit 22; fi; ";

constexpr const char* kCancelledBeforeStart = "the call was cancelled before it started";

bool cancelled_before_start(const sdk::CancelToken* cancel) {
  return cancel != nullptr && cancel->cancel_requested();
}

// Why a file exec that ran failed: its stderr without the trailing newlines, else its exit code.
std::string file_exec_failure(const char* verb, const std::string& path, const sdk::ExecResult& r) {
  std::string msg = r.stderr_data;
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  return std::string("cannot ") + verb + " '" + path +
         "': " + (msg.empty() ? "exit code " + std::to_string(r.exit_code) : msg);
}

}  // namespace

sdk::FileReadResult ContainerBackend::read_file(const sdk::FileReadRequest& request) {
  sdk::FileReadResult out;
  if (cancelled_before_start(request.cancel)) {
    out.error = kCancelledBeforeStart;
    return out;
  }
  try {
    // Read one byte more than allowed to learn whether the file is larger.
    const std::size_t max_bytes = std::min<std::size_t>(request.max_bytes, std::size_t{1} << 40);
    const std::string limit = std::to_string(max_bytes + 1);
    ExecSpec spec = file_exec(
        {"/bin/sh", "-c", std::string(kRefuseSpecialFile) + "exec head -c " + limit + " -- \"$1\"",
         "execmcp-read", request.path},
        request.cancel);
    spec.timeout = std::chrono::seconds(60);
    spec.output_cap = max_bytes + 1;
    auto r = run(spec);
    if (!r.error.empty()) {
      out.error = r.error;
    } else if (r.exit_code != 0) {
      out.error = file_exec_failure("read", request.path, r);
    } else {
      out.data = std::move(r.stdout_data);
      if (out.data.size() > max_bytes) {
        out.data.resize(max_bytes);
        out.truncated = true;
      }
    }
  } catch (const std::exception& e) {
    out.error = backend_name_ + ": " + e.what();
  }
  return out;
}

std::string ContainerBackend::protected_refusal(const std::string& requested) const {
  const std::string path =
      (std::filesystem::path(init_.cwd) / requested).lexically_normal().string();
  for (const auto& g : init_.paths)
    if (g.writable)
      for (const auto& p : g.protected_paths)
        if (path == p || path_within(path, p))
          return "cannot write '" + requested + "': '" + path + "' is protected (" + p +
                 "): read-only for this agent";
  return {};
}

sdk::FileWriteResult ContainerBackend::write_file(const sdk::FileWriteRequest& request) {
  sdk::FileWriteResult out;
  if (cancelled_before_start(request.cancel)) {
    out.error = kCancelledBeforeStart;  // before the exec: `cat >` would truncate the file at once
    return out;
  }
  try {
    // The read-only mounts enforce protected paths whatever the path; named here first, so the
    // agent reads why rather than the file system's "Read-only file system".
    if (auto refusal = protected_refusal(request.path); !refusal.empty()) {
      out.error = refusal;
      return out;
    }
    // No input can reach the container this way (a proxy that refuses upgrades): the bytes go in
    // arguments instead.
    if (check_input_path() == kNoUpgrade) return write_file_in_pieces(request);
    // Bytes go through the exec's stdin, so any byte value survives; the container's mounts and
    // user decide whether the write is allowed (a read-only context path fails with EROFS).
    ExecSpec spec = file_exec({"/bin/sh", "-c",
                               std::string(kRefuseSpecialFile) +
                                   "d=$(dirname -- \"$1\") && mkdir -p -- \"$d\" && cat > \"$1\"",
                               "execmcp-write", request.path},
                              request.cancel);
    spec.stdin_data = request.data;
    spec.timeout = std::chrono::seconds(120);
    spec.output_cap = 64 * 1024;
    auto r = run(spec);
    if (!r.error.empty()) {
      out.error = r.error;
    } else if (r.exit_code != 0) {
      out.error = file_exec_failure("write", request.path, r);
    } else {
      out.bytes_written = request.data.size();
    }
  } catch (const std::exception& e) {
    out.error = backend_name_ + ": " + e.what();
  }
  return out;
}

sdk::FileWriteResult ContainerBackend::write_file_in_pieces(const sdk::FileWriteRequest& request) {
  // Each piece is appended to a scratch file beside the target; the last copies it over the
  // target in place (as `cat >` does: the file keeps its inode and mode) and removes it. 48 KiB is
  // 64 KiB of base64, well under the 128 KiB one argument may hold.
  constexpr std::size_t kPiece = 48 * 1024;
  const std::string scratch = ".execmcp-write-" + random_marker();
  sdk::FileWriteResult out;
  std::size_t at = 0;
  bool first = true;
  for (;;) {
    const std::size_t n = std::min(kPiece, request.data.size() - at);
    const std::string piece = base64_encode(std::string_view(request.data).substr(at, n));
    at += n;
    const bool last = at >= request.data.size();
    std::string script = kRefuseSpecialFile;
    script += "t=\"$1$2\"; ";
    if (first) script += "d=$(dirname -- \"$1\") && mkdir -p -- \"$d\" && : > \"$t\" || exit; ";
    script += "printf %s \"$3\" | base64 -d >> \"$t\" || { rm -f -- \"$t\"; exit 1; }; ";
    if (last) script += "cat -- \"$t\" > \"$1\"; rc=$?; rm -f -- \"$t\"; exit $rc";
    ExecSpec spec = file_exec(
        {"/bin/sh", "-c", script, "execmcp-write", request.path, scratch, piece}, request.cancel);
    spec.timeout = std::chrono::seconds(120);
    spec.output_cap = 64 * 1024;
    auto r = run_exec(spec);
    if (!r.error.empty() || r.exit_code != 0) {
      out.error = !r.error.empty() ? r.error : file_exec_failure("write", request.path, r);
      if (!first || !last) {  // leave no scratch file behind
        ExecSpec rm = file_exec(
            {"/bin/sh", "-c", "rm -f -- \"$1$2\"", "execmcp-write", request.path, scratch},
            nullptr);
        rm.timeout = std::chrono::seconds(30);
        run_exec(rm);
      }
      return out;
    }
    if (last) break;
    first = false;
  }
  out.bytes_written = request.data.size();
  return out;
}

void ContainerBackend::stop() noexcept {
  stop_generation_.fetch_add(1);
  end_all_background(std::chrono::milliseconds(0));
}

void ContainerBackend::cleanup() noexcept {
  try {
    stop();
    {
      // The runner ends with its channel (and its commands with it) before the container goes.
      std::lock_guard lock(runner_mutex_);
      runner_.reset();
    }
    if (attached()) {
      // The container stays as it was: only what we put there goes (our calls died with the
      // runner's channel; stop() ended the rest).
      std::string dir;
      {
        std::lock_guard lock(runner_mutex_);
        if (runner_path_ != kRunnerPath) dir = runner_path_.substr(0, runner_path_.rfind('/'));
      }
      if (!dir.empty() && engine_->connect().ok()) {
        ExecSpec rm;
        rm.cmd = {"/bin/sh", "-c", "rm -rf -- \"$1\"", "execmcp-cleanup", dir};
        rm.work_dir = "/";
        rm.timeout = std::chrono::seconds(15);
        rm.output_cap = 4096;
        rm.marker = random_marker();
        rm.recover = false;
        run_exec_once(rm);
      }
      return;
    }
    lifecycle_.remove_container();
  } catch (...) {
    // cleanup never throws; the host may call it from a signal path.
  }
}

sdk::BackendTraits ContainerBackend::traits() const {
  sdk::BackendTraits t;
  std::error_code ec;
  // Mounted (or visible) only when it exists (see ContainerLifecycle::checked_spec()).
  t.tools_dir = !init_.tools_dir.empty() && std::filesystem::exists(init_.tools_dir, ec)
                    ? container_tools_dir(init_)
                    : "";
  // An attached container mounts nothing of ours: the tools are visible only inside a grant.
  if (attached() && t.tools_dir == "/tools") t.tools_dir.clear();
  t.python = "python3";
  t.isolated = true;
  return t;
}

// ---- background processes ------------------------------------------------------------------
// In agent mode a background process is a call on the runner's channel that keeps no output and
// has no deadline; its frames reach the host's observer on the channel's I/O thread (no thread
// of ours per process). In exec mode (or when the runner cannot start) it is one exec, read by a
// jthread. Either way it carries its own EXECMCP_CALL marker, so the sweep can end it from outside.

namespace {

constexpr const char* kAgentLost = "the container's agent ended; the process was killed with it";
// How long a started process may take to report its pid before the start is given up.
constexpr auto kPidTimeout = std::chrono::seconds(30);
// How long a kill request may go unanswered (past its grace) before the sweep ends it.
constexpr auto kBackgroundKillGrace = std::chrono::seconds(15);

// An exit status as the shell saw it: 128+N for a signal when we killed it.
sdk::BackgroundExit exit_of(int code, bool killed) {
  sdk::BackgroundExit exit;
  exit.killed = killed;
  if (killed && code > 128 && code < 128 + 65) {
    exit.signal = code - 128;
  } else {
    exit.exit_code = code;
  }
  return exit;
}

}  // namespace

struct ContainerBackend::Background {
  std::uint64_t id = 0;
  sdk::BackgroundObserver* observer = nullptr;
  std::string marker;
  std::string work_dir;
  std::weak_ptr<RunnerChannel> channel;  // agent mode: dies with the runner, ending the process
  std::shared_ptr<RunnerCall> call;
  std::atomic<long> pid{0};
  std::atomic<bool> terminating{false};
  std::mutex mutex;
  std::condition_variable cv;
  bool ended = false;       // on_exit() returned (or the start failed and none comes)
  std::string start_error;  // the runner ended the call before its shell existed
  bool via_exec = false;    // exec mode: set before its thread starts
  std::jthread thread;      // exec mode: reads the exec; last member, joined first

  // Tells the host (unless the process never started) and marks the end, exactly once.
  void finish(const sdk::BackgroundExit& exit, const std::string& never_started) noexcept {
    if (pid.load() != 0 || via_exec) observer->on_exit(exit);
    std::lock_guard lock(mutex);
    if (pid.load() == 0 && !via_exec) start_error = never_started;
    ended = true;
    cv.notify_all();
  }
  bool wait_ended(std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex);
    return cv.wait_for(lock, wait, [&] { return ended; });
  }
};

// Turns a runner call's frames into the host observer's calls.
class ContainerBackend::BackgroundRelay final : public RunnerCallObserver {
 public:
  explicit BackgroundRelay(Background* bg) : bg_(bg) {}
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
  Background* bg_;  // outlives every call: erased only once `ended`
};

void* ContainerBackend::query_interface(std::string_view id) noexcept {
  if (id == sdk::kBackgroundProcessesId)
    return static_cast<void*>(static_cast<sdk::BackgroundProcesses*>(this));
  return nullptr;
}

sdk::BackgroundStarted ContainerBackend::start_background(
    const sdk::BackgroundRequest& request, sdk::BackgroundObserver* observer) noexcept {
  sdk::BackgroundStarted started;
  try {
    if (observer == nullptr) {
      started.error = "no observer for the background process";
      return started;
    }
    if (auto err = resolve_work_dir(request.work_dir, started.work_dir); !err.empty()) {
      started.error = err;
      return started;
    }
    auto bg = std::make_shared<Background>();
    bg->observer = observer;
    bg->marker = random_marker();
    bg->work_dir = started.work_dir;
    std::vector<std::string> env = call_env(request.env);
    {
      std::lock_guard lock(background_mutex_);
      bg->id = next_background_id_++;
      // Finished ones are forgotten here: their on_exit() has returned.
      std::erase_if(background_, [](const auto& entry) {
        std::lock_guard l(entry.second->mutex);
        return entry.second->ended;
      });
      background_.emplace(bg->id, bg);
    }
    auto forget = [&](std::string error) {
      std::lock_guard lock(background_mutex_);
      background_.erase(bg->id);
      started.error = std::move(error);
      started.id = 0;
      return started;
    };

    std::shared_ptr<RunnerChannel> channel;
    if (settings_.exec_mode == ExecMode::Agent) {
      std::vector<std::string> notices;
      std::string why;
      bool runner_fault = true;
      channel = runner_channel(notices, why, runner_fault);
      if (!channel && !runner_fault) return forget(why);
      if (!channel)
        log(sdk::LogLevel::Warn,
            "background process runs with one docker exec: the in-container "
            "agent could not start (" +
                log_text(why) + ")");
    }
    if (!channel) {
      if (auto err = start_background_exec(bg, prepared_command(request.command), env);
          !err.empty())
        return forget(err);
      started.id = bg->id;
      return started;
    }
    supervision::runner::RunSpec run;
    run.output_cap = 0;
    run.retain_output = false;
    run.work_dir = started.work_dir;
    run.shell = settings_.shell;
    run.command = prepared_command(request.command);
    run.env = env;
    run.env.push_back(std::string(kMarkerVar) + "=" + bg->marker);
    std::string error;
    auto call = channel->start(run, nullptr, error, std::make_shared<BackgroundRelay>(bg.get()));
    if (!call) return forget(error);
    bg->channel = channel;
    bg->call = call;
    if (call->wait_pid(kPidTimeout) == 0) {
      if (call->claim_end()) {  // never reported running: ended here, quietly
        channel->forget(*call);
        channel->kill(*call);
        kill_marked(bg->marker);
        return forget("the background process did not report that it runs within " +
                      std::to_string(kPidTimeout.count()) + " s");
      }
      bg->wait_ended(std::chrono::hours(1));
      if (bg->pid.load() == 0) {
        std::lock_guard lock(bg->mutex);
        return forget(bg->start_error.empty() ? "the background process did not start"
                                              : bg->start_error);
      }
    }
    started.id = bg->id;
    started.pid = bg->pid.load() != 0 ? bg->pid.load() : call->wait_pid(std::chrono::seconds(0));
    return started;
  } catch (const std::exception& e) {
    started.id = 0;
    started.error = backend_name_ + ": " + e.what();
    return started;
  }
}

std::string ContainerBackend::start_background_exec(const std::shared_ptr<Background>& bg,
                                                    const std::string& command,
                                                    const std::vector<std::string>& env) {
  if (auto err = engine_->connect(); !err.ok())
    return describe_failure(err, "reaching the engine at " + engine_->describe());
  ExecOptions options;
  options.cmd = {"/bin/sh", "-c",      scripts::kCallWrapper, "execmcp", settings_.shell,
                 command,   bg->marker};
  options.env = env;
  options.user = user();
  options.work_dir = bg->work_dir;
  std::vector<std::string> notices;
  std::string error;
  std::shared_ptr<ExecSession> session = start_exec(options, true, notices, error);
  if (!session) return error;
  bg->via_exec = true;
  Background* raw = bg.get();  // the thread is joined before *raw goes
  bg->thread = std::jthread([raw, session](std::stop_token stop) {
    struct Forward final : ExecStreamDecoder::Handler {
      Background* bg = nullptr;
      std::string daemon_error;
      void on_payload(ExecStreamDecoder::Stream stream, std::string_view data) override {
        if (stream == ExecStreamDecoder::Stream::Stdout)
          bg->observer->on_output(sdk::StreamKind::Stdout, data);
        else if (stream == ExecStreamDecoder::Stream::Stderr)
          bg->observer->on_output(sdk::StreamKind::Stderr, data);
        else if (stream == ExecStreamDecoder::Stream::SystemError && daemon_error.size() < 1024)
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

void ContainerBackend::term_marked(const std::string& marker, std::chrono::milliseconds grace) {
  // One TERM to each marked process, then passes until none is left or the grace is over.
  const long passes = std::max<long>(1, static_cast<long>(grace.count() / 100));
  ExecSpec spec;
  spec.cmd = {"/bin/sh",      "-c",   scripts::kTermMarked,
              "execmcp-term", marker, std::to_string(passes)};
  spec.work_dir = "/";
  spec.timeout = grace + std::chrono::seconds(15);
  spec.output_cap = 4096;
  spec.marker = random_marker();
  spec.recover = false;
  run_exec_once(spec);
}

void ContainerBackend::terminate_background(std::uint64_t id,
                                            std::chrono::milliseconds grace) noexcept {
  try {
    std::shared_ptr<Background> bg;
    {
      std::lock_guard lock(background_mutex_);
      const auto it = background_.find(id);
      if (it == background_.end()) return;
      bg = it->second;
    }
    if (grace.count() < 0) grace = std::chrono::milliseconds(0);
    if (!bg->wait_ended(std::chrono::milliseconds(0))) {
      bg->terminating = true;
      if (auto channel = bg->channel.lock(); channel && bg->call) {
        channel->kill(*bg->call, grace);
        if (!bg->wait_ended(grace + kBackgroundKillGrace)) {
          // The runner did not answer: end the process from outside, and tell the host here.
          channel->forget(*bg->call);
          kill_marked(bg->marker);
          if (bg->call->claim_end()) {
            sdk::BackgroundExit exit;
            exit.killed = true;
            exit.signal = SIGKILL;
            bg->finish(exit, {});
          }
        }
      } else if (bg->via_exec) {
        if (grace.count() > 0) term_marked(bg->marker, grace);
        kill_marked(bg->marker);
      }
      // The end is on its way (the channel's loss or the exec's end): wait for its on_exit().
      bg->wait_ended(std::chrono::minutes(2));
    }
    std::lock_guard lock(background_mutex_);
    background_.erase(id);
  } catch (...) {
    // never throws
  }
}

void ContainerBackend::end_all_background(std::chrono::milliseconds grace) noexcept {
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard lock(background_mutex_);
    for (const auto& [id, bg] : background_) ids.push_back(id);
  }
  // One at a time: each terminate is a kill frame (agent mode) or a sweep exec (exec mode).
  for (auto id : ids) terminate_background(id, grace);
}

}  // namespace execmcp::plugins::docker_common
