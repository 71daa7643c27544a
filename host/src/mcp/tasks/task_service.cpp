// Tasks: the store and the runner threads (see task_service.hpp).
#include "mcp/tasks/task_service.hpp"

#include <cstdio>
#include <utility>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

namespace execmcp::host::mcp::tasks {

using nlohmann::json;

namespace {

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string bytes_text(std::size_t bytes) {
  char text[32];
  if (bytes < 1024) {
    std::snprintf(text, sizeof text, "%zu B", bytes);
  } else if (bytes < 1024 * 1024) {
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
  } else {
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  }
  return text;
}

}  // namespace

void TaskOutputMeter::on_output(sdk::StreamKind stream, std::string_view chunk) noexcept {
  (stream == sdk::StreamKind::Stderr ? stderr_bytes_ : stdout_bytes_).fetch_add(chunk.size());
  if (next_ != nullptr) next_->on_output(stream, chunk);
}

void TaskOutputMeter::started() noexcept {
  started_ms_.store(std::max<std::int64_t>(steady_ms(), 1));
}

std::string TaskOutputMeter::describe() const {
  const std::int64_t started = started_ms_.load();
  if (started == 0) return "waiting for a free task thread";
  return "running " + std::to_string((steady_ms() - started) / 1000) + " s; stdout " +
         bytes_text(stdout_bytes_.load()) + ", stderr " + bytes_text(stderr_bytes_.load()) +
         " so far";
}

Settled settle(const RpcOutcome& outcome) {
  if (const auto* error = std::get_if<RpcError>(&outcome)) {
    return {TaskStatus::kFailed, error->message.substr(0, 200)};
  }
  const json& result = std::get<json>(outcome);
  const bool is_error = result.is_object() && result.value("isError", false);
  std::string message = is_error ? "the tool reported an error" : "done";
  if (const auto structured = result.find("structuredContent");
      structured != result.end() && structured->is_object() && structured->contains("exit_code")) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f", structured->value("execution_time", 0.0));
    if (structured->value("timed_out", false)) {
      message = std::string("timed out after ") + seconds + " s; the process tree was killed";
    } else {
      message = "exit code " + std::to_string(structured->value("exit_code", -1)) + " after " +
                seconds + " s";
    }
  }
  return {is_error ? TaskStatus::kFailed : TaskStatus::kCompleted, std::move(message)};
}

TaskService::TaskService(TaskServiceOptions options, TaskStore::Clock clock)
    : store_(options.store, std::move(clock)),
      task_after_(options.task_after),
      pool_(std::max<std::size_t>(options.max_running, 1)) {}

TaskService::~TaskService() {
  shutdown();
}

std::variant<TaskSnapshot, TaskError> TaskService::start(const TaskOwner& owner,
                                                         std::optional<Millis> ttl, Work work,
                                                         TaskStore::StatusListener listener) {
  if (stopped_.load()) return TaskError::kServerCap;
  auto meter = std::make_shared<TaskOutputMeter>();
  auto created =
      store_.create(owner, ttl, std::move(listener), [meter] { return meter->describe(); });
  if (auto* error = std::get_if<TaskError>(&created)) return *error;
  CreatedTask task = std::move(std::get<CreatedTask>(created));
  busy_.fetch_add(1);
  spdlog::info("mcp: task {}… created for '{}' on agent '{}'", task.task.id.substr(0, 8),
               owner.principal, owner.endpoint);
  pool_.submit([this, id = task.task.id, cancel = task.cancel, meter, work = std::move(work)] {
    run(id, cancel, meter, work);
  });
  return task.task;
}

void TaskService::run(const std::string& id, const std::shared_ptr<sdk::CancelToken>& cancel,
                      const std::shared_ptr<TaskOutputMeter>& meter, const Work& work) noexcept {
  RpcOutcome outcome =
      RpcError{rpc_error::kInternalError, "Internal error: the task had no outcome"};
  try {
    meter->started();
    outcome = work(id, *cancel, *meter);
  } catch (const std::exception& e) {
    outcome = RpcError{rpc_error::kInternalError, std::string("Internal error: ") + e.what()};
  } catch (...) {
    outcome = RpcError{rpc_error::kInternalError, "Internal error: unknown exception"};
  }
  try {
    Settled settled = settle(outcome);
    spdlog::info("mcp: task {}… ended: {}", id.substr(0, 8), settled.message);
    store_.finish(id, std::move(outcome), settled.status, std::move(settled.message));
  } catch (...) {
    spdlog::error("mcp: task {}… could not store its outcome", id.substr(0, 8));
  }
  if (busy_.fetch_sub(1) == 1) {
    std::lock_guard lock(idle_mutex_);
    idle_cv_.notify_all();
  }
}

void TaskService::cancel_all(const std::string& message) {
  if (const std::size_t n = store_.cancel_all(message); n != 0)
    spdlog::info("mcp: {} task(s) cancelled: {}", n, message);
}

bool TaskService::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(idle_mutex_);
  return idle_cv_.wait_for(lock, timeout, [this] { return busy_.load() == 0; });
}

void TaskService::at(std::chrono::steady_clock::time_point when, std::function<void()> action) {
  {
    std::lock_guard lock(timer_mutex_);
    if (!timers_stopping_) {
      timers_.emplace(when, std::move(action));
      if (!timer_thread_.joinable()) timer_thread_ = std::thread([this] { run_timers(); });
      timer_cv_.notify_all();
      return;
    }
  }
  action();  // shutting down: at once
}

void TaskService::run_timers() {
  std::unique_lock lock(timer_mutex_);
  for (;;) {
    if (timers_.empty()) {
      if (timers_stopping_) return;
      timer_cv_.wait(lock);
      continue;
    }
    const auto first = timers_.begin();
    if (!timers_stopping_ && first->first > std::chrono::steady_clock::now()) {
      timer_cv_.wait_until(lock, first->first);
      continue;
    }
    std::function<void()> action = std::move(first->second);
    timers_.erase(first);
    lock.unlock();
    try {
      action();
    } catch (...) {
      spdlog::error("mcp: a task timer failed");
    }
    lock.lock();
  }
}

void TaskService::shutdown() {
  if (stopped_.exchange(true)) return;
  cancel_all("cancelled: the server is shutting down");
  pool_.shutdown();
  {
    std::lock_guard lock(timer_mutex_);
    timers_stopping_ = true;  // what is left runs now
    timer_cv_.notify_all();
  }
  if (timer_thread_.joinable()) timer_thread_.join();
}

}  // namespace execmcp::host::mcp::tasks
