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
#include <unordered_map>

#include "docker_common/egress_policy.hpp"
#include "docker_common/engine.hpp"
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

  struct Counts {
    std::uint64_t refusals = 0;       // refusals seen
    std::uint64_t reported = 0;       // delivered one by one
    std::uint64_t repeats = 0;        // not: the same one was reported within kEgressRepeatWindow
    std::uint64_t over_budget = 0;    // not: kEgressRecordsPerHour were reported in the last hour
    std::uint64_t summaries = 0;      // summary events delivered
    std::uint64_t dropped_lines = 0;  // lines longer than kEgressLogLineMax
  };
  [[nodiscard]] Counts counts() const;

 private:
  struct Refusal {
    std::uint64_t seq = 0;
    std::string target;  // "host:port", escaped
  };
  void run();
  void take_line(std::string_view line);
  // What the budget holds back until the next summary.
  struct Held {
    std::uint64_t repeats = 0;
    std::uint64_t over_budget = 0;
    std::set<std::string> hosts;  // at most kEgressSummaryHosts, escaped
    bool more_hosts = false;      // others were not kept
    Clock::time_point since{};    // the first one's
    std::int64_t last_unix_ms = 0;
  };
  void refused(const EgressLogRecord& record, std::int64_t unix_ms);
  // With mutex_ held: true when `event` may be delivered now; otherwise counts it as held.
  bool within_budget(const sdk::NetworkEvent& event, Clock::time_point now);
  // With mutex_ held: the summary of what is held, when one is due at `now` (or `now` is a stop).
  std::optional<sdk::NetworkEvent> summary(Clock::time_point now, bool stopping);
  void deliver(const sdk::NetworkEvent& event);
  // Sleeps `wait` unless stop() comes first; false when it came.
  bool pause(std::chrono::milliseconds wait);
  void log(sdk::LogLevel level, const std::string& message) const;

  Engine& engine_;
  std::string proxy_;
  std::string allow_text_;  // the allow list as a notice shows it
  sdk::LogSink* log_;
  ClockFn clock_;

  mutable std::mutex thread_mutex_;  // one start() or stop() at a time
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;

  mutable std::mutex mutex_;  // guards what follows, down to the sink's
  std::condition_variable activity_;
  std::string partial_;    // a line whose end has not come
  bool skipping_ = false;  // inside a line that grew past kEgressLogLineMax
  std::int64_t last_sec_ = 0;
  std::int64_t last_nsec_ = -1;
  bool streaming_ = false;
  std::chrono::steady_clock::time_point last_bytes_{};
  std::deque<Refusal> recent_;
  Counts counts_;
  // The budget: when each of the last hour's events was delivered (at most
  // kEgressRecordsPerHour), and when each refusal delivered within kEgressRepeatWindow was
  // (its key: host, port, method), oldest first, with the newest time of each key.
  std::deque<Clock::time_point> reported_;
  std::deque<std::pair<Clock::time_point, std::string>> recent_keys_;
  std::unordered_map<std::string, Clock::time_point> last_reported_;
  Held held_;

  std::mutex sink_mutex_;  // held while delivering, so subscribe() can wait for it
  sdk::NetworkEventSink* sink_ = nullptr;
};

// Parses the time in front of a followed log line ("2026-11-26T10:16:56.123456789Z", or with a
// "+hh:mm" offset) into Unix seconds and nanoseconds; false when it is not one.
bool parse_log_time(std::string_view text, std::int64_t& sec, std::int64_t& nsec);

}  // namespace execmcp::plugins::docker_common
