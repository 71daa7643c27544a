// The tasks of one server: the owner-bound store and the runner that does their work on threads
// of its own (never the request workers: a ten-minute task must not hold a call slot). Transports
// and revisions are the router's and task_wire's; this room knows neither.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include "execmcp/sdk/types.hpp"
#include "mcp/json_rpc.hpp"
#include "mcp/tasks/task_store.hpp"
#include "mcp/worker_pool.hpp"

namespace execmcp::host::mcp::tasks {

struct TaskServiceOptions {
  TaskStoreOptions store;
  // Tasks whose work runs at once; more wait in `working` until a thread is free.
  std::size_t max_running = 8;
  // 2026-07-28's extension: a command that ends within this long is answered as a plain call
  // (its task is dropped unseen); one still running then becomes a task. 0: always a task.
  std::chrono::milliseconds task_after{1000};
};

// Counts a task's output as it streams (for its statusMessage) and passes it on to `next` (the
// progress reporter, when the client asked for progress). Thread-safe.
class TaskOutputMeter final : public sdk::OutputSink {
 public:
  void on_output(sdk::StreamKind stream, std::string_view chunk) noexcept override;
  // Where output goes on to; set by the work before any output.
  void forward_to(sdk::OutputSink* next) noexcept { next_ = next; }
  void started() noexcept;
  // "waiting for a free task thread", or "running 12 s; stdout 3.2 KiB, stderr 0 B so far".
  [[nodiscard]] std::string describe() const;

 private:
  sdk::OutputSink* next_ = nullptr;
  std::atomic<std::size_t> stdout_bytes_{0};
  std::atomic<std::size_t> stderr_bytes_{0};
  std::atomic<std::int64_t> started_ms_{0};  // steady clock; 0: not started
};

class TaskService {
 public:
  // A task's work, run once on a runner thread: its outcome (a CallToolResult or a JSON-RPC
  // error). It must watch `cancel` and pass its output through `meter`. Must not throw.
  using Work = std::function<RpcOutcome(const std::string& task_id, const sdk::CancelToken& cancel,
                                        TaskOutputMeter& meter)>;

  explicit TaskService(TaskServiceOptions options = {}, TaskStore::Clock clock = SystemClock::now);
  ~TaskService();  // shutdown()
  TaskService(const TaskService&) = delete;
  TaskService& operator=(const TaskService&) = delete;

  // Creates the task and queues its work; the snapshot to answer with, or why not.
  [[nodiscard]] std::variant<TaskSnapshot, TaskError> start(
      const TaskOwner& owner, std::optional<Millis> ttl, Work work,
      TaskStore::StatusListener listener = {});

  [[nodiscard]] TaskStore& store() { return store_; }
  [[nodiscard]] std::chrono::milliseconds task_after() const { return task_after_; }

  // Runs `action` once, on the service's timer thread, at `when` (or at shutdown, if sooner).
  // It must not block.
  void at(std::chrono::steady_clock::time_point when, std::function<void()> action);

  // Cancels every working task (their trees are killed as for a timeout).
  void cancel_all(const std::string& message);
  // Until no task's work is running or queued, or `timeout` passed; true when none is.
  bool wait_idle(std::chrono::milliseconds timeout);
  // cancel_all, then runs what is queued (each answers at once: it is cancelled) and joins.
  void shutdown();

  [[nodiscard]] std::size_t running() const { return busy_.load(); }

 private:
  void run(const std::string& id, const std::shared_ptr<sdk::CancelToken>& cancel,
           const std::shared_ptr<TaskOutputMeter>& meter, const Work& work) noexcept;

  void run_timers();

  TaskStore store_;
  const std::chrono::milliseconds task_after_;
  std::atomic<std::size_t> busy_{0};  // queued or running
  std::mutex idle_mutex_;
  std::condition_variable idle_cv_;
  std::atomic<bool> stopped_{false};
  std::mutex timer_mutex_;
  std::condition_variable timer_cv_;
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> timers_;
  bool timers_stopping_ = false;  // guarded by timer_mutex_
  std::thread timer_thread_;      // started by the first at()
  WorkerPool pool_;               // last: joined first
};

// The status a task's outcome gives it in MCP 2025-11-25: an error, or a tool result with
// isError, is `failed` ("for tool calls specifically, this includes cases where the tool call
// result has isError set to true"); else `completed`. And a short message saying why.
struct Settled {
  TaskStatus status;
  std::string message;
};
[[nodiscard]] Settled settle(const RpcOutcome& outcome);

}  // namespace execmcp::host::mcp::tasks
