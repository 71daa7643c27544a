// Turns a running command's output chunks into coalesced MCP notifications/progress messages.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/utf8.hpp"
#include "execmcp/sdk/types.hpp"

namespace execmcp::host::mcp {

// An OutputSink for one tools/call that carried `_meta.progressToken`. Sends at most one
// notification per `interval` unless `max_pending` bytes are waiting; `progress` is the number of
// output bytes seen so far (it only grows); `message` is the new output as valid UTF-8.
class ProgressReporter final : public sdk::OutputSink {
 public:
  using Send = std::function<void(const nlohmann::json& notification)>;
  static constexpr std::chrono::milliseconds kDefaultInterval{100};
  static constexpr std::size_t kDefaultMaxPending = 16 * 1024;

  ProgressReporter(nlohmann::json token, Send send,
                   std::chrono::milliseconds interval = kDefaultInterval,
                   std::size_t max_pending = kDefaultMaxPending);

  void on_output(sdk::StreamKind stream, std::string_view chunk) noexcept override;
  // Sends what is waiting if the interval has passed (called by ProgressTicker).
  void flush_if_due() noexcept;
  // Sends everything still waiting; nothing is sent afterwards.
  void finish() noexcept;

 private:
  using Clock = std::chrono::steady_clock;
  void send_pending_locked() noexcept;
  [[nodiscard]] nlohmann::json make_progress(std::string message) const;

  const nlohmann::json token_;
  const Send send_;
  const std::chrono::milliseconds interval_;
  const std::size_t max_pending_;

  std::mutex mutex_;
  Utf8StreamSanitizer stdout_utf8_;
  Utf8StreamSanitizer stderr_utf8_;
  std::string pending_;
  std::size_t bytes_seen_ = 0;
  Clock::time_point last_sent_{};
  bool finished_ = false;
};

// One thread that flushes the waiting output of every registered reporter each interval, so
// output followed by silence is not held back until the command ends.
class ProgressTicker {
 public:
  explicit ProgressTicker(std::chrono::milliseconds interval = ProgressReporter::kDefaultInterval);
  ~ProgressTicker();  // same as stop()
  ProgressTicker(const ProgressTicker&) = delete;
  ProgressTicker& operator=(const ProgressTicker&) = delete;

  void add(ProgressReporter* reporter);
  void remove(ProgressReporter* reporter);  // after it returns, the reporter is not touched again
  void stop();

 private:
  void run();

  const std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::set<ProgressReporter*> reporters_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace execmcp::host::mcp
