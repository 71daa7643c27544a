// The session's outbound queue and its writer thread (see outbox.hpp).
#include "transport/stdio/outbox.hpp"

#include <spdlog/spdlog.h>

namespace execmcp::host::mcp {

Outbox::Outbox(Transport& transport, Limits limits, OnFailure on_failure)
    : transport_(transport),
      limits_(limits),
      on_failure_(std::move(on_failure)),
      writer_([this] { run(); }) {}

Outbox::~Outbox() {
  stop(std::chrono::milliseconds(0));
}

void Outbox::post_response(std::string line) {
  std::unique_lock lock(mutex_);
  if (failed_ || stopping_) return;
  if (write_now_locked(line)) return;
  // A response larger than the bound still goes out to a client that keeps up (nothing waits).
  if (queued_bytes_ > 0 && queued_bytes_ + line.size() > limits_.max_bytes) {
    fail_locked(lock, "the client has not read " + std::to_string(queued_bytes_) +
                          " bytes of messages; ending the session");
    return;
  }
  queued_bytes_ += line.size();
  queue_.push_back(std::move(line));
  lock.unlock();
  work_cv_.notify_one();
}

bool Outbox::post_droppable(std::string line) {
  std::unique_lock lock(mutex_);
  if (failed_ || stopping_) return false;
  if (write_now_locked(line)) return true;
  if (queued_bytes_ + line.size() > limits_.max_droppable_bytes) {
    if (dropped_++ == 0) {
      spdlog::warn("mcp: the client is slow to read; dropping progress notifications");
    }
    return false;
  }
  queued_bytes_ += line.size();
  queue_.push_back(std::move(line));
  lock.unlock();
  work_cv_.notify_one();
  return true;
}

bool Outbox::write_now_locked(std::string_view line) {
  // Only when nothing waits and the writer is idle, so order is kept.
  return queue_.empty() && !writing_ && transport_.try_write_line(line);
}

void Outbox::fail_locked(std::unique_lock<std::mutex>& lock, const std::string& why) {
  if (failed_) return;
  failed_ = true;
  spdlog::warn("mcp: {}", why);
  queue_.clear();
  queued_bytes_ = 0;
  drained_cv_.notify_all();
  lock.unlock();
  if (on_failure_) on_failure_();
  lock.lock();
}

void Outbox::stop(std::chrono::milliseconds grace) {
  {
    std::unique_lock lock(mutex_);
    drained_cv_.wait_for(lock, grace, [&] { return failed_ || (queue_.empty() && !writing_); });
    if (!queue_.empty() || writing_) {
      spdlog::warn("mcp: the client did not read the last {} bytes; not waiting for it",
                   queued_bytes_);
    }
    stopping_ = true;
    queue_.clear();
  }
  work_cv_.notify_all();
  transport_.abort_writes();  // a write blocked on a full pipe returns now
  if (writer_.joinable()) writer_.join();
}

std::size_t Outbox::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

void Outbox::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    work_cv_.wait(lock, [&] { return stopping_ || (!failed_ && !queue_.empty()); });
    if (stopping_) return;
    std::string line = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    lock.unlock();
    const bool written = transport_.write_line(line);
    lock.lock();
    writing_ = false;
    if (stopping_) return;
    if (!written) {
      fail_locked(lock, "cannot write to the client; ending the session");
      continue;
    }
    queued_bytes_ -= line.size();
    if (queue_.empty()) drained_cv_.notify_all();
  }
}

}  // namespace execmcp::host::mcp
