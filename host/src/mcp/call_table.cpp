// The calls in progress on one transport (see call_table.hpp).
#include "mcp/call_table.hpp"

namespace execmcp::host::mcp {

bool CallTable::add(const std::string& key, const std::shared_ptr<CallState>& state) {
  std::lock_guard lock(mutex_);
  if (!by_key_.emplace(key, state).second) return false;
  open_[state.get()] = state;
  if (stopping_) state->cancel.request_cancel();
  return true;
}

void CallTable::release_locked(const std::string& key, const CallState& state) {
  if (const auto it = by_key_.find(key); it != by_key_.end() && it->second.get() == &state)
    by_key_.erase(it);
}

void CallTable::release(const std::string& key, const CallState& state) {
  std::lock_guard lock(mutex_);
  release_locked(key, state);
}

void CallTable::done(const std::string& key, const CallState& state) {
  std::lock_guard lock(mutex_);
  release_locked(key, state);
  open_.erase(&state);
  // Under the lock: the table's owner may be destroyed as soon as wait_idle() returns.
  if (open_.empty()) idle_cv_.notify_all();
}

bool CallTable::cancel(const std::string& key) {
  std::shared_ptr<CallState> state;
  {
    std::lock_guard lock(mutex_);
    if (const auto it = by_key_.find(key); it != by_key_.end()) state = it->second;
  }
  if (!state) return false;
  state->cancel_by_client();
  return true;
}

void CallTable::cancel_all() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  for (auto& [key, state] : open_) state->cancel.request_cancel();
}

bool CallTable::stopping() const {
  std::lock_guard lock(mutex_);
  return stopping_;
}

bool CallTable::empty() const {
  std::lock_guard lock(mutex_);
  return open_.empty();
}

bool CallTable::wait_idle(std::optional<std::chrono::milliseconds> timeout) {
  std::unique_lock lock(mutex_);
  if (!timeout) {
    idle_cv_.wait(lock, [this] { return open_.empty(); });
    return true;
  }
  return idle_cv_.wait_for(lock, *timeout, [this] { return open_.empty(); });
}

}  // namespace execmcp::host::mcp
