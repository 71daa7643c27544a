// Tests of EgressLogFollower against FakeEngine: the proxy's log lines in, one event per refusal
// out (escaped, bounded, replays skipped) within a budget (a repeat counted, the excess over an
// hour's budget summed up once a minute, on a fake clock), the notice of a call's refusals, a
// stream that ends and is followed again, and a clean stop; and how ContainerLifecycle and
// ContainerBackend start, stop and offer it.
#include "docker_common/parts/egress_log_follower.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "docker_common/container_backend.hpp"
#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "docker_common/parts/egress_proxy.hpp"
#include "execmcp/egress_secrets/event_line.hpp"
#include "fake_engine.hpp"
#include "lifecycle_test_support.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using test_support::has;

using namespace std::chrono_literals;

// A followed line: the engine's time in front of what the proxy logged.
std::string line(const std::string& time, const std::string& host, int port, bool refused,
                 const std::string& method = "GET") {
  return time + " execmcp-egress agent 1795678550.298 172.19.0.3 " + method + " " + host + " " +
         std::to_string(port) +
         (refused ? " TCP_DENIED 403 403:ERR_EXECMCP_EGRESS_DENIED -\n"
                  : " TCP_MISS 200 - 172.18.0.2\n");
}

std::string at(int second, int nanos = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "2026-11-26T10:16:%02d.%09dZ", second, nanos);
  return buf;
}

class Sink final : public sdk::NetworkEventSink {
 public:
  void on_network_event(const sdk::NetworkEvent& event) noexcept override {
    std::lock_guard lock(mutex_);
    events_.push_back(event);
    arrived_.notify_all();
  }
  // Waits up to `wait` for `n` events; all of them so far.
  std::vector<sdk::NetworkEvent> wait_for(std::size_t n, std::chrono::milliseconds wait = 5s) {
    std::unique_lock lock(mutex_);
    arrived_.wait_for(lock, wait, [&] { return events_.size() >= n; });
    return events_;
  }
  std::size_t size() {
    std::lock_guard lock(mutex_);
    return events_.size();
  }

 private:
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<sdk::NetworkEvent> events_;
};

EgressPolicy policy() {
  EgressPolicy p;
  p.allow.push_back({EgressEntry::Kind::kHost, "allowed.test", "allowed.test"});
  p.allow.push_back({EgressEntry::Kind::kWildcard, "npmjs.org", "*.npmjs.org"});
  return p;
}

TEST(EgressLogTime, ReadsTheEnginesTimes) {
  std::int64_t sec = 0, nsec = 0;
  ASSERT_TRUE(parse_log_time("1970-01-01T00:01:00.5Z", sec, nsec));
  EXPECT_EQ(sec, 60);
  EXPECT_EQ(nsec, 500000000);
  ASSERT_TRUE(parse_log_time("2026-11-26T10:16:56.123456789Z", sec, nsec));
  EXPECT_EQ(nsec, 123456789);
  const auto utc = sec;
  ASSERT_TRUE(parse_log_time("2026-11-26T11:16:56.123456789+01:00", sec, nsec));  // podman
  EXPECT_EQ(sec, utc);
  ASSERT_TRUE(parse_log_time("2026-11-26T10:16:56Z", sec, nsec));
  EXPECT_EQ(nsec, 0);
  for (const char* bad : {"", "2026-11-26", "2026-11-26T10:16:56", "2026-11-26 10:16:56Z",
                          "2026-11-26T10:16:56.1Zjunk", "2026-11-26T10:16:56+0100"})
    EXPECT_FALSE(parse_log_time(bad, sec, nsec)) << bad;
}

