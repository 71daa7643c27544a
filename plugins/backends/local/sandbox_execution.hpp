// The local backend's `isolation: sandbox`: one OS sandbox per agent (sandbox/sandbox_launcher.hpp:
// bubblewrap as an unprivileged uid, its own namespaces, seccomp, Landlock where the kernel has
// it) with execmcp-runner as its only tenant, driven over a RunnerChannel (libs/runner_client).
// Commands, background processes and the file tools are runner calls, one round trip each; the
// sandbox lives until stop() or cleanup(), and a sandbox whose runner died is started again by the
// next call. The sandbox shows every grant at its host path, so paths, venvs and results read the
// same as with `isolation: none`; but the workspace at BackendInit::sandbox_cwd when the host sets
// it (a per-user agent: "/workspace"), where commands and file calls then see it. It is also the
// backend's execmcp.sandbox/1 (suspend = the sandbox goes, its files stay; resume = a new one).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "docker_common/parts/egress_refusal_budget.hpp"
#include "egress_proxy.hpp"
#include "execmcp/sdk/sandbox_control.hpp"
#include "local_execution.hpp"
#include "local_settings.hpp"
#include "path_beneath.hpp"
#include "runner_client/runner_channel.hpp"
#include "sandbox_launcher.hpp"
#include "sandbox_limits.hpp"

namespace execmcp::plugins::local {

// The uid and gid a sandbox runs as: `configured` when set (never 0), else when the server is not
// root its own, else the workspace's owner when that is not root, else 1000. "" or why not.
std::string choose_sandbox_user(const std::optional<uid_t>& configured,
                                const std::string& workspace, uid_t& uid, gid_t& gid);

class SandboxExecution final : public LocalExecution,
                               public sdk::SandboxControl,
                               private sdk::NetworkEvents {
 public:
  // Throws std::invalid_argument when the agent has no cwd.
  SandboxExecution(const sdk::BackendInit& init, LocalSettings settings);
  ~SandboxExecution() override;

  // Fails closed: a machine that cannot give every layer refuses the agent, saying which layer.
  std::string start() override;
  void stop() noexcept override;
  void cleanup() noexcept override;

  sdk::ExecResult execute(const sdk::ExecRequest& request) override;
  sdk::FileReadResult read_file(const sdk::FileReadRequest& request) override;
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request) override;

  sdk::BackgroundStarted start_background(const sdk::BackgroundRequest& request,
                                          sdk::BackgroundObserver* observer) noexcept override;
  void terminate_background(std::uint64_t id, std::chrono::milliseconds grace) noexcept override;

  sdk::SandboxControl* sandbox_control() noexcept override { return this; }
  std::string suspend() noexcept override;
  std::string resume() noexcept override;
  std::string relocate_workspace(const std::string& host_path) noexcept override;
  // network: egress: each refusal of the sandbox's proxy, within the Docker backends' budget
  // (RefusalBudget: a repeat or one over the hour's budget is held for a summary).
  sdk::NetworkEvents* network_events() noexcept override;
  void subscribe(sdk::NetworkEventSink* sink) noexcept override;

 private:
  struct Background;
  using Channel = std::shared_ptr<runner_client::RunnerChannel>;

