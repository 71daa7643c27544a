// Coalesced progress notifications for streamed command output (see progress_reporter.hpp).
#include "mcp/progress_reporter.hpp"

#include <exception>

#include <spdlog/spdlog.h>

namespace execmcp::host::mcp {

ProgressReporter::ProgressReporter(nlohmann::json token, Send send,
                                   std::chrono::milliseconds interval, std::size_t max_pending)
    : token_(std::move(token)),
      send_(std::move(send)),
      interval_(interval),
      max_pending_(max_pending) {}

void ProgressReporter::on_output(sdk::StreamKind stream, std::string_view chunk) noexcept {
  try {
    std::lock_guard lock(mutex_);
    if (finished_ || chunk.empty()) return;
    bytes_seen_ += chunk.size();
    auto& utf8 = stream == sdk::StreamKind::Stdout ? stdout_utf8_ : stderr_utf8_;
    pending_ += utf8.feed(chunk);
    if (pending_.size() >= max_pending_ || Clock::now() - last_sent_ >= interval_) {
      send_pending_locked();
    }
  } catch (const std::exception& e) {  // the sink must not throw into the backend
    spdlog::warn("mcp: dropping progress output: {}", e.what());
  }
}

void ProgressReporter::flush_if_due() noexcept {
  std::lock_guard lock(mutex_);
  if (!finished_ && Clock::now() - last_sent_ >= interval_) send_pending_locked();
}

void ProgressReporter::finish() noexcept {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  try {
    pending_ += stdout_utf8_.finish();
    pending_ += stderr_utf8_.finish();
  } catch (const std::exception&) {
  }
  send_pending_locked();
  finished_ = true;
}

void ProgressReporter::send_pending_locked() noexcept {
  if (pending_.empty()) return;
  try {
    // Sent under the lock so notifications leave in order and none follows finish().
    send_(make_progress(std::move(pending_)));
  } catch (const std::exception& e) {
    spdlog::warn("mcp: could not send a progress notification: {}", e.what());
  }
  pending_.clear();
  last_sent_ = Clock::now();
}

nlohmann::json ProgressReporter::make_progress(std::string message) const {
  return nlohmann::json{
      {"jsonrpc", "2.0"},
      {"method", "notifications/progress"},
      {"params",
       {{"progressToken", token_}, {"progress", bytes_seen_}, {"message", std::move(message)}}}};
}

ProgressTicker::ProgressTicker(std::chrono::milliseconds interval)
    : interval_(interval), thread_([this] { run(); }) {}

ProgressTicker::~ProgressTicker() {
  stop();
}

void ProgressTicker::add(ProgressReporter* reporter) {
  std::lock_guard lock(mutex_);
  reporters_.insert(reporter);
  cv_.notify_all();
}

void ProgressTicker::remove(ProgressReporter* reporter) {
  // Flushing happens under mutex_, so once erased here the reporter is never touched again.
  std::lock_guard lock(mutex_);
  reporters_.erase(reporter);
}

void ProgressTicker::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ProgressTicker::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (reporters_.empty()) {
      cv_.wait(lock, [&] { return stopping_ || !reporters_.empty(); });
      continue;
    }
    cv_.wait_for(lock, interval_, [&] { return stopping_; });
    for (ProgressReporter* reporter : reporters_) reporter->flush_if_due();
  }
}

}  // namespace execmcp::host::mcp
