// The container engine behind a docker-compatible CLI binary (docker, podman): each Engine call
// is one CLI run, each exec one `docker exec` child, and the runner's channel one long-lived
// `docker exec -i` child whose stdin and stdout are the channel.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "docker_cli/child_process.hpp"
#include "docker_cli/cli_errors.hpp"
#include "docker_common/engine/engine.hpp"
#include "docker_common/lifecycle/container_create_args.hpp"
#include "docker_common/settings/docker_settings.hpp"

namespace execmcp::plugins::docker_cli {

// The first line every exec'd command writes on stderr before it runs: the CLI's own failures
// come without it, so the exit status after it is the command's (docker exits 1 for both).
inline constexpr const char* kExecStarted = "execmcp-exec-started";

// The environment a CLI child runs with, made from the settings and the server's own
// environment `server_env` (only PATH, HOME, DOCKER_HOST and DOCKER_CONFIG are read from it).
std::map<std::string, std::string> cli_environment(
    const docker_common::DockerSettings& settings,
    const std::map<std::string, std::string>& server_env);

// PATH, HOME, DOCKER_HOST and DOCKER_CONFIG of this process.
std::map<std::string, std::string> this_process_environment();

// One `exec` as the CLI child gets it: argv after the binary, and the variables added to the
// child's environment. An exec variable's value never goes in argv (every user on the host sees
// argv in `ps`): argv says `--env=NAME` and NAME=value is in the child's environment, from where
// the CLI copies it. A name the CLI itself reads (its own PATH, HOME, DOCKER_*, ...: see
// cli_reads_variable()) travels as EXECMCP_ENV_<n> and is renamed in the container before the
// command starts.
struct ExecCall {
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
};

// Whether a variable of this name in the CLI child's environment could change what the CLI (or
// the ssh it runs) does: `cli_env` is the child's own environment.
bool cli_reads_variable(const std::string& name, const std::map<std::string, std::string>& cli_env);

// `options` as an exec call, with the start line on stderr (kExecStarted) before `options.cmd`
// runs (with `sentinel`).
ExecCall exec_call(const std::string& name, const docker_common::ExecOptions& options,
                   bool sentinel, const std::map<std::string, std::string>& cli_env);

// exec_call()'s argv for a CLI child with an empty environment of its own.
std::vector<std::string> exec_args(const std::string& name,
                                   const docker_common::ExecOptions& options, bool sentinel);

class DockerCliEngine final : public docker_common::Engine {
 public:
  explicit DockerCliEngine(const docker_common::DockerSettings& settings);
  // For tests: `server_env` stands for this process's environment.
  DockerCliEngine(const docker_common::DockerSettings& settings,
                  const std::map<std::string, std::string>& server_env);

  [[nodiscard]] std::string describe() const override { return target_.describe; }
  [[nodiscard]] bool sees_host_files() const override { return local_; }

  docker_common::EngineError connect() override;
  docker_common::EngineError runtimes(docker_common::RuntimeList& out) override;
  docker_common::EngineError check_image(const std::string& image) override;
  docker_common::EngineError list(const std::map<std::string, std::string>& labels,
                                  std::vector<docker_common::ContainerInfo>& out) override;
  docker_common::EngineError inspect(const std::string& name,
                                     docker_common::ContainerInfo& out) override;
  docker_common::EngineError image_info(const std::string& image,
                                        docker_common::ImageInfo& out) override;
  docker_common::EngineError create_install(const docker_common::InstallSpec& spec) override;
  docker_common::EngineError commit(const std::string& container,
                                    const docker_common::CommitOptions& options,
                                    std::string& image_id) override;
  docker_common::EngineError create(const docker_common::ContainerSpec& spec) override;
  docker_common::EngineError start(const std::string& name) override;
  docker_common::EngineError stop(const std::string& name, std::chrono::seconds timeout) override;
  docker_common::EngineError remove(const std::string& name_or_id) override;
  bool wait_stopped(const std::string& name, std::chrono::milliseconds timeout) override;
  docker_common::EngineError create_network(const docker_common::NetworkSpec& spec) override;
  docker_common::EngineError inspect_network(const std::string& name,
                                             docker_common::NetworkInfo& out) override;
  docker_common::EngineError list_networks(const std::map<std::string, std::string>& labels,
                                           std::vector<docker_common::NetworkInfo>& out) override;
  docker_common::EngineError connect_network(const std::string& network,
                                             const std::string& container,
                                             const std::string& alias) override;
  docker_common::EngineError remove_network(const std::string& name_or_id) override;
  docker_common::EngineError copy_into(const std::string& name, const std::string& dir,
                                       const std::string& tar) override;
  docker_common::EngineError copy_from(const std::string& name, const std::string& path,
                                       std::string& tar) override;
  docker_common::EngineError logs(const std::string& name, std::string& text) override;
  std::unique_ptr<docker_common::LogStream> follow_logs(const std::string& name,
                                                        const std::string& since,
                                                        docker_common::EngineError& error) override;
  // Docker's CLI only: Podman names its events otherwise ("died"), so a Podman backend polls.
  std::unique_ptr<docker_common::EventStream> follow_events(
      const std::string& name, const std::string& since,
      docker_common::EngineError& error) override;
  std::unique_ptr<docker_common::ExecSession> exec(const std::string& name,
                                                   const docker_common::ExecOptions& options,
                                                   docker_common::EngineError& error) override;
  std::optional<runner_client::ChannelEnds> open_channel(
      const std::string& name, const docker_common::ExecOptions& options,
      docker_common::EngineError& error) override;
  [[nodiscard]] bool input_always_arrives() const override { return true; }

  [[nodiscard]] docker_common::CliFlavor flavor() const;
  [[nodiscard]] const ChildLauncher& launcher() const { return launcher_; }

 private:
  // The global flags (docker_flags, --context), then `args`.
  std::vector<std::string> argv(std::vector<std::string> args) const;
  CliRun run(std::vector<std::string> args, std::chrono::milliseconds timeout,
             const std::string* input = nullptr) const;
  // "" (ok) or the classified failure of `r`.
  docker_common::EngineError check(const CliRun& r) const;
  // An exec whose command has started: the CLI, and what was read of its streams on the way.
  struct StartedExec {
    std::unique_ptr<Child> child;
    std::string early_out;  // the command's stdout that came before (or instead of) the start line
    // Set when the command was known to run before its start line came (early_out reached its
    // bound): early_err holds the stderr read so far, and the start line is still to be taken
    // off the stream.
    bool start_line_pending = false;
    std::string early_err;
  };
  // Starts `exec` with the start line and waits for it; no child with `error`, or a session that
  // replays what the runtime said when it could not start the command (exit 126/127).
  StartedExec start_exec(const std::string& name, const docker_common::ExecOptions& options,
                         bool channel, docker_common::EngineError& error,
                         std::unique_ptr<docker_common::ExecSession>& replay);

  docker_common::DockerSettings settings_;
  ChildLauncher launcher_;
  // What identifies the engine this CLI reaches (binary, target, environment).
  [[nodiscard]] std::string target_key() const;
  CliTarget target_;
  std::vector<std::string> global_args_;
  bool local_ = true;
  mutable std::mutex mutex_;
  bool connected_ = false;
  docker_common::CliFlavor flavor_ = docker_common::CliFlavor::kDocker;
};

}  // namespace execmcp::plugins::docker_cli