TEST(EgressLogFollower, EachRefusalBecomesOneEventWhateverTheChunks) {
  const std::string log = "2026/11/26 10:16:50| Starting Squid\n" +  // not a followed line
                          line(at(50), "allowed.test", 443, false, "CONNECT") +
                          line(at(51), "denied.test", 80, true) +
                          line(at(52, 5), "other.test", 443, true, "CONNECT");
  // Split at every byte: the same events.
  for (std::size_t cut = 0; cut <= log.size(); ++cut) {
    FakeEngine engine;
    EgressLogFollower follower(engine, "p", policy(), nullptr);
    Sink sink;
    follower.subscribe(&sink);
    follower.take(std::string_view(log).substr(0, cut));
    follower.take(std::string_view(log).substr(cut));
    const auto events = sink.wait_for(2, 0ms);
    ASSERT_EQ(events.size(), 2u) << "cut at " << cut;
    EXPECT_EQ(events[0].host, "denied.test");
    EXPECT_EQ(events[0].port, 80);
    EXPECT_EQ(events[0].method, "GET");
    EXPECT_TRUE(events[0].refused);
    EXPECT_EQ(events[0].reason, "not in this agent's egress allow list");
    EXPECT_EQ(events[1].host, "other.test");
    EXPECT_EQ(events[1].method, "CONNECT");
    EXPECT_EQ(events[1].unix_ms - events[0].unix_ms, 1000);
    EXPECT_EQ(follower.counts().refusals, 2u);
    EXPECT_EQ(follower.since(), std::to_string(events[1].unix_ms / 1000));
  }
}

TEST(EgressLogFollower, LinesSeenBeforeAreSkippedAfterAReconnection) {
  FakeEngine engine;
  EgressLogFollower follower(engine, "p", policy(), nullptr);
  Sink sink;
  follower.subscribe(&sink);
  EXPECT_EQ(follower.take(line(at(1), "a.test", 80, true) + line(at(2), "b.test", 80, true)), 2u);
  // The engine replays from `since` (inclusive), then what is new.
  EXPECT_EQ(follower.take(line(at(2), "b.test", 80, true) + line(at(3), "c.test", 80, true)), 1u);
  const auto events = sink.wait_for(3, 0ms);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2].host, "c.test");
}

TEST(EgressLogFollower, UntrustedBytesAreEscapedAndBounded) {
  FakeEngine engine;
  EgressLogFollower follower(engine, "p", policy(), nullptr);
  Sink sink;
  follower.subscribe(&sink);
  const std::string evil = "evil\x1b[31m\x7f.test" + std::string(400, 'a');
  follower.take(line(at(1), evil, 80, true));
  const auto events = sink.wait_for(1, 0ms);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(has(events[0].host, "\x1b"));
  EXPECT_TRUE(events[0].host.starts_with("evil\\x1b[31m\\x7f.test")) << events[0].host;
  EXPECT_TRUE(has(events[0].host, "more bytes not logged")) << events[0].host;
  EXPECT_LT(events[0].host.size(), 300u);
}

TEST(EgressLogFollower, AnEndlessLineIsDroppedAndCounted) {
  FakeEngine engine;
  EgressLogFollower follower(engine, "p", policy(), nullptr);
  Sink sink;
  follower.subscribe(&sink);
  for (int i = 0; i < 100; ++i) follower.take(std::string(1024, 'x'));  // 100 KiB, no newline
  follower.take("\n" + line(at(1), "denied.test", 80, true));
  EXPECT_EQ(follower.counts().dropped_lines, 1u);
  ASSERT_EQ(sink.wait_for(1, 0ms).size(), 1u);
}

// A line's time `ms` milliseconds after 2026-11-26T00:00:00Z (within the day).
std::string at_ms(std::int64_t ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "2026-11-26T%02d:%02d:%02d.%09dZ", static_cast<int>(ms / 3600000),
                static_cast<int>(ms / 60000 % 60), static_cast<int>(ms / 1000 % 60),
                static_cast<int>(ms % 1000) * 1000000);
  return buf;
}

bool is_summary(const sdk::NetworkEvent& e) {
  return e.host == "*";
}

// How many refusals a summary stands for ("summary of N refusals ...").
std::uint64_t summed(const sdk::NetworkEvent& e) {
  const std::string head = "summary of ";
  if (!e.reason.starts_with(head)) return 0;
  return std::stoull(e.reason.substr(head.size()));
}

