// CallTable, the one call table of every transport, and McpRouter's table and cancel path: a
// cancel reaches only its own id, a released id can name a new call at once, shutdown reaches
// calls added after it, and waiting ends when the last call is done.
#include "mcp/call_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>

#include "mcp/fake_agent.hpp"
#include "mcp/mcp_router.hpp"
#include "mcp/protocol.hpp"

namespace execmcp::host::mcp {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(CallTable, ACancelReachesOnlyItsOwnIdAndSaysTheClientGaveUp) {
  CallTable table;
  auto one = std::make_shared<CallState>();
  auto two = std::make_shared<CallState>();
  ASSERT_TRUE(table.add("1", one));
  ASSERT_TRUE(table.add("\"1\"", two));  // the string id "1" is another id
  EXPECT_FALSE(table.cancel("3"));
  EXPECT_TRUE(table.cancel("1"));
  EXPECT_TRUE(one->cancel.cancel_requested());
  EXPECT_TRUE(one->cancelled_by_client.load());
  EXPECT_FALSE(two->cancel.cancel_requested());
}

TEST(CallTable, AnIdInUseIsRefusedUntilReleasedButTheCallStaysUntilDone) {
  CallTable table;
  auto first = std::make_shared<CallState>();
  auto second = std::make_shared<CallState>();
  ASSERT_TRUE(table.add("7", first));
  EXPECT_FALSE(table.add("7", second));
  table.release("7", *first);
  ASSERT_TRUE(table.add("7", second)) << "a released id names a new call at once";
  // The first call's late release or done must not drop the second call's id.
  table.release("7", *first);
  table.done("7", *first);
  EXPECT_FALSE(table.empty());
  EXPECT_TRUE(table.cancel("7"));
  EXPECT_TRUE(second->cancel.cancel_requested());
  EXPECT_FALSE(first->cancelled_by_client.load());
  table.done("7", *second);
  EXPECT_TRUE(table.empty());
}

TEST(CallTable, CancelAllReachesRunningCallsAndThoseAddedLater) {
  CallTable table;
  auto running = std::make_shared<CallState>();
  ASSERT_TRUE(table.add("a", running));
  table.release("a", *running);  // answered, not done yet: still reached
  table.cancel_all();
  EXPECT_TRUE(table.stopping());
  EXPECT_TRUE(running->cancel.cancel_requested());
  EXPECT_FALSE(running->cancelled_by_client.load()) << "shutdown is not the client's cancel";
  auto late = std::make_shared<CallState>();
  ASSERT_TRUE(table.add("b", late));
  EXPECT_TRUE(late->cancel.cancel_requested());
}

TEST(CallTable, WaitIdleEndsWhenTheLastCallIsDoneOrTimesOut) {
  CallTable table;
  EXPECT_TRUE(table.wait_idle(0ms));
  auto state = std::make_shared<CallState>();
  ASSERT_TRUE(table.add("x", state));
  EXPECT_FALSE(table.wait_idle(20ms));
  auto waiter = std::async(std::launch::async, [&] { return table.wait_idle(); });
  std::this_thread::sleep_for(20ms);
  table.done("x", *state);
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
}

TEST(McpRouter, TheTableListsEveryMethodOnce) {
  const auto methods = McpRouter::request_methods();
  for (const char* method : {"initialize", "ping", "server/discover", "tools/list", "tools/call"}) {
    EXPECT_EQ(std::count(methods.begin(), methods.end(), method), 1) << method;
  }
}

// What the router answers without a transport: a request in the stateless revision for a
// handshake-only method, an unknown method in each revision, a notification for no call.
TEST(McpRouter, AnswersByRevisionAndMethod) {
  testing::FakeAgent agent;
  McpService service(ServiceOptions{});
  McpRouter router(service);
  auto answer = [&](const std::string& method, json params, std::string session_revision) {
    json out;
    Responder responder(1, method, [&](const json& message) { out = message; });
    McpRouter::Context context;
    context.caller = CallerContext{&agent, "test", std::move(session_revision), {}, nullptr};
    router.handle(Request{1, method, std::move(params)}, responder, std::move(context));
    return out;
  };
  const json stateless{{"_meta",
                        {{protocol::kMetaProtocolVersion, protocol::kStateless},
                         {protocol::kMetaClientCapabilities, json::object()}}}};
  EXPECT_EQ(answer("ping", json::object(), "2025-06-18")["result"], json::object());
  EXPECT_EQ(answer("ping", stateless, "")["error"]["code"], rpc_error::kMethodNotFound);
  EXPECT_EQ(answer("initialize", stateless, "")["error"]["code"], rpc_error::kMethodNotFound);
  const json unknown = answer("resources/list", stateless, "");
  EXPECT_EQ(unknown["error"]["code"], rpc_error::kMethodNotFound);
  EXPECT_NE(unknown["error"]["message"].get<std::string>().find(
                "here serves server/discover, tools/list and tools/call"),
            std::string::npos)
      << unknown;
  EXPECT_EQ(answer("tools/list", stateless, "")["result"]["resultType"], "complete");
  // The session's revision serves a request without _meta; nothing of it leaks into the result.
  EXPECT_FALSE(answer("tools/list", json::object(), "2025-06-18")["result"].contains("resultType"));
  McpRouter::notify(Notification{"notifications/cancelled", json{{"requestId", 1}}}, nullptr);
}

// A tools/call reaches the transport with the tool it resolves to, so the transport's metrics
// label it without asking the service; a made-up name is "unknown" (no new series).
TEST(McpRouter, ATransportIsToldTheToolACallResolvesTo) {
  testing::FakeAgent agent;
  McpService service(ServiceOptions{});
  McpRouter router(service);
  auto label = [&](const std::string& name) {
    std::string told = "(not asked)";
    Responder responder(1, "tools/call", [](const json&) {});
    McpRouter::Context context;
    context.caller = CallerContext{&agent, "test", "2025-06-18", {}, nullptr};
    context.start_call = [&](const Request&, const CallerContext&, const std::string& tool) {
      told = tool;
      return std::optional<CallHooks>();  // refused: the transport answered
    };
    router.handle(Request{1, "tools/call", json{{"name", name}, {"arguments", json::object()}}},
                  responder, std::move(context));
    return told;
  };
  EXPECT_EQ(label("execute_command"), "execute_command");
  EXPECT_EQ(label("made-up-tool"), "unknown");
}

}  // namespace
}  // namespace execmcp::host::mcp
