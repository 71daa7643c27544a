// McpService: one answer per call whatever throws, limits released on every path, and each
// client's calls reachable only through its own session.
#include "mcp/mcp_service.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "fake_agent.hpp"
#include "transport/stdio/memory_transport.hpp"
#include "transport/stdio/session.hpp"

namespace execmcp::host::mcp {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using testing::FakeAgent;

constexpr auto kWait = 10s;

tools::Tool tool_that(std::string name, std::function<tools::ToolOutcome()> run) {
  tools::Tool tool;
  tool.name = std::move(name);
  tool.input_schema = json{{"type", "object"}};
  tool.output_schema = json{{"type", "object"}};
  tool.run = [run = std::move(run)](const json&, tools::ToolContext&) { return run(); };
  return tool;
}

// Collects what a call's Responder sends.
struct Answers {
  std::mutex mutex;
  std::vector<json> messages;
  std::promise<void> first;
  bool fulfilled = false;

  Responder responder(int id) {
    return Responder(id, "tools/call", [this](const json& message) {
      std::lock_guard lock(mutex);
      messages.push_back(message);
      if (!std::exchange(fulfilled, true)) first.set_value();
    });
  }
};

// A review found that a tool throwing anything but std::exception escaped the call's try block
// and ended in std::terminate on the worker, and that the slot and the call's entry leaked on
// such paths. Every exit now goes through one guard.
TEST(McpServiceGuards, AToolThrowingAnythingIsAnsweredAndReleasesItsSlot) {
  FakeAgent agent;
  ServiceOptions options;
  options.max_concurrent_calls = 1;  // a leaked slot would hang the next call
  std::vector<tools::Tool> tools{
      tool_that("throws_int", []() -> tools::ToolOutcome { throw 42; }),
      tool_that("throws_runtime", []() -> tools::ToolOutcome { throw std::runtime_error("boom"); }),
      tool_that("ok", [] {
        return tools::ToolOutcome{tools::ToolResult{"fine", nullptr, false}};
      })};
  McpService service(options, tools);
  for (const char* name : {"throws_int", "throws_runtime", "throws_int", "ok"}) {
    SCOPED_TRACE(name);
    Answers answers;
    std::atomic<int> finished{0};
    std::atomic<int> answered{0};
    McpService::ToolCall call{CallerContext{&agent, "test", "2025-06-18", {}, nullptr},
                              Request{1, "tools/call", json{{"name", name}}},
                              answers.responder(1),
                              std::make_shared<CallState>(),
                              {},
                              {},
                              [&] { ++finished; },
                              [&] { ++answered; }};
    auto got = answers.first.get_future();
    service.call_tool(std::move(call));
    ASSERT_EQ(got.wait_for(kWait), std::future_status::ready) << "no answer: a slot leaked?";
    // `answered` runs, and the slot is released, on the worker just after the answer.
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while ((answered.load() == 0 || service.calls_in_flight() != 0) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    std::this_thread::sleep_for(20ms);  // a second answer would arrive now
    std::lock_guard lock(answers.mutex);
    ASSERT_EQ(answers.messages.size(), 1u);
    const json& message = answers.messages[0];
    if (std::string(name) == "ok") {
      EXPECT_EQ(message["result"]["content"][0]["text"], "fine");
    } else {
      EXPECT_EQ(message["error"]["code"], rpc_error::kInternalError) << message.dump();
    }
    EXPECT_EQ(finished.load(), 1);
    EXPECT_EQ(answered.load(), 1);
  }
  EXPECT_EQ(service.calls_in_flight(), 0u);
}

TEST(McpServiceGuards, PerAgentLimitRefusesWithoutTakingAGlobalSlot) {
  FakeAgent agent;
  ServiceOptions options;
  options.max_concurrent_calls = 4;
  options.max_calls_per_agent = 1;
  // Declared before the service: its destructor joins the workers that answer into them.
  Answers slow;
  Answers refused;
  McpService service(options);
  auto make_call = [&](Answers& answers, const std::string& command) {
    return McpService::ToolCall{
        CallerContext{&agent, "test", "2025-06-18", {}, nullptr},
        Request{1, "tools/call",
                json{{"name", "execute_command"}, {"arguments", {{"command", command}}}}},
        answers.responder(1),
        std::make_shared<CallState>(),
        {},
        {},
        {},
        {}};
  };
  auto slow_call = make_call(slow, "slow");
  auto slow_state = slow_call.state;
  service.call_tool(std::move(slow_call));
  ASSERT_TRUE(agent.wait_slow_started(1, kWait));
  auto got = refused.first.get_future();
  service.call_tool(make_call(refused, "echo hi"));
  ASSERT_EQ(got.wait_for(kWait), std::future_status::ready);
  {
    std::lock_guard lock(refused.mutex);
    EXPECT_EQ(refused.messages[0]["error"]["code"], kServerBusy);
    EXPECT_EQ(refused.messages[0]["error"]["data"]["limit"], "agent");
  }
  slow_state->cancel.request_cancel();
  ASSERT_TRUE(agent.wait_slow_finished(1, kWait));
}

// Two clients on one service (as on the shared HTTP server) both use id 1: a cancel from one
// reaches only its own call.
TEST(McpServiceIsolation, AClientsCancelNeverReachesAnotherClientsCallWithTheSameId) {
  FakeAgent agent;
  ServerOptions options;
  McpService service(service_options(options));
  MemoryTransport a_transport;
  MemoryTransport b_transport;
  auto a = std::make_unique<Session>(agent, a_transport, options, service);
  auto b = std::make_unique<Session>(agent, b_transport, options, service);
  auto a_done = std::async(std::launch::async, [&] { return a->run(); });
  auto b_done = std::async(std::launch::async, [&] { return b->run(); });
  const std::string slow_call =
      json{{"jsonrpc", "2.0"},
           {"id", 1},
           {"method", "tools/call"},
           {"params", {{"name", "execute_command"}, {"arguments", {{"command", "slow"}}}}}}
          .dump();
  a_transport.push_line(slow_call);
  b_transport.push_line(slow_call);
  ASSERT_TRUE(agent.wait_slow_started(2, kWait));
  a_transport.push_line(json{
      {"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 1}}}}
                            .dump());
  ASSERT_TRUE(agent.wait_slow_finished(1, kWait));
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(agent.wait_slow_finished(2, 0ms)) << "B's call was cancelled by A";
  b_transport.end_input();  // ends B, cancelling its call
  ASSERT_EQ(b_done.wait_for(kWait), std::future_status::ready);
  const auto b_answer = b_transport.wait_for_response(1, kWait);
  ASSERT_TRUE(b_answer.has_value());
  EXPECT_EQ((*b_answer)["result"]["structuredContent"]["cancelled"], true);
  a_transport.end_input();
  ASSERT_EQ(a_done.wait_for(kWait), std::future_status::ready);
  EXPECT_FALSE(a_transport.wait_for_response(1, 0ms).has_value())
      << "a call the client cancelled gets no response";
  a.reset();
  b.reset();
}

}  // namespace
}  // namespace execmcp::host::mcp