// A clock the test moves.
struct FakeClock {
  EgressLogFollower::Clock::time_point now{std::chrono::hours(1000)};
  EgressLogFollower::ClockFn fn() {
    return [this] { return now; };
  }
};

// The old cap (100 events a second) let a sandbox that kept under it write ~85 KB/s of audit
// trail and log without end. These two use nothing but the lines' times (the clock is the real
// one: the whole flood is read within a second of it).
TEST(EgressLogFollower, AFloodOverAnHourWritesABoundedFewRecords) {
  FakeEngine engine;
  EgressLogFollower follower(engine, "p", policy(), nullptr);
  Sink sink;
  follower.subscribe(&sink);
  std::string flood;
  for (int i = 0; i < 10000; ++i)  // 10,000 hosts, one every 360 ms of the proxy's log
    flood += line(at_ms(i * 360), "h" + std::to_string(i) + ".test", 80, true);
  follower.take(flood);
  follower.stop();  // reports what was held back
  const auto events = sink.wait_for(100000, 0ms);
  EXPECT_LE(events.size(), 300u + 61u);
  EXPECT_EQ(follower.counts().refusals, 10000u);
}

class SecretSink final : public sdk::SecretEventSink {
 public:
  void on_secret_event(const sdk::SecretEvent& event) noexcept override {
    std::lock_guard lock(mutex_);
    events.push_back(event);
  }
  std::vector<sdk::SecretEvent> taken() {
    std::lock_guard lock(mutex_);
    return events;
  }

 private:
  std::mutex mutex_;
  std::vector<sdk::SecretEvent> events;
};

std::string secret_line(const std::string& time, egress_secrets::SecretEvent::Kind kind,
                        const std::string& path, const std::string& detail = "") {
  egress_secrets::SecretEvent e;
  e.kind = kind;
  e.label = "agent";
  e.secret = "GITHUB_TOKEN";
  e.method = "GET";
  e.host = "api.github.com";
  e.path = path;
  e.detail = detail;
  return time + " " + egress_secrets::format_event_line(e) + "\n";
}

TEST(EgressLogFollower, TheInjectorsLinesBecomeSecretEventsBesideTheRefusals) {
  using Kind = egress_secrets::SecretEvent::Kind;
  const std::string log = line(at(1), "denied.test", 80, true) +
                          secret_line(at(2), Kind::kWithheld, "/gists", "path") +
                          secret_line(at(3), Kind::kInjected, "/repos/a b\x1b[2J") +
                          secret_line(at(4), Kind::kScrubbed, "/echo", "2");
  for (std::size_t cut = 0; cut <= log.size(); cut += 7) {
    FakeEngine engine;
    EgressLogFollower follower(engine, "p", policy(), nullptr);
    Sink sink;
    SecretSink secrets;
    follower.subscribe(&sink);
    follower.subscribe_secrets(&secrets);
    follower.take(std::string_view(log).substr(0, cut));
    follower.take(std::string_view(log).substr(cut));
    EXPECT_EQ(sink.wait_for(1, 0ms).size(), 1u);
    const auto events = secrets.taken();
    ASSERT_EQ(events.size(), 3u) << "cut at " << cut;
    EXPECT_EQ(events[0].kind, sdk::SecretEvent::Kind::kWithheld);
    EXPECT_EQ(events[0].secret, "GITHUB_TOKEN");
    EXPECT_EQ(events[0].host, "api.github.com");
    EXPECT_EQ(events[0].method, "GET");
    EXPECT_EQ(events[0].path, "/gists");
    EXPECT_EQ(events[0].detail, "path");
    EXPECT_EQ(events[1].kind, sdk::SecretEvent::Kind::kInjected);
    // The sandbox's bytes, escaped on the way.
    EXPECT_EQ(events[1].path.find('\x1b'), std::string::npos) << events[1].path;
    EXPECT_EQ(events[2].kind, sdk::SecretEvent::Kind::kScrubbed);
    EXPECT_EQ(events[2].unix_ms - events[0].unix_ms, 2000);
    EXPECT_EQ(follower.counts().secret_events, 3u);
    EXPECT_EQ(follower.counts().refusals, 1u);
  }
}

