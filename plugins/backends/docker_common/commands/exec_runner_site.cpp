// The runner's site in a container on the engine we talk to: the program's delivery (a part of
// the container's lifecycle), the runner started by an exec and its hello, and the container
// brought back when it is gone or stopped. Moved here from RunnerCommandPath (issue 33's
// RunnerSite seam), unchanged. See docs/docker-backend.md.
#include "docker_common/commands/exec_runner_site.hpp"

#include <unistd.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "docker_common/commands/container_scripts.hpp"
#include "docker_common/engine/tar_archive.hpp"
#include "supervision/program_path.hpp"

namespace execmcp::plugins::docker_common {

namespace {

using Kind = EngineError::Kind;
namespace sv = supervision;
namespace rp = supervision::runner;

// How long a starting runner may take to say hello (a cold container on a loaded machine).
constexpr auto kHelloTimeout = std::chrono::seconds(15);

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

}  // namespace

ExecRunnerSite::ExecRunnerSite(ContainerLifecycle& lifecycle, ExecCommandPath& exec,
                               ContainerProbe& probe)
    : lifecycle_(lifecycle),
      exec_(exec),
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

std::string ExecRunnerSite::prepare_spec(ContainerSpec& spec) {
  spec.runner = delivery_;
  spec.runner_source = host_path_;
  return {};
}

EngineError ExecRunnerSite::copy_runner() {
  if (lifecycle_.attached()) return deliver_runner_by_exec();
  std::string bytes;
  if (auto err = read_runner(host_path_, bytes); !err.ok()) return err;
  const std::string tar = single_file_tar("execmcp-runner", bytes, 0555);
  auto err = engine_.copy_into(lifecycle_.name(), kRunnerDir, tar);
  if (err.ok()) copied_for_ = incarnation_.load();
  return err;
}

EngineError ExecRunnerSite::deliver_runner_by_exec() {
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
  {
    std::lock_guard lock(path_mutex_);
    runner_path_ = dir + "/execmcp-runner";
  }
  copied_for_ = incarnation_.load();
  return {};
}

std::shared_ptr<runner_client::RunnerChannel> ExecRunnerSite::open(
    std::vector<std::string>& notices, SiteError& error) {
  std::shared_ptr<runner_client::RunnerChannel> out;
  bool runner_fault = true;
  error = {};
  error.why = open_runner_channel(notices, out, runner_fault);
  if (error.why.empty()) return out;
  error.kind = runner_fault ? SiteError::Kind::kRunner : SiteError::Kind::kPlace;
  return nullptr;
}

std::string ExecRunnerSite::open_runner_channel(std::vector<std::string>& notices,
                                                std::shared_ptr<runner_client::RunnerChannel>& out,
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
    return recover(notices);
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
    options.cmd = {runner_path(), rp::kChannelArg};  // attach mode: where it was delivered
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

std::string ExecRunnerSite::runner_path() const {
  std::lock_guard lock(path_mutex_);
  return runner_path_;
}

std::string ExecRunnerSite::recover(std::vector<std::string>& notices) {
  return lifecycle_.recover(notices);
}

std::function<bool()> ExecRunnerSite::stop_watch() {
  auto check = std::make_shared<StopCheck>(exec_.stop_check());
  return [check] { return check->stopped(); };
}

bool ExecRunnerSite::manager_lost() {
  ContainerInfo info;
  return engine_.inspect(lifecycle_.name(), info).kind == Kind::kUnreachable;
}

void ExecRunnerSite::close() noexcept {
  try {
    std::string dir;
    {
      std::lock_guard lock(path_mutex_);
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
