// Tests of LazyAgent: a slow start never blocks who only asks for the state, and holds at most a
// few callers (each a call worker) while it runs.
#include "agent/lazy_agent.hpp"

#include <gtest/gtest.h>

#include <future>
#include <thread>
#include <vector>

#include "gated_backend.hpp"

namespace execmcp::host {
namespace {

using namespace std::chrono_literals;
using testing::StartGate;

// Issue 17: started() took the start's mutex, so a /metrics gauge on an HTTP I/O thread waited for
// a start (a preinstall build, an engine that is down): two scrapes froze the server.
TEST(LazyAgent, StartedIsAnsweredWhileAStartIsSlow) {
  auto gate = std::make_shared<StartGate>();
  auto agent = testing::make_gated_agent("alpha", gate);
  LazyAgent lazy(*agent);
  std::thread starter([&] { EXPECT_EQ(lazy.ensure_started(), ""); });
  ASSERT_TRUE(gate->wait_waiting(1, 10s));
  auto asked = std::async(std::launch::async, [&] { return lazy.started(); });
  const bool answered = asked.wait_for(100ms) == std::future_status::ready;
  EXPECT_TRUE(answered) << "started() waited for the start";
  gate->open();
  starter.join();
  if (answered) {
    EXPECT_FALSE(asked.get());
  }
  EXPECT_TRUE(lazy.started());
  EXPECT_EQ(gate->starts, 1);
}

// Every caller waiting for a start holds a call worker: past the bound they are answered at once,
// so one agent's slow start cannot take every worker from the other agents.
TEST(LazyAgent, ASlowStartHoldsAtMostItsWaiters) {
  auto gate = std::make_shared<StartGate>();
  auto agent = testing::make_gated_agent("alpha", gate);
  LazyAgent lazy(*agent);  // 4 waiters by default
  std::thread starter([&] { EXPECT_EQ(lazy.ensure_started(), ""); });
  ASSERT_TRUE(gate->wait_waiting(1, 10s));
  std::vector<std::future<std::string>> calls;
  for (int i = 0; i < 8; ++i) {
    calls.push_back(std::async(std::launch::async, [&] { return lazy.ensure_started(); }));
  }
  // Three more may wait with the starter; the other five are answered while the start blocks.
  std::vector<std::string> answers;
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (answers.size() < 5 && std::chrono::steady_clock::now() < deadline) {
    answers.clear();
    for (auto& call : calls) {
      if (call.wait_for(0ms) == std::future_status::ready) answers.emplace_back("ready");
    }
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(answers.size(), 5u) << "callers beyond the bound waited for the start";
  gate->open();
  starter.join();
  int refused = 0;
  for (auto& call : calls) {
    const std::string error = call.get();
    if (!error.empty()) {
      ++refused;
      EXPECT_NE(error.find("is still starting"), std::string::npos) << error;
    }
  }
  EXPECT_EQ(refused, 5);
  EXPECT_EQ(gate->starts, 1);
}

TEST(LazyAgent, StateSaysNotStartedStartingFailedAndStarted) {
  auto gate = std::make_shared<StartGate>();
  auto agent = testing::make_gated_agent("alpha", gate);
  LazyAgent lazy(*agent, 0ms);
  EXPECT_EQ(lazy.state(), LazyAgent::State::kNotStarted);
  std::string first;
  std::thread starter([&] { first = lazy.ensure_started(); });
  ASSERT_TRUE(gate->wait_waiting(1, 10s));
  EXPECT_EQ(lazy.state(), LazyAgent::State::kStarting);
  gate->open("engine unreachable");
  starter.join();
  EXPECT_NE(first.find("engine unreachable"), std::string::npos) << first;
  EXPECT_EQ(lazy.state(), LazyAgent::State::kFailed);
  gate->open();
  EXPECT_EQ(lazy.ensure_started(), "") << "retried (no pause)";
  EXPECT_EQ(lazy.state(), LazyAgent::State::kStarted);
  EXPECT_EQ(gate->starts, 2);
}

}  // namespace
}  // namespace execmcp::host