TEST(EgressLogFollower, TheSameSecretEventIsReportedOnceAMinuteAndTheRestCounted) {
  using Kind = egress_secrets::SecretEvent::Kind;
  FakeEngine engine;
  auto now = std::chrono::steady_clock::time_point{} + 1h;
  EgressLogFollower follower(engine, "p", policy(), nullptr, [&] { return now; });
  SecretSink secrets;
  follower.subscribe_secrets(&secrets);
  std::string same;
  for (int i = 0; i < 20; ++i) same += secret_line(at(10, i * 1000), Kind::kInjected, "/repos");
  follower.take(same);
  EXPECT_EQ(secrets.taken().size(), 1u);
  now += 61s;
  follower.take(secret_line(at(20), Kind::kInjected, "/repos"));
  const auto events = secrets.taken();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].dropped_before, 19u);
  EXPECT_EQ(follower.counts().secret_events, 21u);
}

TEST(EgressLogFollower, TheSameRefusalIsReportedOnceAMinute) {
  FakeEngine engine;
  EgressLogFollower follower(engine, "p", policy(), nullptr);
  Sink sink;
  follower.subscribe(&sink);
  std::string same;
  for (int i = 0; i < 50; ++i) same += line(at(10, i * 1000), "denied.test", 80, true);
  follower.take(same);
  follower.stop();
  const auto events = sink.wait_for(100, 0ms);
  ASSERT_EQ(events.size(), 2u);  // the first, then at the stop a summary of the other 49
  EXPECT_EQ(events[0].host, "denied.test");
  EXPECT_EQ(events[1].host, "*");
  EXPECT_TRUE(events[1].reason.starts_with("summary of 49 refusals")) << events[1].reason;
}

TEST(EgressLogFollower, RepeatsWithinTheWindowAreCountedAndSummedUpAMinuteLater) {
  FakeEngine engine;
  FakeClock clock;
  EgressLogFollower follower(engine, "p", policy(), nullptr, clock.fn());
  Sink sink;
  follower.subscribe(&sink);
  const auto t0 = clock.now;
  follower.take(line(at_ms(0), "denied.test", 80, true));
  // The same host, port and method, whatever the case and the path: a repeat.
  for (int i = 1; i < 30; ++i) {
    clock.now = t0 + i * 1s;
    follower.take(line(at_ms(i * 1000), i % 2 ? "Denied.TEST" : "denied.test", 80, true));
  }
  // Another port, another method, another host: each its own.
  follower.take(line(at_ms(30000), "denied.test", 443, true, "CONNECT") +
                line(at_ms(30001), "denied.test", 80, true, "POST") +
                line(at_ms(30002), "other.test", 80, true));
  auto events = sink.wait_for(100, 0ms);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[1].port, 443);
  EXPECT_EQ(events[2].method, "POST");
  EXPECT_EQ(events[3].host, "other.test");
  EXPECT_EQ(follower.counts().repeats, 29u);
  // The summary comes a minute after the first repeat, from the thread's tick, without a line.
  clock.now = t0 + 60s;
  follower.tick();
  EXPECT_EQ(sink.wait_for(100, 0ms).size(), 4u);
  clock.now = t0 + 61s;
  follower.tick();
  follower.tick();
  events = sink.wait_for(100, 0ms);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[4].host, "*");
  EXPECT_EQ(events[4].method, "*");
  EXPECT_TRUE(events[4].refused);
  EXPECT_EQ(events[4].unix_ms - events[0].unix_ms, 29000);  // the last one it stands for
  EXPECT_EQ(events[4].reason,
            "summary of 29 refusals (not in this agent's egress allow list) not reported one by "
            "one: 29 repeated one reported in the last 60 s; hosts: denied.test");
  // Past the window the same refusal is reported again.
  follower.take(line(at_ms(61000), "denied.test", 80, true));
  events = sink.wait_for(100, 0ms);
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[5].host, "denied.test");
  follower.stop();
  EXPECT_EQ(sink.wait_for(100, 0ms).size(), 6u);  // nothing held: no summary at the stop
}

