// The container backend's facade: the ExecutorBackend calls turned into the lifecycle's, the
// command path's and the files' work, and the background processes' table.
#include "docker_common/container_backend.hpp"

#include <filesystem>

#include "docker_common/commands/background_calls.hpp"
#include "docker_common/commands/container_work_dir.hpp"
#include "docker_common/commands/runner_command_path.hpp"
#include "docker_common/log_text.hpp"
#include "supervision/command_output.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using supervision::shell_quote;

}  // namespace

ContainerBackend::ContainerBackend(const sdk::BackendInit& init, std::string backend_name,
                                   DockerSettings settings, std::unique_ptr<Engine> engine)
    : engine_(std::move(engine)),
      lifecycle_(init, std::move(backend_name), std::move(settings), *engine_),
      probe_(lifecycle_),
      exec_(lifecycle_, probe_),
      runner_site_(lifecycle_.settings().exec_mode == ExecMode::Agent
                       ? std::make_unique<ExecRunnerSite>(lifecycle_, exec_, probe_)
                       : nullptr),
      runner_(runner_site_ ? std::make_unique<RunnerCommandPath>(*runner_site_, &exec_, probe_)
                           : nullptr),
      commands_(runner_ ? *runner_ : static_cast<CommandPath&>(exec_)),
      files_(lifecycle_, commands_, exec_, dynamic_cast<RunnerCommandPath*>(runner_.get())),
      kill_explainer_(lifecycle_, probe_, &exec_.events()) {
  lifecycle_.parts().add(kill_explainer_);
}

ContainerBackend::~ContainerBackend() {
  end_all_background(std::chrono::milliseconds(0));  // the host calls cleanup(); just in case
}

std::string ContainerBackend::start() {
  auto err = lifecycle_.start();
  if (!err.empty()) return err;
  try {
    return lifecycle_.parts().after_start(probe_);
  } catch (const std::exception& e) {
    return lifecycle_.backend_name() + " start failed: " + e.what();
  }
}

void ContainerBackend::stop() noexcept {
  commands_.stop();
  end_all_background(std::chrono::milliseconds(0));
  lifecycle_.parts().on_backend_stop();
}

void ContainerBackend::cleanup() noexcept {
  stop();
  // The runner ends with its channel (and its commands with it) before the container goes.
  commands_.close();
  lifecycle_.remove_container();
}

std::string ContainerBackend::resolve_work_dir(const std::string& requested,
                                               std::string& path) const {
  // In the commands' view, never following a symlink on the host out of the grants: what lies
  // outside them changes neither the answer nor its message (container_work_dir.hpp). Checked
  // here because runc would silently create a missing working directory instead of failing.
  ContainerWorkDir resolved = resolve_container_work_dir(*lifecycle_.init(), requested);
  path = std::move(resolved.path);
  return std::move(resolved.error);
}

std::string ContainerBackend::prepared_command(const std::string& request_command) const {
  const auto& settings = lifecycle_.settings();
  std::string command = request_command;
  if (!settings.command_prefix.empty()) command = settings.command_prefix + " " + command;
  if (!settings.venv_path.empty()) {
    const std::string venv = settings.venv_path.front() == '/'
                                 ? settings.venv_path
                                 : container_cwd(*lifecycle_.init()) + "/" + settings.venv_path;
    command = "export PATH=" + shell_quote(venv + "/bin") +
              ":\"$PATH\" VIRTUAL_ENV=" + shell_quote(venv) + "\n" + command;
  }
  return command;
}

sdk::ExecResult ContainerBackend::execute(const sdk::ExecRequest& request) {
  try {
    ContainerCommand command;
    if (auto err = resolve_work_dir(request.work_dir, command.work_dir); !err.empty()) {
      sdk::ExecResult result;
      result.error = err;
      return result;
    }
    command.agent_command = true;
    command.shell = lifecycle_.settings().shell;
    command.script = prepared_command(request.command);
    command.marker = random_marker();
    command.env = lifecycle_.call_env(request.env);
    command.timeout = request.timeout;
    command.output_cap = request.output_cap;
    command.sink = request.sink;
    command.cancel = request.cancel;
    const auto marks = lifecycle_.parts().begin_calls();
    auto result = commands_.run(command);
    // In the commands' view; with the workspace at its host path the host says it (as before).
    if (!lifecycle_.init()->sandbox_cwd.empty() && result.error.empty())
      result.work_dir = command.work_dir;
    // The parts' notices: what the proxy refused meanwhile, a preinstall that failed, who killed
    // the command.
    lifecycle_.parts().decorate_results(marks, result);
    return result;
  } catch (const std::exception& e) {
    sdk::ExecResult result;
    result.error = lifecycle_.backend_name() + ": " + e.what();
    return result;
  }
}

