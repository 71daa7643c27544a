// The life of one agent's container over an Engine, as a small core: create, start, recover,
// stop, remove, orphans, names and ownership. Every feature of the container (attach mode,
// protected paths, workspace access, credentials, egress, preinstall, the runner's delivery) is a
// part that hooks in at fixed points (container_part.hpp). It knows no way of running a command
// in the container; the command paths (command_path.hpp) ask it for the container.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "docker_common/engine/engine.hpp"
#include "docker_common/lifecycle/container_part.hpp"
#include "docker_common/lifecycle/container_spec.hpp"
#include "docker_common/lifecycle/ownership.hpp"
#include "docker_common/lifecycle/runtime_check.hpp"
#include "docker_common/parts/workspace_access.hpp"
#include "docker_common/settings/docker_settings.hpp"
#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::plugins::docker_common {

// A fresh random hex string (call markers, scratch names).
std::string random_marker();

// Every method may be called from several threads at once.
class ContainerLifecycle {
 public:
  // `backend_name` prefixes unexpected errors ("docker-api: ..."). Adds the parts every agent's
  // container has from its settings (add_standard_parts()). Throws std::invalid_argument on bad
  // settings (a relative workspace, missing credentials, preinstall files an agent can write).
  ContainerLifecycle(const sdk::BackendInit& init, std::string backend_name,
                     DockerSettings settings, Engine& engine);
  ContainerLifecycle(const ContainerLifecycle&) = delete;
  ContainerLifecycle& operator=(const ContainerLifecycle&) = delete;

  // The container's parts, asked at each step. A part made elsewhere (a command path's) is added
  // before start() and outlives every call into this object.
  [[nodiscard]] PartChain& parts() { return parts_; }

  // Makes the container ready: a managed one is created fresh (orphans and a stale one of ours
  // removed first); an attached one is checked by its part. "" or why not.
  std::string start();
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
  // True when a command must look now and then whether the container still runs (StopCheck,
  // exec_command_path.hpp): the runtime's profile says so (RuntimeProfile).
  [[nodiscard]] bool execs_outlive_container() const { return runtime_.execs_outlive_container; }
  // What the runtime means for the backend (known at start(); runc's until then).
  [[nodiscard]] const RuntimeProfile& runtime() const { return runtime_; }

  // Who runs the commands ("" until start() chose).
  std::string user();
  // Set by the part that chooses (workspace access, attach mode).
  void set_user(UserChoice choice);
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

  // The labels of everything made for this agent: its container, its egress proxy and network.
  [[nodiscard]] std::map<std::string, std::string> owner_labels() const;
  // What the labels of this agent's container must say for it to be ours (ownership.hpp).
  [[nodiscard]] Ownership ownership() const;
  // Adds the writable bind sources of every other execmcp container on this engine. `managed`:
  // the engine's execmcp containers when the caller has them (null: listed now).
  std::string add_other_agents_roots(std::vector<WritableRoot>& roots,
                                     const std::vector<ContainerInfo>* managed = nullptr);
  // Removes this host's egress networks whose owner process is gone (after their containers).
  void remove_orphan_networks();
  // Where a helper container of the agent goes out (the parts' route()).
  [[nodiscard]] NetworkRoute route() const;

  // Every call's environment, NAME=value: what the parts add (an attached container's `env`, the
  // credentials' secrets), then the call's own (later wins).
  std::vector<std::string> call_env(
      const std::vector<std::pair<std::string, std::string>>& extra) const;
  void log(sdk::LogLevel level, const std::string& message) const;

 private:
  std::string start_managed();
  std::string recover_container(std::vector<std::string>& notices, sdk::LogLevel level);
  // Every execmcp container on the engine; "" or why they could not be listed.
  std::string list_managed(std::vector<ContainerInfo>& out);
  // Removes this host's containers whose owner process is gone, and drops them from `managed`;
  // how many were removed.
  std::size_t remove_orphans(std::vector<ContainerInfo>& managed);
  // The container spec, as the parts prepare it, with every mount source checked (see
  // docs/security.md, Container mounts); "" or why the container must not start. `managed`:
  // list_managed()'s answer when the caller has it (null: looked up now).
  std::string checked_spec(ContainerSpec& spec,
                           const std::vector<ContainerInfo>* managed = nullptr);
  std::string create_and_start(const std::vector<ContainerInfo>* managed = nullptr);
  // The engine starts the container `id` (a new one when `created`), the parts told first.
  EngineError start_engine_container(const std::string& id, bool created);
  // True when `labels` say this host made it and its owner process is gone.
  bool orphaned(const std::map<std::string, std::string>& labels) const;

  mutable std::mutex init_mutex_;  // guards init_ (the pointer; what it points to never changes)
  std::shared_ptr<const sdk::BackendInit> init_;
  sdk::LogSink* log_;
  std::string backend_name_;
  DockerSettings settings_;
  Engine& engine_;
  std::string name_;
  std::string host_name_;
  std::mutex user_mutex_;     // guards user_
  UserChoice user_;           // chosen by a part at start()
  RuntimeProfile runtime_;    // check_runtime() at start(); runc's until then
  std::mutex recover_mutex_;  // one container recovery (or stop, or relocation) at a time
  // Set by relocate_workspace(): the container's bind sources are the workspace's old paths.
  std::atomic<bool> stale_mounts_{false};
  PartChain parts_;
};

// The parts every agent's container has, from `settings` (which the credentials' mounts join):
// attach mode, protected paths, workspace access, credentials, egress, preinstall. Called by the
// constructor; throws std::invalid_argument on bad settings.
void add_standard_parts(ContainerLifecycle& lifecycle, DockerSettings& settings);

}  // namespace execmcp::plugins::docker_common