TEST(EgressLogFollower, AnHourOfFloodKeepsToTheBudgetThenOneSummaryAMinute) {
  FakeEngine engine;
  FakeClock clock;
  EgressLogFollower follower(engine, "p", policy(), nullptr, clock.fn());
  Sink sink;
  follower.subscribe(&sink);
  const auto t0 = clock.now;
  const auto step = 360ms;  // 10,000 refusals of distinct hosts over an hour
  std::vector<EgressLogFollower::Clock::time_point> when;  // each event's delivery
  std::size_t seen = 0;
  const auto note = [&] {
    for (; seen < sink.size(); ++seen) when.push_back(clock.now);
  };
  const auto feed = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      clock.now = t0 + i * step;
      follower.take(line(at_ms(i * 360), "h" + std::to_string(i) + ".test", 80, true));
      if (i % 3 == 0) follower.tick();  // the thread's ticks between lines
      note();
    }
  };
  feed(0, 10000);
  auto events = sink.wait_for(100000, 0ms);
  std::size_t single = 0, summaries = 0;
  std::uint64_t total = 0;
  for (const auto& e : events) {
    if (is_summary(e)) {
      ++summaries;
      total += summed(e);
      EXPECT_LT(e.reason.size(), 512u);
    } else {
      ++single;
      ++total;
    }
  }
  EXPECT_EQ(single, kEgressRecordsPerHour);
  EXPECT_GE(summaries, 55u);  // one a minute from the end of the budget (~108 s in)
  EXPECT_LE(summaries, 60u);
  for (std::size_t i = 1, last = 0; i < events.size(); ++i) {
    if (!is_summary(events[i])) continue;
    if (last > 0) {
      EXPECT_GE(when[i] - when[last], kEgressSummaryEvery);
    }
    last = i;
  }
  EXPECT_EQ(follower.counts().over_budget, 10000u - kEgressRecordsPerHour);
  // The hour rolls: the budget is back, spent as it was spent an hour before.
  feed(10000, 10400);
  follower.stop();
  note();
  events = sink.wait_for(100000, 0ms);
  single = 0;
  total = 0;
  for (const auto& e : events) total += is_summary(e) ? summed(e) : (++single, 1);
  EXPECT_EQ(total, 10400u);  // every refusal reported, one by one or summed up
  EXPECT_GT(single, kEgressRecordsPerHour);
  EXPECT_LE(single, 2 * kEgressRecordsPerHour);
  // In any hour: at most the budget one by one, and a summary a minute.
  for (std::size_t i = 0; i < events.size(); ++i) {
    std::size_t n = 0;
    for (std::size_t j = i; j < events.size() && when[j] - when[i] < kEgressBudgetWindow; ++j)
      n += is_summary(events[j]) ? 0 : 1;
    ASSERT_LE(n, kEgressRecordsPerHour) << "from event " << i;
  }
}

