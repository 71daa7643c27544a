// Follows an agent's egress proxy log (Engine::follow_logs()) on a thread of its own: each request
// the policy refused becomes an sdk::NetworkEvent for the host's sink (an audit record and a log
// line there), within a budget, and a bounded few are kept for the notice on the result of the
// command that ran while they happened.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "docker_common/engine/engine.hpp"
#include "docker_common/parts/egress_policy.hpp"
#include "docker_common/parts/egress_refusal_budget.hpp"
#include "execmcp/sdk/network_events.hpp"
#include "execmcp/sdk/types.hpp"

namespace execmcp::plugins::docker_common {

// What one sandbox's refusals may write (each event is an audit record and a log line at the
// host, about 1 KB together): a refusal is reported on its own unless the same one (host, port,
// method) was reported less than kEgressRepeatWindow before, or kEgressRecordsPerHour were
// reported in the last hour. The others are counted and summed up in one event at most every
// kEgressSummaryEvery (host "*", the counts and up to kEgressSummaryHosts hosts in its reason),
// and in one more at stop(). So at most kEgressRecordsPerHour + 61 events an hour (~0.4 MB)
// whatever the sandbox does; a flood used to write 100 a second (~7 GB a day).
inline constexpr std::size_t kEgressRecordsPerHour = 300;
inline constexpr std::chrono::seconds kEgressBudgetWindow{3600};
inline constexpr std::chrono::seconds kEgressRepeatWindow{60};
inline constexpr std::chrono::seconds kEgressSummaryEvery{60};
// The hosts a summary names (each cut at kEgressSummaryHostMax bytes) before "and more", so that
// its reason stays under the 512 bytes the host keeps of one.
inline constexpr std::size_t kEgressSummaryHosts = 6;
inline constexpr std::size_t kEgressSummaryHostMax = 40;
// The most of one proxy log line kept while its end has not come; a longer line is dropped.
inline constexpr std::size_t kEgressLogLineMax = 8 * 1024;
// The refusals kept for notices (the newest); older ones are only counted.
inline constexpr std::size_t kEgressRecentRefusals = 64;
// The hosts a notice names before "and N more".
inline constexpr std::size_t kEgressNoticeHosts = 3;

// A followed log's lines: chunks split into lines (one that grows past kEgressLogLineMax is
// dropped), and each line's time compared with the last one's, so that what a reconnection
// replays is skipped. Not thread-safe: its follower calls it under its own lock.
class TimedLogLines {
 public:
  // Appends `chunk`; the lines it completed go to `lines` (without their '\n'). How many lines
  // were dropped for their length.
  std::uint64_t split(std::string_view chunk, std::vector<std::string>& lines);
  // True, and remembered, when a line stamped `sec`.`nsec` comes after the last one taken.
  bool take_time(std::int64_t sec, std::int64_t nsec);
  // A reconnection starts at a line's start.
  void restart_line();
  // Where a new stream starts: the second of the last line taken ("" before any).
  [[nodiscard]] std::string since() const;

 private:
  std::string partial_;    // a line whose end has not come
  bool skipping_ = false;  // inside a line that grew past kEgressLogLineMax
  std::int64_t last_sec_ = 0;
  std::int64_t last_nsec_ = -1;
};

// Thread-safe. Not one call of the agent's ever waits for the engine here: they read what the
// thread has taken (notice()), and the thread's engine calls are its own.
class EgressLogFollower {
 public:
  // What the budget and the repeat window are measured on (steady_clock::now by default): when
  // a refusal's line is read, not when the engine stamped it.
  using Clock = std::chrono::steady_clock;
  using ClockFn = std::function<Clock::time_point()>;

  // `proxy`: the proxy container's name; `log`: the backend's log (may be null); `clock`: for
  // tests (empty: steady_clock::now).
  EgressLogFollower(Engine& engine, std::string proxy, const EgressPolicy& policy,
                    sdk::LogSink* log, ClockFn clock = {});
  ~EgressLogFollower();
  EgressLogFollower(const EgressLogFollower&) = delete;
  EgressLogFollower& operator=(const EgressLogFollower&) = delete;

  // Starts following unless it does already. A stream that ends (the proxy stopped, restarted or
  // was made again) is opened again, from where it was, until stop().
  void start();
  // Ends the thread; returns once it has ended (within one read's wait), after delivering the
  // summary of what was counted and not yet reported, if any. Idempotent.
  void stop() noexcept;
  [[nodiscard]] bool running() const;

  // sdk::NetworkEvents::subscribe(): returns once no delivery to the previous sink is in flight.
  void subscribe(sdk::NetworkEventSink* sink) noexcept;
  // sdk::SecretEvents::subscribe(): the secret injector's lines (execmcp-secret ...), likewise.
  void subscribe_secrets(sdk::SecretEventSink* sink) noexcept;

  // A call's start: how many refusals were seen so far.
  [[nodiscard]] std::uint64_t mark() const;
  // At a call's end: the notice for the refusals seen since `mark` ("" when none). While the log
  // streams, first waits until it has been quiet for `quiet` (at most 8 x `quiet`): the proxy
  // logs a request as it ends, and the engine passes it on a moment later.
  std::string notice(std::uint64_t mark, std::chrono::milliseconds quiet);

  // The thread's own work, public for tests: a chunk of the log as it came ("<time> <line>\n"
  // ...). Returns how many new lines it held (a line at or before the last one seen is one
  // replayed after a reconnection, and skipped).
  std::size_t take(std::string_view chunk);
  // The thread's own work too (after each read, so also while the log is quiet): delivers the
  // summary that is due, if one is.
  void tick();
  // Where a new stream starts: the second of the last line seen ("" before any).
  [[nodiscard]] std::string since() const;

  using Counts = EgressCounts;
  [[nodiscard]] Counts counts() const;

 private:
  void run();
  void take_line(std::string_view line);
  void refused(const EgressLogRecord& record, std::int64_t unix_ms);
  // A line of the secret injector's; false when it is not one.
  bool secret_line(std::string_view line, std::int64_t unix_ms);
  void deliver(const sdk::NetworkEvent& event);
  // Sleeps `wait` unless stop() comes first; false when it came.
  bool pause(std::chrono::milliseconds wait);
  void log(sdk::LogLevel level, const std::string& message) const;

  Engine& engine_;
  std::string proxy_;
  sdk::LogSink* log_;
  ClockFn clock_;

  mutable std::mutex thread_mutex_;  // one start() or stop() at a time
  std::thread thread_;
  // The thread's stop request, which its pauses wait on.
  struct StopRequest {
    std::atomic<bool> requested{false};
    std::mutex mutex;
    std::condition_variable cv;
  };
  StopRequest stop_;

  mutable std::mutex mutex_;  // guards what follows, down to the sink's
  std::condition_variable activity_;
  TimedLogLines lines_;
  bool streaming_ = false;
  std::chrono::steady_clock::time_point last_bytes_{};
  RefusalNotices notices_;
  Counts counts_;
  RefusalBudget budget_;  // what may be delivered one by one
  SecretEventBudget secret_budget_;

  std::mutex sink_mutex_;  // held while delivering, so subscribe() can wait for it
  sdk::NetworkEventSink* sink_ = nullptr;
  sdk::SecretEventSink* secret_sink_ = nullptr;
};

// Parses the time in front of a followed log line ("2026-11-26T10:16:56.123456789Z", or with a
// "+hh:mm" offset) into Unix seconds and nanoseconds; false when it is not one.
bool parse_log_time(std::string_view text, std::int64_t& sec, std::int64_t& nsec);

}  // namespace execmcp::plugins::docker_common