  // The live channel: the sandbox is started when there is none or its runner is gone. Null and
  // `why` when it cannot start.
  Channel channel(std::string& why);
  std::string open_sandbox_locked(Channel& out);
  // Closes the channel (the runner kills every call and exits) and stops the sandbox.
  void close_sandbox() noexcept;
  // Removes a stopped sandbox's cgroup (saying in the log when it stays).
  void release_cgroup(std::shared_ptr<sandbox::SandboxCgroup> cgroup) const noexcept;
  // network: egress: the sandbox's Squid, run as uid:gid in the sandbox's cgroup (its
  // cgroup.procs descriptors; none: no cgroup). Null and `error` when it cannot start.
  std::unique_ptr<sandbox::EgressProxy> start_egress_proxy(uid_t uid, gid_t gid,
                                                           const std::vector<int>& cgroup_procs,
                                                           std::string& error);
  // network: egress: where a command's run starts, for the notice of what the proxy refused while
  // it ran (as on Docker; a refusal cannot be tied to one command, so overlapping calls all name
  // it).
  struct EgressMark {
    std::shared_ptr<sandbox::EgressProxy> proxy;
    std::uint64_t connections = 0;
    std::uint64_t refusals = 0;
  };
  EgressMark egress_mark();
  // Adds that notice to `result` when there were refusals; first waits for Squid's log to catch
  // up, but only when the command used the proxy.
  void add_egress_notice(const EgressMark& mark, sdk::ExecResult& result);
  // When the server is root: an ACL for the sandbox user on each grant it does not own. "" or why.
  [[nodiscard]] std::string grant_access(const std::vector<GrantRoot>& roots) const;
  [[nodiscard]] sandbox::SandboxSpec sandbox_spec(const std::vector<GrantRoot>& roots) const;
  // The directory a command runs in, as the sandbox sees it (its host path): `requested` must lie
  // lexically in a grant; the sandbox's mounts decide the rest. "" or why not.
  std::string work_dir_of(const std::string& requested, std::string& work_dir) const;
  // Runs one file call to its end (or the request's cancel, or stop()).
  struct FileCall {
    std::string data;
    bool dropped = false;
    std::optional<supervision::runner::FileReport> report;
    std::string error;
  };
  FileCall run_file(const supervision::runner::FileRequest& request, const std::string* input,
                    std::size_t cap, const sdk::CancelToken* cancel);
  void log(sdk::LogLevel level, const std::string& message) const noexcept;
  // With a sandbox_cwd: a path the agent gave (relative ones from sandbox_cwd) as the host sees
  // it when it lies under sandbox_cwd, else as an absolute path unchanged. Without: unchanged.
  [[nodiscard]] std::string host_path(const std::string& shown) const;
  // The reverse: a host path in the workspace as commands see it; any other path unchanged.
  [[nodiscard]] std::string shown_path(const std::string& host) const;
  // A message with the workspace's host path replaced by where commands see it.
  [[nodiscard]] std::string shown_text(std::string text) const;
  // "" or why sandbox_cwd cannot be the workspace's mount point.
  [[nodiscard]] std::string check_sandbox_cwd(const std::vector<GrantRoot>& roots) const;
  // Ends every background process (at once) and returns after each on_exit().
  void stop_background() noexcept;

  const sdk::BackendInit init_;
  const std::vector<sdk::PathGrant> grants_;
  const LocalSettings settings_;
  const std::string runner_;     // execmcp-runner beside the plugins
  const std::string shown_cwd_;  // the workspace as commands see it: sandbox_cwd, else init_.cwd

  mutable std::mutex mutex_;  // guards the seven below; held while a sandbox starts
  std::shared_ptr<const std::vector<GrantRoot>> roots_;
  LimitsPlan limits_;  // made by start(): what each sandbox's cgroup gets
  // The running sandbox's cgroup of its own (null: none); execute() holds it for the OOM count.
  std::shared_ptr<sandbox::SandboxCgroup> cgroup_;
  std::unique_ptr<sandbox::SandboxProcess> process_;
  // network: egress: the sandbox's Squid (shared with the calls that wait on its log).
  std::shared_ptr<sandbox::EgressProxy> egress_;

  // Held while an event is delivered: subscribe() returns once none is in flight.
  std::mutex events_mutex_;
  sdk::NetworkEventSink* events_sink_ = nullptr;
  docker_common::RefusalBudget refusal_budget_;
  docker_common::EgressCounts refusal_counts_;
  docker_common::RefusalNotices refusal_notices_;
  void deliver_refusal(const docker_common::EgressLogRecord& record) noexcept;
  void deliver_summary(bool stopping) noexcept;
  Channel channel_;
  bool started_ = false;  // start() succeeded and no cleanup() since

  // Counts stop() calls: a call that sees it change kills its command and gives up.
  std::atomic<std::uint64_t> stops_{0};
  std::mutex running_mutex_;
  std::condition_variable running_done_;
  int running_ = 0;  // execute() calls in flight

  std::mutex background_mutex_;
  std::map<std::uint64_t, std::shared_ptr<Background>> background_;
  std::uint64_t next_background_id_ = 1;
};

}  // namespace execmcp::plugins::local
