// The owner-bound task table (see task_store.hpp).
#include "mcp/tasks/task_store.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace execmcp::host::mcp::tasks {

std::string_view to_string(TaskStatus status) {
  switch (status) {
    case TaskStatus::kWorking:
      return "working";
    case TaskStatus::kInputRequired:
      return "input_required";
    case TaskStatus::kCompleted:
      return "completed";
    case TaskStatus::kFailed:
      return "failed";
    case TaskStatus::kCancelled:
      return "cancelled";
  }
  return "failed";
}

bool is_terminal(TaskStatus status) {
  return status == TaskStatus::kCompleted || status == TaskStatus::kFailed ||
         status == TaskStatus::kCancelled;
}

std::string random_task_id() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("getrandom failed: no task id can be made");
    got += static_cast<std::size_t>(n);
  }
  std::string id;
  id.reserve(32);
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    id += hex;
  }
  return id;
}

struct TaskStore::Entry {
  std::string id;
  std::uint64_t seq = 0;
  TaskOwner owner;
  TaskStatus status = TaskStatus::kWorking;
  std::string message;
  SystemClock::time_point created_at;
  SystemClock::time_point updated_at;
  std::optional<SystemClock::time_point> ended_at;  // the work's end (its outcome is stored)
  Millis ttl{0};
  std::optional<RpcOutcome> outcome;
  std::shared_ptr<sdk::CancelToken> cancel;
  std::vector<Waiter> waiters;
  StatusListener listener;
  Describe describe;
};

TaskStore::TaskStore(TaskStoreOptions options, Clock clock)
    : options_(std::move(options)), clock_(std::move(clock)) {}

TaskStore::~TaskStore() = default;

TaskSnapshot TaskStore::snapshot_locked(const Entry& entry, SystemClock::time_point now) const {
  // Short commands are found done quickly; a long one is polled every few seconds.
  const Millis age = std::chrono::duration_cast<Millis>(now - entry.created_at);
  const Millis poll = std::clamp<Millis>(age / 10, Millis(250), Millis(5000));
  // The TTL said is when the task is really freed: an ended task is kept keep_after_end at least.
  Millis ttl = entry.ttl;
  if (entry.ended_at) {
    ttl = std::max(ttl, std::chrono::duration_cast<Millis>(
                            *entry.ended_at + options_.keep_after_end - entry.created_at));
  }
  return TaskSnapshot{entry.id,         entry.status, entry.message, entry.created_at,
                      entry.updated_at, ttl,          poll};
}

bool TaskStore::expired_locked(const Entry& entry, SystemClock::time_point now) const {
  // Work still running is never freed: its result would be lost to a client still polling.
  if (!entry.ended_at) return false;
  const auto until =
      std::max(entry.created_at + entry.ttl, *entry.ended_at + options_.keep_after_end);
  return now >= until;
}

std::size_t TaskStore::sweep_locked(SystemClock::time_point now) {
  while (!tombstones_.empty() &&
         (tombstones_.front().until <= now || tombstones_.size() > options_.tombstones))
    tombstones_.pop_front();
  std::size_t freed = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (!expired_locked(*it->second, now)) {
      ++it;
      continue;
    }
    if (options_.tombstones != 0) {
      if (tombstones_.size() >= options_.tombstones) tombstones_.pop_front();
      tombstones_.push_back(Tombstone{it->first, it->second->owner, now + options_.tombstone_life});
    }
    it = entries_.erase(it);
    ++freed;
  }
  return freed;
}

std::variant<TaskStore::Entry*, TaskError> TaskStore::find_locked(const TaskOwner& owner,
                                                                  std::string_view id,
                                                                  SystemClock::time_point now) {
  sweep_locked(now);
  if (const auto it = entries_.find(std::string(id));
      it != entries_.end() && it->second->owner == owner)
    return it->second.get();
  for (const Tombstone& stone : tombstones_) {
    if (stone.id == id && stone.owner == owner) return TaskError::kExpired;
  }
  // Another owner's task is answered exactly like one that never existed.
  return TaskError::kNotFound;
}

std::string TaskStore::new_id_locked() const {
  for (;;) {
    std::string id = random_task_id();
    if (!entries_.contains(id)) return id;
  }
}

