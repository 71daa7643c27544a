// What one sandbox's egress refusals may write at the host: the budget and the repeat window that
// decide which refusal is reported on its own, and the summary of the ones held back
// (EgressLogFollower delivers both); and the notice on the result of a command that ran while
// some happened (the Docker backends' EgressLogFollower and the local sandbox both give it).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "docker_common/parts/egress_policy.hpp"
#include "execmcp/sdk/network_events.hpp"
#include "execmcp/sdk/secret_events.hpp"

namespace execmcp::plugins::docker_common {

// What an egress log follower saw, for its tests and its notices.
struct EgressCounts {
  std::uint64_t refusals = 0;       // refusals seen
  std::uint64_t reported = 0;       // delivered one by one
  std::uint64_t repeats = 0;        // not: the same one was reported within kEgressRepeatWindow
  std::uint64_t over_budget = 0;    // not: kEgressRecordsPerHour were reported in the last hour
  std::uint64_t summaries = 0;      // summary events delivered
  std::uint64_t dropped_lines = 0;  // lines longer than kEgressLogLineMax
  std::uint64_t secret_events = 0;  // lines of the secret injector's seen
};

// The reason every refusal event gives.
inline constexpr const char* kEgressRefusalReason = "not in this agent's egress allow list";

// Not thread-safe: its follower calls it under its own lock. The limits are
// egress_log_follower.hpp's.
class RefusalBudget {
 public:
  using Clock = std::chrono::steady_clock;

  // True when `event` may be delivered now (counted as reported); otherwise it is counted as held
  // (a repeat, or over the hour's budget) for the next summary.
  bool admit(const sdk::NetworkEvent& event, Clock::time_point now, EgressCounts& counts);
  // The summary of what is held, when one is due at `now` (or `stopping`); counted.
  std::optional<sdk::NetworkEvent> summary(Clock::time_point now, bool stopping,
                                           EgressCounts& counts);

 private:
  // What is held back until the next summary.
  struct Held {
    std::uint64_t repeats = 0;
    std::uint64_t over_budget = 0;
    std::set<std::string> hosts;  // at most kEgressSummaryHosts, escaped
    bool more_hosts = false;      // others were not kept
    Clock::time_point since{};    // the first one's
    std::int64_t last_unix_ms = 0;
  };

  // When each of the last hour's events was delivered (at most kEgressRecordsPerHour), and when
  // each refusal delivered within kEgressRepeatWindow was (its key: host, port, method), oldest
  // first, with the newest time of each key.
  std::deque<Clock::time_point> reported_;
  std::deque<std::pair<Clock::time_point, std::string>> recent_keys_;
  std::unordered_map<std::string, Clock::time_point> last_reported_;
  Held held_;
};

// How long a command's end waits for the egress proxy's log to be quiet, so the notice of what it
// refused names the command's last requests too.
inline constexpr std::chrono::milliseconds kEgressNoticeQuiet{10};

// The refusals kept for the notice of the commands that ran while they happened (the newest
// kEgressRecentRefusals; older ones are only counted), and that notice's text. Not thread-safe:
// its owner calls it under its own lock.
class RefusalNotices {
 public:
  explicit RefusalNotices(const EgressPolicy& policy);

  // A refusal of `target` ("host:port", escaped).
  void add(std::string target);
  // A call's start: how many refusals were seen so far.
  [[nodiscard]] std::uint64_t mark() const noexcept { return seen_; }
  // The notice for the refusals seen since `mark` ("" when none): "the egress proxy refused a
  // request: denied.test:80 (not in this agent's egress allow list; allow: pypi.org)".
  [[nodiscard]] std::string notice(std::uint64_t mark) const;

 private:
  struct Refusal {
    std::uint64_t seq = 0;
    std::string target;
  };
  std::string allow_text_;  // the allow list as a notice shows it
  std::uint64_t seen_ = 0;
  std::deque<Refusal> recent_;
};

// What one sandbox's secret events may write at the host (each an audit record and a log line):
// every event of a kind, secret, host, method and path is reported once per
// kSecretRepeatWindow, and at most kSecretEventsPerHour in an hour; the others are counted and
// the count rides on the next one reported (`dropped_before`). Not thread-safe: its follower
// calls it under its own lock.
inline constexpr std::size_t kSecretEventsPerHour = 600;
inline constexpr std::chrono::seconds kSecretRepeatWindow{60};

class SecretEventBudget {
 public:
  using Clock = std::chrono::steady_clock;

  // True when `event` may be delivered now; then its dropped_before is set to what was held
  // back since the last one delivered.
  bool admit(sdk::SecretEvent& event, Clock::time_point now);
  [[nodiscard]] std::uint64_t held() const noexcept { return held_; }

 private:
  std::deque<Clock::time_point> reported_;
  std::deque<std::pair<Clock::time_point, std::string>> recent_keys_;
  std::unordered_map<std::string, Clock::time_point> last_reported_;
  std::uint64_t held_ = 0;
};

}  // namespace execmcp::plugins::docker_common
