// Tests of ContainerEvents and the StopCheck over it, against FakeEngine: an event line parsed in
// Docker's and Podman's shape, split at every byte, bounded; a death event ends a command's stop
// check at once; a refused or dropped stream falls back to polling, says why once, and comes back.
#include "docker_common/commands/container_events.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "container_test_fixture.hpp"
#include "docker_common/commands/container_probe.hpp"
#include "docker_common/commands/exec_command_path.hpp"
#include "fake_engine.hpp"
#include "lifecycle_test_support.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using namespace std::chrono_literals;
using test_support::has;
using Clock = std::chrono::steady_clock;

std::string docker_event(const std::string& action, const std::string& exit_code = "",
                         const std::string& name = "c") {
  std::string attrs = R"("name":")" + name + R"(","image":"i")";
  if (!exit_code.empty()) attrs += R"(,"exitCode":")" + exit_code + "\"";
  return R"({"status":")" + action + R"(","id":"abc","Type":"container","Action":")" + action +
         R"(","Actor":{"ID":"abc","Attributes":{)" + attrs +
         R"(}},"scope":"local","time":1700000000,"timeNano":1700000000000000000})" + "\n";
}

TEST(ContainerEventParse, ReadsDockersAndPodmansShapes) {
  auto die = parse_container_event(docker_event("die", "137"));
  ASSERT_TRUE(die);
  EXPECT_EQ(die->kind, ContainerEvent::Kind::kDie);
  EXPECT_EQ(die->exit_code, 137);
  auto podman = parse_container_event(
      R"({"ID":"abc","Name":"c","Status":"died","Type":"container","ContainerExitCode":2})");
  ASSERT_TRUE(podman);
  EXPECT_EQ(podman->kind, ContainerEvent::Kind::kDie);
  EXPECT_EQ(podman->exit_code, 2);
  EXPECT_EQ(podman->name, "c");
  EXPECT_EQ(die->name, "c");
  EXPECT_EQ(parse_container_event(docker_event("oom"))->kind, ContainerEvent::Kind::kOom);
  EXPECT_EQ(parse_container_event(docker_event("kill"))->kind, ContainerEvent::Kind::kKill);
  EXPECT_EQ(parse_container_event(docker_event("destroy"))->kind, ContainerEvent::Kind::kDestroy);
  // Not ours: another action, another type, not JSON, an exit code that is not a number.
  EXPECT_FALSE(parse_container_event(docker_event("exec_die")));
  EXPECT_FALSE(parse_container_event(R"({"Type":"network","Action":"die"})"));
  EXPECT_FALSE(parse_container_event(R"({"Type":"container","Action":"die")"));
  EXPECT_FALSE(parse_container_event("[1,2]"));
  EXPECT_FALSE(parse_container_event(docker_event("die", "x7"))->exit_code);
}

TEST(ContainerEventsTake, AStreamSplitAtEveryByteGivesTheSameEvents) {
  const std::string stream = docker_event("kill") + docker_event("die", "137") + "\n";
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    FakeEngine engine;
    ContainerEvents events(engine, "c", {});
    const auto taken =
        events.take(std::string_view(stream).substr(0, cut)) + events.take(stream.substr(cut));
    EXPECT_EQ(taken, 2u) << "cut at " << cut;
    EXPECT_EQ(events.mark().deaths, 1u);
    const auto death = events.last_death();
    EXPECT_EQ(death.exit_code, 137);
    EXPECT_TRUE(death.killed);
    EXPECT_FALSE(death.oom);
    EXPECT_EQ(events.counts().malformed, 0u);
  }
}

TEST(ContainerEventsTake, AnotherContainersEventsAreSkipped) {
  FakeEngine engine;
  ContainerEvents events(engine, "execmcp-a-t1", {});
  // The engine's filter matched by prefix.
  events.take(docker_event("die", "0", "execmcp-a-t12") + docker_event("die", "0", "other"));
  EXPECT_EQ(events.mark().deaths, 0u);
  EXPECT_EQ(events.counts().others, 2u);
  events.take(docker_event("die", "3", "execmcp-a-t1"));
  EXPECT_EQ(events.mark().deaths, 1u);
  EXPECT_EQ(events.last_death().exit_code, 3);
}

TEST(ContainerEventsTake, OversizedAndMalformedLinesAreCountedAndSkipped) {
  FakeEngine engine;
  ContainerEvents events(engine, "c", {});
  // A line past the bound, fed in pieces, then garbage, then an event: only the event counts.
  const std::string big(kEventLineMax / 4, 'x');
  for (int i = 0; i < 6; ++i) events.take(big);
  events.take("\n{not json\n\x01\x02\xff\n");
  events.take(docker_event("oom") + docker_event("die", "137"));
  const auto counts = events.counts();
  EXPECT_EQ(counts.oversized, 1u);
  EXPECT_EQ(counts.malformed, 2u);
  EXPECT_EQ(counts.events, 2u);
  EXPECT_TRUE(events.last_death().oom);
}