std::variant<CreatedTask, TaskError> TaskStore::create(const TaskOwner& owner,
                                                       std::optional<Millis> requested_ttl,
                                                       StatusListener listener, Describe describe) {
  std::vector<std::unique_ptr<Entry>> evicted;  // freed after the lock is released
  std::lock_guard lock(mutex_);
  const auto now = clock_();
  sweep_locked(now);
  // At a cap, the oldest ended task (the owner's, for the owner's cap) makes room, as if its TTL
  // had passed: a client that makes many short tasks is never refused for results it no longer
  // needs. Only tasks still working are refused room.
  auto make_room = [&](bool own) {
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (!it->second->ended_at || (own && !(it->second->owner == owner))) continue;
      if (oldest == entries_.end() || *it->second->ended_at < *oldest->second->ended_at)
        oldest = it;
    }
    if (oldest == entries_.end()) return false;
    if (options_.tombstones != 0) {
      if (tombstones_.size() >= options_.tombstones) tombstones_.pop_front();
      tombstones_.push_back(
          Tombstone{oldest->first, oldest->second->owner, now + options_.tombstone_life});
    }
    evicted.push_back(std::move(oldest->second));
    entries_.erase(oldest);
    return true;
  };
  if (entries_.size() >= options_.max_live && !make_room(false)) return TaskError::kServerCap;
  const auto mine = std::count_if(entries_.begin(), entries_.end(),
                                  [&](const auto& entry) { return entry.second->owner == owner; });
  if (static_cast<std::size_t>(mine) >= options_.max_live_per_owner && !make_room(true))
    return TaskError::kOwnerCap;
  auto entry = std::make_unique<Entry>();
  entry->id = new_id_locked();
  entry->seq = next_seq_++;
  entry->owner = owner;
  entry->created_at = now;
  entry->updated_at = now;
  entry->ttl =
      std::clamp(requested_ttl.value_or(options_.default_ttl), Millis(0), options_.max_ttl);
  entry->cancel = std::make_shared<sdk::CancelToken>();
  entry->listener = std::move(listener);
  entry->describe = std::move(describe);
  CreatedTask created{snapshot_locked(*entry, now), entry->cancel};
  entries_.emplace(entry->id, std::move(entry));
  return created;
}

std::variant<TaskSnapshot, TaskError> TaskStore::get(const TaskOwner& owner, std::string_view id) {
  TaskSnapshot snapshot;
  Describe describe;
  {
    std::lock_guard lock(mutex_);
    const auto now = clock_();
    auto found = find_locked(owner, id, now);
    if (auto* error = std::get_if<TaskError>(&found)) return *error;
    const Entry& entry = *std::get<Entry*>(found);
    snapshot = snapshot_locked(entry, now);
    if (entry.status == TaskStatus::kWorking) describe = entry.describe;
  }
  if (describe) {
    if (std::string message = describe(); !message.empty()) snapshot.status_message = message;
  }
  return snapshot;
}

std::variant<TaskStore::View, TaskError> TaskStore::view(const TaskOwner& owner,
                                                         std::string_view id) {
  View out;
  Describe describe;
  {
    std::lock_guard lock(mutex_);
    const auto now = clock_();
    auto found = find_locked(owner, id, now);
    if (auto* error = std::get_if<TaskError>(&found)) return *error;
    const Entry& entry = *std::get<Entry*>(found);
    out.task = snapshot_locked(entry, now);
    out.outcome = entry.outcome;
    if (entry.status == TaskStatus::kWorking) describe = entry.describe;
  }
  if (describe) {
    if (std::string message = describe(); !message.empty()) out.task.status_message = message;
  }
  return out;
}

std::optional<TaskPage> TaskStore::list(const TaskOwner& owner, std::string_view cursor,
                                        std::size_t page_size) {
  std::uint64_t after = 0;
  if (!cursor.empty()) {
    const auto [end, error] = std::from_chars(cursor.data(), cursor.data() + cursor.size(), after);
    if (error != std::errc() || end != cursor.data() + cursor.size()) return std::nullopt;
  }
  std::lock_guard lock(mutex_);
  if (after >= next_seq_) return std::nullopt;
  const auto now = clock_();
  sweep_locked(now);
  std::vector<const Entry*> mine;
  for (const auto& [id, entry] : entries_) {
    if (entry->owner == owner && entry->seq > after) mine.push_back(entry.get());
  }
  std::sort(mine.begin(), mine.end(),
            [](const Entry* a, const Entry* b) { return a->seq < b->seq; });
  TaskPage page;
  for (const Entry* entry : mine) {
    if (page.tasks.size() == std::max<std::size_t>(page_size, 1)) {
      page.next_cursor =
          std::to_string(page.tasks.empty() ? after : mine[page.tasks.size() - 1]->seq);
      break;
    }
    page.tasks.push_back(snapshot_locked(*entry, now));
  }
  return page;
}