sdk::FileReadResult ContainerBackend::read_file(const sdk::FileReadRequest& request) {
  return files_.read_file(request);
}

sdk::FileWriteResult ContainerBackend::write_file(const sdk::FileWriteRequest& request) {
  return files_.write_file(request);
}

sdk::BackendTraits ContainerBackend::traits() const {
  const auto snapshot = lifecycle_.init();
  const auto& init = *snapshot;
  sdk::BackendTraits t;
  std::error_code ec;
  // Mounted (or visible) only when it exists (see ContainerLifecycle::checked_spec()).
  t.tools_dir = !init.tools_dir.empty() && std::filesystem::exists(init.tools_dir, ec)
                    ? container_tools_dir(init)
                    : "";
  // An attached container mounts nothing of ours: the tools are visible only inside a grant.
  if (lifecycle_.attached() && t.tools_dir == "/tools") t.tools_dir.clear();
  t.python = "python3";
  t.isolated = true;
  return t;
}

void* ContainerBackend::query_interface(std::string_view id) noexcept {
  if (id == sdk::kBackgroundProcessesId)
    return static_cast<void*>(static_cast<sdk::BackgroundProcesses*>(this));
  if (id == sdk::kSandboxControlId)
    return static_cast<void*>(static_cast<sdk::SandboxControl*>(this));
  return lifecycle_.parts().query_interface(id);
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
    started = start_background_on(background_, commands_, observer, started.work_dir,
                                  lifecycle_.settings().shell, prepared_command(request.command),
                                  lifecycle_.call_env(request.env));
  } catch (const std::exception& e) {
    started.id = 0;
    started.error = lifecycle_.backend_name() + ": " + e.what();
  }
  return started;
}

void ContainerBackend::terminate_background(std::uint64_t id,
                                            std::chrono::milliseconds grace) noexcept {
  terminate_background_on(background_, commands_, id, grace);
}

void ContainerBackend::end_all_background(std::chrono::milliseconds grace) noexcept {
  end_all_background_on(background_, commands_, grace);
}

std::string ContainerBackend::suspend() noexcept {
  try {
    if (lifecycle_.attached()) return lifecycle_.not_ours("stop");
    std::lock_guard lock(sandbox_mutex_);
    stop();
    // The runner ends with its channel; the next call opens a new one (after resume()).
    commands_.close();
    return lifecycle_.stop_container(kSuspendStopTimeout);
  } catch (const std::exception& e) {
    return lifecycle_.backend_name() + ": " + e.what();
  }
}

std::string ContainerBackend::resume() noexcept {
  try {
    if (lifecycle_.attached()) return lifecycle_.not_ours("start");
    std::lock_guard lock(sandbox_mutex_);
    // The host tells the user itself: what a recovery would say goes to the log only.
    std::vector<std::string> notices;
    if (auto err = lifecycle_.recover(notices, /*expected=*/true); !err.empty()) return err;
    // exec_mode agent: the runner's hello and one stat frame, no shell in the container.
    if (auto* runner = dynamic_cast<RunnerCommandPath*>(runner_.get()))
      if (auto ready = runner->ready()) {
        lifecycle_.log(sdk::LogLevel::Info, "container " + lifecycle_.name() + " resumed");
        for (const auto& n : notices) lifecycle_.log(sdk::LogLevel::Debug, "resume: " + n);
        return *ready;
      }
    ContainerCommand ready;
    ready.script = "true";
    ready.name = "execmcp-ready";
    ready.work_dir = "/";
    ready.marker = random_marker();
    ready.env = {std::string(kMarkerVar) + "=" + ready.marker};
    ready.timeout = std::chrono::seconds(60);
    ready.output_cap = 4096;
    auto r = commands_.run(ready);
    notices.insert(notices.end(), r.notices.begin(), r.notices.end());
    // Written for a user whose container stopped unexpectedly: only detail for an operator here.
    lifecycle_.log(sdk::LogLevel::Info, "container " + lifecycle_.name() + " resumed");
    for (const auto& n : notices) lifecycle_.log(sdk::LogLevel::Debug, "resume: " + n);
    if (!r.error.empty()) return r.error;
    if (r.exit_code != 0)
      return "the container " + lifecycle_.name() + " started, but `true` in it exited with " +
             std::to_string(r.exit_code);
    return {};
  } catch (const std::exception& e) {
    return lifecycle_.backend_name() + ": " + e.what();
  }
}

std::string ContainerBackend::relocate_workspace(const std::string& host_path) noexcept {
  try {
    std::lock_guard lock(sandbox_mutex_);
    return lifecycle_.relocate_workspace(host_path);
  } catch (const std::exception& e) {
    return lifecycle_.backend_name() + ": " + e.what();
  }
}

}  // namespace execmcp::plugins::docker_common
