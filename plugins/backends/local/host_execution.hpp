// The local backend's `isolation: none`: an agent's commands run as subprocesses on the host (under
// execmcp-supervisor), its file tools open files beneath its grants from the server itself.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "command_environment.hpp"
#include "execmcp/sdk/background_processes.hpp"
#include "execmcp/sdk/executor_backend.hpp"
#include "execmcp/sdk/path_policy.hpp"
#include "local_execution.hpp"
#include "local_settings.hpp"
#include "path_beneath.hpp"
#include "supervision/supervisor_client.hpp"
#include "supervisor_path.hpp"

namespace execmcp::plugins::local {

using supervision::RunControl;
using supervision::SpawnSpec;
using supervision::SupervisorProgram;

// A value that is replaced whole and never changed in place: a reader keeps the copy it loaded for
// as long as it needs it, whatever is published meanwhile. (Not std::atomic<std::shared_ptr>:
// libstdc++ 12's load() unlocks with relaxed order, a data race that TSan reports.)
template <typename T>
class Snapshot {
 public:
  explicit Snapshot(std::shared_ptr<const T> value) : value_(std::move(value)) {}
  [[nodiscard]] std::shared_ptr<const T> load() const {
    std::lock_guard lock(mutex_);
    return value_;
  }
  void publish(std::shared_ptr<const T> value) {
    {
      std::lock_guard lock(mutex_);
      value_.swap(value);
    }
    // The old value, if this was its last owner, is freed here, outside the lock.
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const T> value_;
};

class HostExecution final : public LocalExecution {
 public:
  // Throws std::invalid_argument when the agent has no cwd.
  HostExecution(const sdk::BackendInit& init, LocalSettings settings);
  ~HostExecution() override;

  std::string start() override;
  void stop() noexcept override;
  void cleanup() noexcept override;

  sdk::ExecResult execute(const sdk::ExecRequest& request) override;
  sdk::FileReadResult read_file(const sdk::FileReadRequest& request) override;
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request) override;

  // Each background process runs under run_supervised() on a thread of its own.
  sdk::BackgroundStarted start_background(const sdk::BackgroundRequest& request,
                                          sdk::BackgroundObserver* observer) noexcept override;
  void terminate_background(std::uint64_t id, std::chrono::milliseconds grace) noexcept override;

 private:
  // What execute() and start_background() share: checks the command, opens work_dir beneath its
  // grant (into spec.work_dir_fd, which the caller closes) and fills the spec's shell, work_dir,
  // command and environment. Returns "" or why the command may not run.
  std::string resolve_spawn(const std::string& command, const std::string& work_dir, const Env& env,
                            SpawnSpec& spec) const;
  // Applies command_prefix / venv / extra env; returns "" or an error.
  std::string prepare(const std::string& request_command, const Env& request_env,
                      const std::string& work_dir, std::string& command,
                      std::vector<std::string>& env) const;
  struct Background;
  void run_background(Background& process, SpawnSpec spec,
                      sdk::BackgroundObserver* observer) noexcept;
  // Ends every background process (at once) and returns after each on_exit().
  void stop_background() noexcept;
  // Takes the finished processes out of the map and joins their threads (outside the lock).
  void reap_background() noexcept;
  void log(sdk::LogLevel level, const std::string& message) const noexcept;
  // The grants as resolved at one moment: published whole, never changed after.
  using GrantRoots = std::vector<GrantRoot>;
  // The grant that holds `path` (see path_beneath.hpp), opened; fd -1 and `error` set on refusal.
  struct OpenedGrant {
    int fd = -1;
    std::shared_ptr<const GrantRoots> roots;  // keeps `root` alive while a start() publishes anew
    const GrantRoot* root = nullptr;
    std::string relative;
    std::string error;
  };
  [[nodiscard]] OpenedGrant open_grant(const std::string& path, sdk::Access access) const;
  // A refusal when the deepest directory of `grant.relative` that exists really lies in a
  // protected path (where a write would make the missing ones); "" otherwise.
  [[nodiscard]] std::string protected_ancestor(const OpenedGrant& grant,
                                               const std::string& shown) const;
  // True once a file tool loop should give up: the request was cancelled or the backend stopped.
  [[nodiscard]] bool abandoned(const sdk::CancelToken* cancel,
                               unsigned stops_at_start) const noexcept;

  // Every method may run on several threads at once, start() beside execute() included (see
  // executor_backend.hpp), so each member is fixed at construction (const), synchronizes itself,
  // or is replaced only as a whole immutable Snapshot.
  const sdk::BackendInit init_;
  const std::vector<sdk::PathGrant> grants_;
  // The grants resolved; start() resolves them again once the cwd exists and publishes the new
  // list, while calls already running keep the one they loaded.
  Snapshot<GrantRoots> roots_;
  const LocalSettings settings_;
  SupervisorProgram supervisor_;  // synchronizes itself

  // Each running execute() owns one stop flag here; stop() raises them all and waits.
  std::mutex running_mutex_;
  std::condition_variable running_done_;
  std::list<std::atomic<bool>> running_;
  // Counts stop() calls: a file tool loop that sees it change gives up.
  std::atomic<unsigned> stops_{0};

  // Background processes by id, each with its thread; a finished one stays until reaped (joined).
  std::mutex background_mutex_;
  std::condition_variable background_changed_;  // a process started, failed or finished
  std::map<std::uint64_t, std::unique_ptr<Background>> background_;
  std::uint64_t next_background_id_ = 1;
};

}  // namespace execmcp::plugins::local
