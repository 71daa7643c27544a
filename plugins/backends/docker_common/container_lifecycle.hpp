// The life of one agent's container over an Engine: create, start, recover, orphans, preinstall,
// attach mode, workspace access, protected paths and credentials. It knows no way of running a
// command in the container; the command paths (command_path.hpp) ask it for the container.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "docker_common/container_spec.hpp"
#include "docker_common/credentials.hpp"
#include "docker_common/docker_settings.hpp"
#include "docker_common/egress_log_follower.hpp"
#include "docker_common/egress_proxy.hpp"
#include "docker_common/engine.hpp"
#include "docker_common/ownership.hpp"
#include "docker_common/preinstall.hpp"
#include "docker_common/workspace_access.hpp"
#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::plugins::docker_common {

// A fresh random hex string (call markers, scratch names).
std::string random_marker();

// Every method may be called from several threads at once.
class ContainerLifecycle {
 public:
  // `backend_name` prefixes unexpected errors ("docker-api: ..."). Throws std::invalid_argument on
  // bad settings (a relative workspace, missing credentials, preinstall files an agent can write).
  ContainerLifecycle(const sdk::BackendInit& init, std::string backend_name,
                     DockerSettings settings, Engine& engine);

  // Makes the container ready: a managed one is created fresh (orphans and a stale one of ours
  // removed first); an attached one is checked (running, mounts, user). "" or why not. In attach
  // mode the caller still proves the user is not root (accept_attached_user()).
  std::string start();
  // The last step of an attached start: `probe` is the output of kAttachedUidProbe run in the
  // container as user(). "" or why the agent must not start (then every call is refused).
  std::string accept_attached_user(const sdk::ExecResult& probe);
  // Brings back a container that is gone or not running (one recovery at a time), with a notice
  // for the call; in attach mode it only looks. "" or an error. `expected`: the caller stopped it
  // (a resume), so the log says so as information, not as a warning.
  std::string recover(std::vector<std::string>& notices, bool expected = false);
  // At cleanup: the container's log saved to log_dir and the container removed (not in attach
  // mode: it stays as it was).
  void remove_container() noexcept;

  // sdk::SandboxControl's part; managed containers only (an attached one says why not).
  // Stops the container and keeps it (SIGKILL after `timeout`): "" or why not.
  std::string stop_container(std::chrono::seconds timeout);
  // The workspace was renamed on the host to `host_path` while the container ran: init() takes
  // the new paths (everything that lay in the old one), and the container, whose bind sources
  // name the old place, is never started again: once it is not running, recover() makes a new
  // one. "" or why not (not an existing directory).
  std::string relocate_workspace(const std::string& host_path);
  // Why an attached container is not ours to `what` ("stop", ...).
  [[nodiscard]] std::string not_ours(const std::string& what) const;

  // "" when the engine answers, else why not.
  std::string connect();
  // True once the container is not running (or gone), false if it still runs after `timeout`.
  bool wait_stopped(std::chrono::milliseconds timeout);
  // The container's state; nullopt when the engine did not answer.
  std::optional<ContainerState> inspect_state();
  // True when the container may stop while an exec into it never ends: gVisor's sandbox, once its
  // PID 1 exits, leaves the engine's exec streams open (runsc 0.0~20221219). Also when the engine
  // would not list its runtimes, so a `runtime` could not be told apart. Commands then look now
  // and then whether the container still runs (StopCheck, exec_command_path.hpp).
  [[nodiscard]] bool execs_outlive_container() const { return runtime_.execs_outlive_container; }
  // The `runtime` is gVisor (known from the engine's runtimes; false when it would not list them).
  [[nodiscard]] const RuntimeProfile& runtime() const { return runtime_; }

  // Who runs the commands ("" until start() chose, in attach mode).
  std::string user();
  // Attach mode (`container: NAME`): the container is not ours to create, restart or remove.
  [[nodiscard]] bool attached() const { return !settings_.container.empty(); }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& backend_name() const { return backend_name_; }
  // What the host gave, with the first grant (the workspace) always there. A snapshot: a
  // relocation (relocate_workspace()) replaces it as a whole, never in place.
  [[nodiscard]] std::shared_ptr<const sdk::BackendInit> init() const {
    std::lock_guard lock(init_mutex_);
    return init_;
  }
  [[nodiscard]] const DockerSettings& settings() const { return settings_; }
  [[nodiscard]] Engine& engine() { return engine_; }
  // `network: egress`: what the agent's proxy refused, followed from start() to a stop or the
  // removal (null otherwise, and when attached).
  [[nodiscard]] EgressLogFollower* egress_log() const { return egress_log_.get(); }

  // How execmcp-runner reaches the container (None: missing, or exec_mode exec) and where it is
  // on this machine.
  [[nodiscard]] RunnerDelivery runner_delivery() const { return runner_delivery_; }
  [[nodiscard]] const std::string& runner_host_path() const { return runner_host_path_; }
  // Counts the containers created under this name: a new one has an empty runner volume.
  [[nodiscard]] std::uint64_t incarnation() const { return incarnation_.load(); }
  // The memory cgroup's oom_kill count at the last look, replaced by `now` (a new container
  // counts from zero).
  long exchange_oom_kills(long now) { return oom_kills_seen_.exchange(now); }
  // preinstall_on_failure: continue's notice, once, for the next command's result; "" otherwise.
  std::string take_pending_notice();