// A container whose runtime may leave its execs' streams open (gVisor, or a runtime the engine
// would not list): commands check whether it still runs.
class StopCheckEventsTest : public test_support::ContainerTest {
 protected:
  void SetUp() override {
    test_support::ContainerTest::SetUp();
    if (HasFatalFailure()) return;
    settings_.runtime = "runsc";
    engine_.runtime_list = {{"runsc", {"/usr/bin/runsc", {"--network=none"}}}};
    // As a socket proxy: the runtime cannot be told apart, so the container is watched.
    engine_.runtimes_error = EngineError::of(EngineError::Kind::kOther, "403 denied");
    lifecycle_ = make_lifecycle();
    ASSERT_EQ(lifecycle_->start(), "");
    ASSERT_TRUE(lifecycle_->execs_outlive_container());
    engine_.calls.clear();
    // Whether the container runs, as the call's thread inspects it while the test's changes it.
    engine_.on_inspect = [this](ContainerInfo& c) {
      c.state.running = !died_.load();
      if (died_) c.state.exit_code = exit_code_.load();
      ++inspects_;
    };
  }
  ContainerEvents::LogFn recorder() {
    return [this](sdk::LogLevel level, const std::string& line) {
      std::lock_guard lock(log_mutex_);
      log_.push_back((level == sdk::LogLevel::Info ? "info: " : "other: ") + line);
    };
  }
  std::vector<std::string> log() {
    std::lock_guard lock(log_mutex_);
    return log_;
  }
  // Waits until the events' stream is open (or not, `live`).
  static ContainerEvents::Mark wait_live(const ContainerEvents& events, bool live) {
    auto m = events.mark();
    const auto end = Clock::now() + 5s;
    while (m.live != live && Clock::now() < end) m = events.wait_change(m, 100ms);
    return m;
  }
  const std::string& name() const { return lifecycle_->name(); }

  std::unique_ptr<ContainerLifecycle> lifecycle_;
  std::atomic<bool> died_{false};
  std::atomic<int> exit_code_{137};
  std::atomic<int> inspects_{0};
  std::mutex log_mutex_;
  std::vector<std::string> log_;
};

TEST_F(StopCheckEventsTest, ADeathEventEndsTheCheckAtOnceWithoutPolling) {
  ContainerEvents events(engine_, name(), recorder());
  events.start();
  const auto live = wait_live(events, true);
  ASSERT_TRUE(live.live);
  EXPECT_EQ(engine_.event_feed->last_name(), name());
  StopCheck check(*lifecycle_, &events);
  // Stopped without an event: not asked for (the next look is kEveryWithEvents away).
  died_ = true;
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(check.stopped());
  EXPECT_EQ(inspects_.load(), 0);
  engine_.event_feed->push(docker_event("die", "137", name()));
  events.wait_change(live, 2s);
  const auto at = Clock::now();
  EXPECT_TRUE(check.stopped());
  EXPECT_LT(Clock::now() - at, 100ms);
  EXPECT_EQ(inspects_.load(), 1);
}

TEST_F(StopCheckEventsTest, AReplayedDeathOfARunningContainerIsCheckedOnceAndIgnored) {
  ContainerEvents events(engine_, name(), {});
  events.start();
  const auto live = wait_live(events, true);
  StopCheck check(*lifecycle_, &events);
  engine_.event_feed->push(docker_event("die", "0", name()));  // an earlier incarnation's
  events.wait_change(live, 2s);
  EXPECT_FALSE(check.stopped());
  EXPECT_EQ(inspects_.load(), 1);
  EXPECT_FALSE(check.stopped());
  EXPECT_EQ(inspects_.load(), 1);
}

TEST_F(StopCheckEventsTest, ARefusedStreamFallsBackToPollingAndSaysWhyOnce) {
  engine_.event_feed->refuse(EngineError::of(EngineError::Kind::kOther, "403 denied by the proxy"));
  ContainerEvents events(engine_, name(), recorder());
  events.start();
  StopCheck check(*lifecycle_, &events);
  // Tried again with a growing pause: 250 ms, 500 ms, ...
  const auto end = Clock::now() + 3s;
  while (engine_.event_feed->follows() < 3 && Clock::now() < end) std::this_thread::sleep_for(20ms);
  EXPECT_GE(engine_.event_feed->follows(), 3);
  EXPECT_FALSE(events.mark().live);
  const auto lines = log();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has(lines[0], "info: following the engine's events of container " + name()))
      << lines[0];
  EXPECT_TRUE(has(lines[0], "403 denied by the proxy")) << lines[0];
  EXPECT_TRUE(has(lines[0], "once a second")) << lines[0];
  // Polled: a stop without any event is seen within about a second.
  died_ = true;
  const auto from = Clock::now();
  while (!check.stopped() && Clock::now() - from < 3s) std::this_thread::sleep_for(20ms);
  EXPECT_LT(Clock::now() - from, 1500ms);
  EXPECT_GE(inspects_.load(), 1);
}