TEST(EgressLogFollower, ASummaryNamesAFewHostsEscapedAndBounded) {
  FakeEngine engine;
  FakeClock clock;
  EgressLogFollower follower(engine, "p", policy(), nullptr, clock.fn());
  Sink sink;
  follower.subscribe(&sink);
  std::string flood;
  for (std::size_t i = 0; i < kEgressRecordsPerHour; ++i)
    flood += line(at_ms(static_cast<std::int64_t>(i)), "spent" + std::to_string(i), 80, true);
  for (int i = 0; i < 20; ++i)
    flood +=
        line(at_ms(1000 + i), "evil\x1b[31m\xc2\x9b" + std::to_string(i) + std::string(300, 'a'),
             80 + i, true, "M" + std::string(40, 'X'));
  follower.take(flood);
  clock.now += 1s;
  follower.stop();
  const auto events = sink.wait_for(100000, 0ms);
  ASSERT_EQ(events.size(), kEgressRecordsPerHour + 1);
  const auto& s = events.back();
  EXPECT_EQ(s.host, "*");
  EXPECT_TRUE(
      s.reason.starts_with("summary of 20 refusals (not in this agent's egress allow "
                           "list) not reported one by one: 20 over this sandbox's budget "
                           "of 300 an hour; hosts: evil\\x1b[31m\\xc2\\x9b"))
      << s.reason;
  EXPECT_TRUE(s.reason.ends_with(" and more")) << s.reason;
  EXPECT_FALSE(has(s.reason, "\x1b"));
  EXPECT_LT(s.reason.size(), 512u) << s.reason;  // the most the host keeps of a reason
}

TEST(EgressLogFollower, AFloodIsStillCountedWholeInTheNotice) {
  FakeEngine engine;
  EgressLogFollower follower(engine, "p", policy(), nullptr);
  const auto mark = follower.mark();
  std::string flood;
  for (int i = 0; i < 1000; ++i)
    flood += line(at(10, i + 1), "h" + std::to_string(i % 7), 80, true);
  follower.take(flood);
  follower.take(line(at(11), "late.test", 443, true));
  EXPECT_EQ(follower.counts().refusals, 1001u);
  // The notice stays short: a few hosts, the count, and that more were refused.
  const auto notice = follower.notice(mark, 0ms);
  EXPECT_TRUE(notice.starts_with("the egress proxy refused 1001 requests: ")) << notice;
  EXPECT_TRUE(has(notice, " and more (not in this agent's egress allow list")) << notice;
  EXPECT_LT(notice.size(), 300u);
}

TEST(EgressLogFollower, TheNoticeNamesACallsRefusalsAndTheAllowList) {
  FakeEngine engine;
  EgressLogFollower follower(engine, "p", policy(), nullptr);
  follower.take(line(at(1), "before.test", 80, true));
  const auto mark = follower.mark();
  EXPECT_EQ(follower.notice(mark, 0ms), "");
  follower.take(line(at(2), "denied.test", 443, true, "CONNECT"));
  EXPECT_EQ(follower.notice(mark, 0ms),
            "the egress proxy refused a request: denied.test:443 (not in this agent's egress "
            "allow list; allow: allowed.test, *.npmjs.org)");
  std::string more;
  for (int i = 0; i < 5; ++i) more += line(at(3, i), "h" + std::to_string(i) + ".test", 80, true);
  more += line(at(4), "denied.test", 443, true);
  follower.take(more);
  EXPECT_EQ(follower.notice(mark, 0ms),
            "the egress proxy refused 7 requests: denied.test:443, h0.test:80, h1.test:80 and 3 "
            "more (not in this agent's egress allow list; allow: allowed.test, *.npmjs.org)");
}

TEST(EgressLogFollower, FollowsAcrossAProxyRestartAndStopsCleanly) {
  FakeEngine engine;
  auto feed = engine.log_feed("p");
  EgressLogFollower follower(engine, "p", policy(), nullptr);
  Sink sink;
  follower.subscribe(&sink);
  follower.start();
  EXPECT_TRUE(follower.running());
  feed->push(line(at(1), "one.test", 80, true));
  ASSERT_EQ(sink.wait_for(1).size(), 1u);
  // The proxy restarts: the stream ends, the follower opens another from where it was (the
  // fake engine replays the whole log: nothing is delivered twice).
  feed->end_streams();
  for (int i = 0; i < 100 && feed->follows() < 2; ++i) std::this_thread::sleep_for(20ms);
  ASSERT_GE(feed->follows(), 2);
  EXPECT_EQ(feed->last_since(), follower.since());
  EXPECT_FALSE(feed->last_since().empty());
  feed->push(line(at(2), "two.test", 80, true));
  const auto events = sink.wait_for(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].host, "two.test");
  // A proxy that is gone for a while: retried, then followed again.
  feed->set_missing(true);
  feed->end_streams();
  std::this_thread::sleep_for(300ms);
  feed->set_missing(false);
  feed->push(line(at(3), "three.test", 80, true));
  EXPECT_EQ(sink.wait_for(3).size(), 3u);

  const auto started = std::chrono::steady_clock::now();
  follower.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1s);
  EXPECT_FALSE(follower.running());
  const int follows = feed->follows();
  feed->push(line(at(4), "four.test", 80, true));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(sink.wait_for(4, 0ms).size(), 3u);
  EXPECT_EQ(feed->follows(), follows);
  follower.stop();  // idempotent
}