  // Every call's environment, NAME=value: an attached container's `env`, the credentials'
  // secrets, then the call's own (later wins).
  std::vector<std::string> call_env(
      const std::vector<std::pair<std::string, std::string>>& extra) const;
  void log(sdk::LogLevel level, const std::string& message) const;

 private:
  std::string start_managed();
  std::string start_attached();
  // `runtime`: "" when the engine has it and it can run the container as configured, else why
  // not. Sets runtime_.
  std::string check_runtime();
  std::string recover_container(std::vector<std::string>& notices, sdk::LogLevel level);
  std::string prepare_workspace_access();
  // `preinstall`: sets preinstalled_image_ to the cached image of the lists (building it when it
  // is not there). "" or why the agent must not start (with preinstall_on_failure: continue, a
  // failure leaves the base image and becomes pending_notice_ instead).
  std::string prepare_preinstall();
  // Builds the image of `plan` on `base` as `tag`: "" and its id in `image_id`, or the failure.
  std::string build_preinstall(const ImageInfo& base, const PreinstallPlan& plan,
                               const std::string& key, std::string& image_id);
  // Every execmcp container on the engine; "" or why they could not be listed.
  std::string list_managed(std::vector<ContainerInfo>& out);
  // Removes this host's containers whose owner process is gone, and drops them from `managed`;
  // how many were removed.
  std::size_t remove_orphans(std::vector<ContainerInfo>& managed);
  // The container spec with every mount source checked (see docs/security.md, Container mounts);
  // "" or why the container must not start. `managed`: list_managed()'s answer when the caller
  // has it (null: looked up now).
  std::string checked_spec(ContainerSpec& spec,
                           const std::vector<ContainerInfo>* managed = nullptr);
  // "" when every protected path of a writable grant exists and is the file it was at the first
  // call (recorded then by device and inode), else why the container must not start.
  std::string check_protected_paths();
  // Adds the writable bind sources of every other execmcp container on this engine.
  std::string add_other_agents_roots(std::vector<WritableRoot>& roots,
                                     const std::vector<ContainerInfo>* managed);
  std::string create_and_start(const std::vector<ContainerInfo>* managed = nullptr);
  // The labels of everything made for this agent: its container, its egress proxy and network.
  std::map<std::string, std::string> owner_labels() const;
  // What the labels of this agent's container must say for it to be ours (ownership.hpp).
  Ownership ownership() const;
  // True when `labels` say this host made it and its owner process is gone.
  bool orphaned(const std::map<std::string, std::string>& labels) const;
  // Removes this host's egress networks whose owner process is gone (after their containers).
  void remove_orphan_networks();
  // The `credentials` secrets: read at construction (errors) and again at each start(); given to
  // each command's environment, never to the container's (see docs/security.md).
  std::shared_ptr<const SecretEnv> secret_env() const;
  std::string refresh_credentials();

  mutable std::mutex init_mutex_;  // guards init_ (the pointer; what it points to never changes)
  std::shared_ptr<const sdk::BackendInit> init_;
  sdk::LogSink* log_;
  std::string backend_name_;
  DockerSettings settings_;
  Engine& engine_;
  std::string name_;
  std::string host_name_;
  RunnerDelivery runner_delivery_ = RunnerDelivery::None;
  std::string runner_host_path_;  // execmcp-runner next to this plugin's directory

  std::mutex mutex_;  // guards user_ and access_granted_
  UserChoice user_;   // chosen by prepare_workspace_access()
  bool access_granted_ = false;
  RuntimeProfile runtime_;  // check_runtime(); runc's until then
  std::vector<MountSpec> credential_mounts_;
  std::mutex preinstall_mutex_;     // guards the two below
  std::string preinstalled_image_;  // the image id containers are made from; "": agent_image()
  std::string pending_notice_;      // for the next command's result (preinstall_on_failure)
  mutable std::mutex secrets_mutex_;
  std::shared_ptr<const SecretEnv> secret_env_ = std::make_shared<const SecretEnv>();
  std::mutex recover_mutex_;    // one container recovery at a time
  std::mutex protected_mutex_;  // guards protected_ids_
  // Each protected path's (st_dev, st_ino) at the first start of this process.
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> protected_ids_;
  std::atomic<long> oom_kills_seen_{0};
  // Set by relocate_workspace(): the container's bind sources are the workspace's old paths.
  std::atomic<bool> stale_mounts_{false};
  std::atomic<std::uint64_t> incarnation_{0};
  // `network: egress`: the agent's proxy and internal network (null otherwise, and when attached).
  std::unique_ptr<EgressProxy> egress_;
  std::unique_ptr<EgressLogFollower> egress_log_;  // with egress_
};

// The attached container's check that its user is not root: prints "uid=N" for the exec's user.
inline constexpr const char* kAttachedUidProbe =
    "while read -r k v r; do [ \"$k\" = Uid: ] && echo \"uid=$v\" && break; done "
    "< /proc/self/status";

}  // namespace execmcp::plugins::docker_common