std::variant<TaskSnapshot, TaskError> TaskStore::cancel(const TaskOwner& owner, std::string_view id,
                                                        std::string message) {
  TaskSnapshot snapshot;
  std::shared_ptr<sdk::CancelToken> token;
  StatusListener listener;
  {
    std::lock_guard lock(mutex_);
    const auto now = clock_();
    auto found = find_locked(owner, id, now);
    if (auto* error = std::get_if<TaskError>(&found)) return *error;
    Entry& entry = *std::get<Entry*>(found);
    if (is_terminal(entry.status)) return TaskError::kTerminal;
    entry.status = TaskStatus::kCancelled;
    entry.message = std::move(message);
    entry.updated_at = now;
    snapshot = snapshot_locked(entry, now);
    token = entry.cancel;
    listener = entry.listener;
  }
  token->request_cancel();
  if (listener) listener(snapshot);
  return snapshot;
}

std::optional<TaskError> TaskStore::wait_result(const TaskOwner& owner, std::string_view id,
                                                Waiter waiter) {
  TaskSnapshot snapshot;
  RpcOutcome outcome;
  {
    std::lock_guard lock(mutex_);
    const auto now = clock_();
    auto found = find_locked(owner, id, now);
    if (auto* error = std::get_if<TaskError>(&found)) return *error;
    Entry& entry = *std::get<Entry*>(found);
    if (!entry.outcome) {
      entry.waiters.push_back(std::move(waiter));
      return std::nullopt;
    }
    snapshot = snapshot_locked(entry, now);
    outcome = *entry.outcome;
  }
  waiter(snapshot, outcome);
  return std::nullopt;
}

void TaskStore::finish(std::string_view id, RpcOutcome outcome, TaskStatus status,
                       std::string message) {
  TaskSnapshot snapshot;
  std::vector<Waiter> waiters;
  StatusListener listener;
  bool changed = false;
  {
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(std::string(id));
    if (it == entries_.end() || it->second->outcome) return;
    Entry& entry = *it->second;
    const auto now = clock_();
    entry.outcome = std::move(outcome);
    entry.ended_at = now;
    // A cancelled task stays cancelled (terminal statuses never change); its outcome is kept.
    if (!is_terminal(entry.status)) {
      entry.status = status;
      entry.message = std::move(message);
      entry.updated_at = now;
      changed = true;
    }
    entry.describe = nullptr;
    snapshot = snapshot_locked(entry, now);
    waiters = std::move(entry.waiters);
    entry.waiters.clear();
    if (changed) listener = entry.listener;
    entry.listener = nullptr;  // nothing more to tell
    outcome = *entry.outcome;
  }
  if (listener) listener(snapshot);
  for (Waiter& waiter : waiters) waiter(snapshot, outcome);
}

std::size_t TaskStore::cancel_all(const std::string& message) {
  std::vector<std::pair<std::shared_ptr<sdk::CancelToken>, std::pair<StatusListener, TaskSnapshot>>>
      cancelled;
  {
    std::lock_guard lock(mutex_);
    const auto now = clock_();
    for (auto& [id, entry] : entries_) {
      if (is_terminal(entry->status)) continue;
      entry->status = TaskStatus::kCancelled;
      entry->message = message;
      entry->updated_at = now;
      cancelled.push_back({entry->cancel, {entry->listener, snapshot_locked(*entry, now)}});
    }
  }
  for (auto& [token, notice] : cancelled) {
    token->request_cancel();
    if (notice.first) notice.first(notice.second);
  }
  return cancelled.size();
}

void TaskStore::discard(std::string_view id) {
  std::unique_ptr<Entry> gone;  // destroyed outside the lock (its callbacks hold captures)
  std::lock_guard lock(mutex_);
  if (const auto it = entries_.find(std::string(id)); it != entries_.end()) {
    gone = std::move(it->second);
    entries_.erase(it);
  }
}

std::size_t TaskStore::sweep() {
  std::lock_guard lock(mutex_);
  return sweep_locked(clock_());
}

std::size_t TaskStore::live() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace execmcp::host::mcp::tasks