TEST(EgressLogFollower, UnsubscribedEventsGoNowhere) {
  FakeEngine engine;
  EgressLogFollower follower(engine, "p", policy(), nullptr);
  Sink sink;
  follower.subscribe(&sink);
  follower.subscribe(nullptr);
  follower.take(line(at(1), "denied.test", 80, true));
  EXPECT_TRUE(sink.wait_for(1, 0ms).empty());
  EXPECT_EQ(follower.counts().refusals, 1u);  // still counted for the notice
}

class EgressFollowerLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/execmcp-egresslog-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    workspace_ = pattern;
    init_.agent_id = "agent";
    init_.instance_id = "unit";
    init_.cwd = workspace_;
    init_.paths = {{workspace_, true}};
    settings_.user = "1000:1000";
    settings_.exec_mode = ExecMode::Exec;
    settings_.network = "egress";
    settings_.egress = policy();
    settings_.egress->upstream_network = "uplink";
    engine_ = new FakeEngine;
    engine_->images.insert(settings_.image);
    engine_->images.insert(kEgressImage);
    engine_->networks["uplink"] = {"net-uplink", "uplink", "bridge", false, {}, {}, {}};
    proxy_ = container_name(init_.agent_id, init_.instance_id) + "-egress";
  }
  void TearDown() override {
    backend_.reset();
    std::error_code ec;
    std::filesystem::remove_all(workspace_, ec);
  }
  void make() {
    backend_ = std::make_unique<ContainerBackend>(init_, "docker-test", settings_,
                                                  std::unique_ptr<Engine>(engine_));
  }

  std::string workspace_;
  sdk::BackendInit init_;
  DockerSettings settings_;
  FakeEngine* engine_ = nullptr;  // owned by backend_ once made
  std::unique_ptr<ContainerBackend> backend_;
  std::string proxy_;
};

TEST_F(EgressFollowerLifecycleTest, TheBackendReportsRefusalsFromStartToCleanup) {
  make();
  auto* events = sdk::network_events(*backend_);
  ASSERT_NE(events, nullptr);
  Sink sink;
  events->subscribe(&sink);
  auto feed = engine_->log_feed(proxy_);
  ASSERT_EQ(backend_->start(), "");
  feed->push(line(at(1), "denied.test", 80, true));
  ASSERT_EQ(sink.wait_for(1).size(), 1u);

  // A suspended agent's follower stops with its proxy and follows again at the resume.
  auto* control = sdk::sandbox_control(*backend_);
  ASSERT_EQ(control->suspend(), "");
  const int follows = feed->follows();
  feed->push(line(at(2), "while.test", 80, true));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(feed->follows(), follows);
  ASSERT_EQ(control->resume(), "");
  EXPECT_EQ(sink.wait_for(2).size(), 2u);  // what it logged meanwhile is read then

  backend_->cleanup();
  events->subscribe(nullptr);
  const int after = feed->follows();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(feed->follows(), after);
}

TEST_F(EgressFollowerLifecycleTest, AnAgentWithoutEgressOffersNoEvents) {
  settings_.network = "none";
  settings_.egress.reset();
  make();
  EXPECT_EQ(sdk::network_events(*backend_), nullptr);
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
