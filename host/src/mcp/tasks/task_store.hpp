// The MCP tasks a server holds: each bound to its owner, with its status, its TTL and (once the
// work ended) its outcome. Revision-neutral: the JSON shapes are task_wire's. Thread-safe (one
// mutex); callbacks (waiters, status listeners, cancel) always run outside the lock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "execmcp/sdk/types.hpp"
#include "mcp/json_rpc.hpp"

namespace execmcp::host::mcp::tasks {

enum class TaskStatus { kWorking, kInputRequired, kCompleted, kFailed, kCancelled };

[[nodiscard]] std::string_view to_string(TaskStatus status);
[[nodiscard]] bool is_terminal(TaskStatus status);

// Who made a task: only the same owner may see, poll, read or cancel it (MCP 2025-11-25: "bind
// tasks to [the authorization] context"). `endpoint` is the agent id the request was addressed
// to, `principal` the credentials' name ("stdio" on stdio), `user_key` a per-user agent's user.
struct TaskOwner {
  std::string endpoint;
  std::string principal;
  std::string user_key;
  bool operator==(const TaskOwner&) const = default;
};

using SystemClock = std::chrono::system_clock;
using Millis = std::chrono::milliseconds;

// What a reader sees of a task at one moment.
struct TaskSnapshot {
  std::string id;
  TaskStatus status = TaskStatus::kWorking;
  std::string status_message;
  SystemClock::time_point created_at;
  SystemClock::time_point last_updated_at;
  Millis ttl{0};            // from created_at; the task and its result are freed after it
  Millis poll_interval{0};  // what the client should wait between polls
};

struct TaskStoreOptions {
  std::size_t max_live_per_owner = 32;  // working, or holding a result
  std::size_t max_live = 1024;          // over all owners
  Millis default_ttl = std::chrono::minutes(30);
  Millis max_ttl = std::chrono::hours(6);
  // A task that ended is kept at least this long after its end, whatever its TTL said, so a
  // client polling at pollInterval still reads the result of a task that ran past its TTL.
  Millis keep_after_end = std::chrono::seconds(60);
  std::size_t tombstones = 4096;                     // expired ids remembered (for "expired")
  Millis tombstone_life = std::chrono::minutes(10);  // and for how long
};

// Why a lookup or a creation was refused.
enum class TaskError {
  kNotFound,   // unknown, another owner's, or long gone: all answered alike
  kExpired,    // this owner's, freed at its TTL a short while ago
  kTerminal,   // cancel of a task that already ended
  kOwnerCap,   // the owner has max_live_per_owner live tasks
  kServerCap,  // the server has max_live live tasks
};

// A new task: its snapshot, and the token its work must watch (tasks/cancel requests it).
struct CreatedTask {
  TaskSnapshot task;
  std::shared_ptr<sdk::CancelToken> cancel;
};

struct TaskPage {
  std::vector<TaskSnapshot> tasks;
  std::string next_cursor;  // empty: the last page
};

class TaskStore {
 public:
  using Clock = std::function<SystemClock::time_point()>;
  // Called once with the task's outcome when its work has ended (tasks/result).
  using Waiter = std::function<void(const TaskSnapshot& task, const RpcOutcome& outcome)>;
  // Called on each status change of one task (notifications/tasks/status).
  using StatusListener = std::function<void(const TaskSnapshot& task)>;
  // What a working task says about itself right now (statusMessage); may be empty.
  using Describe = std::function<std::string()>;

  explicit TaskStore(TaskStoreOptions options = {}, Clock clock = SystemClock::now);
  ~TaskStore();
  TaskStore(const TaskStore&) = delete;
  TaskStore& operator=(const TaskStore&) = delete;

  // A new working task for `owner`. `requested_ttl`: the client's ttl (none: the default),
  // clamped to max_ttl.
  [[nodiscard]] std::variant<CreatedTask, TaskError> create(const TaskOwner& owner,
                                                            std::optional<Millis> requested_ttl,
                                                            StatusListener listener = {},
                                                            Describe describe = {});

  [[nodiscard]] std::variant<TaskSnapshot, TaskError> get(const TaskOwner& owner,
                                                          std::string_view id);
  // get(), and the outcome once the work has ended (the extension inlines it in tasks/get).
  struct View {
    TaskSnapshot task;
    std::optional<RpcOutcome> outcome;
  };
  [[nodiscard]] std::variant<View, TaskError> view(const TaskOwner& owner, std::string_view id);
  // The owner's live tasks, oldest first, `page_size` at a time. An unknown cursor: nullopt.
  [[nodiscard]] std::optional<TaskPage> list(const TaskOwner& owner, std::string_view cursor,
                                             std::size_t page_size = 50);
  // Marks the task cancelled (before returning: the answer already says so) and requests its
  // token; its work ends soon after and still stores its outcome.
  [[nodiscard]] std::variant<TaskSnapshot, TaskError> cancel(const TaskOwner& owner,
                                                             std::string_view id,
                                                             std::string message);
  // `waiter` gets the outcome now (the work has ended) or when it ends; else the error.
  [[nodiscard]] std::optional<TaskError> wait_result(const TaskOwner& owner, std::string_view id,
                                                     Waiter waiter);

  // The work ended: stores its outcome and sets `status` (completed or failed) unless the task
  // was cancelled meanwhile, then answers the waiters. Unknown ids are ignored.
  void finish(std::string_view id, RpcOutcome outcome, TaskStatus status, std::string message);

  // Forgets the task at once (a 2026-07-28 call answered within its window: nobody saw its id).
  void discard(std::string_view id);

  // Cancels every working task (server shutdown, the stdio client gone); returns how many.
  std::size_t cancel_all(const std::string& message);
  // Frees the tasks past their TTL (every other call does too); returns how many.
  std::size_t sweep();

  [[nodiscard]] std::size_t live() const;
  [[nodiscard]] const TaskStoreOptions& options() const { return options_; }

 private:
  struct Entry;
  struct Tombstone {
    std::string id;
    TaskOwner owner;
    SystemClock::time_point until;
  };
  using Notice = std::function<void()>;

  [[nodiscard]] TaskSnapshot snapshot_locked(const Entry& entry, SystemClock::time_point now) const;
  [[nodiscard]] bool expired_locked(const Entry& entry, SystemClock::time_point now) const;
  // Frees expired tasks (remembering their ids); returns how many.
  std::size_t sweep_locked(SystemClock::time_point now);
  // The owner's live entry `id`, or why not.
  [[nodiscard]] std::variant<Entry*, TaskError> find_locked(const TaskOwner& owner,
                                                            std::string_view id,
                                                            SystemClock::time_point now);
  [[nodiscard]] std::string new_id_locked() const;

  const TaskStoreOptions options_;
  const Clock clock_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<Entry>> entries_;
  std::uint64_t next_seq_ = 1;  // creation order, what list's cursor counts in
  std::deque<Tombstone> tombstones_;
};

// 128 bits from the kernel's CSPRNG (getrandom) as 32 lower-case hex digits. Throws when the
// kernel has none to give.
[[nodiscard]] std::string random_task_id();

}  // namespace execmcp::host::mcp::tasks