TEST_F(StopCheckEventsTest, ADroppedStreamIsPolledUntilItComesBack) {
  ContainerEvents events(engine_, name(), recorder());
  events.start();
  const auto first = wait_live(events, true);
  StopCheck check(*lifecycle_, &events);
  // The engine restarts: the stream ends and cannot be opened for a while.
  engine_.event_feed->refuse(EngineError::of(EngineError::Kind::kUnreachable, "cannot connect"));
  engine_.event_feed->end_streams();
  ASSERT_FALSE(wait_live(events, false).live);
  EXPECT_FALSE(check.stopped());  // the end of the stream: one look
  EXPECT_EQ(inspects_.load(), 1);
  // It is back: a new stream, and the check looks once more (a death in the gap).
  engine_.event_feed->refuse(std::nullopt);
  const auto again = wait_live(events, true);
  ASSERT_TRUE(again.live);
  EXPECT_GT(again.epoch, first.epoch);
  EXPECT_FALSE(check.stopped());
  EXPECT_EQ(inspects_.load(), 2);
  died_ = true;
  engine_.event_feed->push(docker_event("die", "137", name()));
  events.wait_change(again, 2s);
  EXPECT_TRUE(check.stopped());
  bool said_again = false;
  for (const auto& line : log()) said_again |= has(line, "again");
  EXPECT_TRUE(said_again);
}

TEST_F(StopCheckEventsTest, StopEndsTheThreadAtOnce) {
  ContainerEvents events(engine_, name(), {});
  events.start();
  wait_live(events, true);
  const auto at = Clock::now();
  events.stop();
  EXPECT_LT(Clock::now() - at, 500ms);
  EXPECT_FALSE(events.mark().live);
  events.stop();   // idempotent
  events.start();  // and it can follow again
  EXPECT_TRUE(wait_live(events, true).live);
}

// The whole call: an exec whose stream never ends (gVisor) ends when the die event comes.
TEST_F(StopCheckEventsTest, ACallEndsWhenItsContainerDies) {
  engine_.endless_execs = true;
  ExecProbe probe(*lifecycle_);
  ExecCommandPath path(*lifecycle_, probe);
  ContainerCommand c;
  c.script = "sleep 30";
  c.work_dir = workspace_;
  c.marker = "m";
  c.timeout = 20s;
  Clock::time_point died_at;
  std::thread killer([&] {
    // Once the call's check follows the events, the container dies.
    const auto end = Clock::now() + 5s;
    while (engine_.event_feed->follows() == 0 && Clock::now() < end)
      std::this_thread::sleep_for(10ms);
    std::this_thread::sleep_for(300ms);
    died_ = true;
    died_at = Clock::now();
    engine_.event_feed->push(docker_event("kill", "", name()) + docker_event("die", "137", name()));
  });
  const auto r = path.run_once(c);
  const auto ended = Clock::now();
  killer.join();
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(ended - died_at, 300ms) << "the call noticed the death late";
  // Killed through the engine (a kill event before the die): no wait for an OOM event.
  sdk::ExecResult result = r;
  const auto at = Clock::now();
  KillExplainer(*lifecycle_, probe, &path.events()).explain(result);
  EXPECT_LT(Clock::now() - at, 1s);
  ASSERT_EQ(result.notices.size(), 1u);
  EXPECT_TRUE(has(result.notices[0], "exited with code 137, OOMKilled=false")) << result.notices[0];
  path.stop();
}

// The engine's oom event says what its inspect says only later.
TEST_F(StopCheckEventsTest, AnOomEventIsReportedWithoutWaitingForTheInspect) {
  ExecProbe probe(*lifecycle_);
  ExecCommandPath path(*lifecycle_, probe);
  const auto check = path.stop_check();  // starts following
  (void)check;
  const auto end = Clock::now() + 5s;
  while (engine_.event_feed->follows() == 0 && Clock::now() < end)
    std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(100ms);
  died_ = true;
  engine_.event_feed->push(docker_event("oom", "", name()) + docker_event("die", "137", name()));
  std::this_thread::sleep_for(300ms);
  sdk::ExecResult result;
  result.exit_code = 137;
  KillExplainer(*lifecycle_, probe, &path.events()).explain(result);
  ASSERT_EQ(result.notices.size(), 1u);
  EXPECT_TRUE(has(result.notices[0], "exited with code 137, OOMKilled=true")) << result.notices[0];
  path.stop();
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
