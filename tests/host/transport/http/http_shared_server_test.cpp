// The shared server's rule for slow backends and for requests without credentials, with real
// LazyAgents over backends whose start waits on a gate: nothing an HTTP I/O thread does waits on a
// backend, probes start nothing, one agent's slow start never delays another agent, and no route
// answers a stranger with more than a bounded, fixed vocabulary.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "../../agent/gated_backend.hpp"
#include "agent/single_agent_target.hpp"
#include "fake_access_check.hpp"
#include "fake_exchange.hpp"
#include "mcp/protocol.hpp"
#include "server/probes.hpp"
#include "transport/http/http_endpoint.hpp"

namespace execmcp::host::mcp {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using testing::FakeExchange;
using testing::kWait;
using testing::StartGate;

// What "answered at once" means here: generous for a loaded 2-core CI runner, far below any start.
constexpr auto kPrompt = 1s;

class SharedServerTest : public ::testing::Test {
 protected:
  SharedServerTest() : service_(ServiceOptions{}) {
    healthy_gate_->open();
    const AgentTargets agents{{"slow", &slow_}, {"healthy", &healthy_}};
    // As serve --http registers them: read on the I/O thread whenever /metrics is served.
    metrics_.add_gauge("execmcp_agent_started", "1 when started.", "agent", [this] {
      auto started = [](const AgentTarget& target) {
        return target.state() == AgentState::kStarted ? 1.0 : 0.0;
      };
      return std::vector<std::pair<std::string, double>>{{"slow", started(slow_)},
                                                         {"healthy", started(healthy_)}};
    });
    access_ = std::make_unique<testing::FakeAccessCheck>(
        [](const http::HttpRequest& request, const std::string&) {
          AccessDecision access;
          const std::string* token = request.header("authorization");
          if (token != nullptr && *token == "Bearer alice") {
            access.allowed = true;
            access.principal = "alice";
            access.agents = {"*"};
          } else {
            access.status = 401;
            access.headers = {{"www-authenticate", "Bearer realm=\"execmcp\""}};
            access.body = R"({"error":"invalid_token"})";
          }
          return access;
        });
    endpoint_ = std::make_unique<HttpEndpoint>(service_, agents, access_.get(), metrics_);
    probes_ = std::make_unique<server::Probes>(agents, access_.get(), metrics_);
    routes_ =
        std::make_unique<http::RouteTable>(server::server_routes(*endpoint_, *probes_, metrics_));
  }
  ~SharedServerTest() override {
    slow_gate_->open("gave up");  // the start that waited ends, so its worker can be joined
    for (auto& handler : handlers_) handler.wait();
    routes_.reset();
    endpoint_.reset();
    service_.shutdown();
  }

  // handle() on another thread: a route that blocks the calling (I/O) thread shows as no answer.
  std::shared_ptr<FakeExchange> request(std::string method, std::string target,
                                        http::Headers headers = {}, std::string body = {}) {
    http::HttpRequest http_request;
    http_request.method = std::move(method);
    http_request.target = std::move(target);
    http_request.headers = std::move(headers);
    http_request.body = std::move(body);
    auto exchange = std::make_shared<FakeExchange>();
    handlers_.push_back(std::async(std::launch::async, [this, http_request, exchange] {
      routes_->handle(http_request, exchange);
    }));
    return exchange;
  }
  std::shared_ptr<FakeExchange> call(const std::string& agent, int id,
                                     const std::string& tool = "execute_command") {
    const json body{{"jsonrpc", "2.0"},
                    {"id", id},
                    {"method", "tools/call"},
                    {"params",
                     {{"name", tool},
                      {"arguments", {{"command", "echo hi"}}},
                      {"_meta",
                       {{protocol::kMetaProtocolVersion, protocol::kStateless},
                        {protocol::kMetaClientCapabilities, json::object()}}}}}};
    return request("POST", "/mcp/" + agent,
                   {{"authorization", "Bearer alice"},
                    {"content-type", "application/json"},
                    {"mcp-protocol-version", protocol::kStateless},
                    {"mcp-method", "tools/call"},
                    {"mcp-name", tool}},
                   body.dump());
  }
  // The slow agent's first call: its start now waits on the gate.
  void start_slow_agent() {
    slow_call_ = call("slow", 1000);
    ASSERT_TRUE(slow_gate_->wait_waiting(1, kWait));
  }

  std::shared_ptr<StartGate> slow_gate_ = std::make_shared<StartGate>();
  std::shared_ptr<StartGate> healthy_gate_ = std::make_shared<StartGate>();
  // As the registry has them: each started on its first call (the gated backend isolates nothing).
  SingleAgentTarget slow_{testing::make_gated_agent("slow", slow_gate_), false};
  SingleAgentTarget healthy_{testing::make_gated_agent("healthy", healthy_gate_), false};
  std::unique_ptr<testing::FakeAccessCheck> access_;
  Metrics metrics_;
  McpService service_;
  std::unique_ptr<HttpEndpoint> endpoint_;
  // As serve --http has them: the endpoint's routes beside the server's probes.
  std::unique_ptr<server::Probes> probes_;
  std::unique_ptr<http::RouteTable> routes_;
  std::shared_ptr<FakeExchange> slow_call_;
  // Declared last: destroyed first, and only once the gate is open (see the destructor).
  std::vector<std::future<void>> handlers_;
};

// Issue 17: /metrics' gauges took the agent's start lock on an I/O thread: two scrapes during a
// slow start and /health stopped answering.
TEST_F(SharedServerTest, MetricsAndHealthAnswerWhileAStartBlocks) {
  start_slow_agent();
  auto scrape1 = request("GET", "/metrics");
  auto scrape2 = request("GET", "/metrics");
  auto health = request("GET", "/health");
  EXPECT_TRUE(scrape1->wait(kPrompt));
  EXPECT_TRUE(scrape2->wait(kPrompt));
  ASSERT_TRUE(health->wait(kPrompt));
  EXPECT_EQ(health->status(), 200);
  EXPECT_EQ(slow_gate_->starts, 1);
}

// Issue 17: 80 GET /ready ran starts on the call workers, without bound: a healthy agent's call
// waited 30 s+. /ready now reads states, starts nothing and uses no worker.
TEST_F(SharedServerTest, ReadyProbesStartNothingAndHoldNoOtherAgentsCall) {
  start_slow_agent();
  std::vector<std::shared_ptr<FakeExchange>> probes;
  for (int i = 0; i < 80; ++i) {
    probes.push_back(
        request("GET", "/ready",
                i % 2 ? http::Headers{{"authorization", "Bearer alice"}} : http::Headers{}));
  }
  auto healthy = call("healthy", 1);
  ASSERT_TRUE(healthy->wait(kPrompt)) << "the healthy agent's call waited";
  EXPECT_EQ(healthy->body()["result"]["structuredContent"]["stdout"], "ran:echo hi");
  for (auto& probe : probes) {
    ASSERT_TRUE(probe->wait(kPrompt));
    EXPECT_EQ(probe->status(), 200);
  }
  EXPECT_EQ(probes[1]->body()["agent_states"]["slow"], "starting") << probes[1]->body().dump();
  EXPECT_EQ(slow_gate_->starts, 1) << "only the call started it";
}

// Each call to a starting agent holds a worker while it waits: past a few waiters they are
// answered at once, so the other agents still get workers (8 here, as by default).
TEST_F(SharedServerTest, CallsToAStartingAgentLeaveWorkersForTheOthers) {
  start_slow_agent();
  std::vector<std::shared_ptr<FakeExchange>> waiting;
  for (int i = 0; i < 12; ++i) waiting.push_back(call("slow", i));
  // Three may wait with the first call; the other nine are told to retry while the start blocks.
  std::size_t told_to_retry = 0;
  const auto deadline = std::chrono::steady_clock::now() + kPrompt;
  while (told_to_retry < 9 && std::chrono::steady_clock::now() < deadline) {
    told_to_retry = 0;
    for (auto& exchange : waiting) told_to_retry += exchange->wait(0ms);
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(told_to_retry, 9u) << "more than 4 calls waited for one start";
  for (auto& exchange : waiting) {
    if (exchange->wait(0ms)) {
      EXPECT_NE(exchange->body().dump().find("is still starting"), std::string::npos)
          << exchange->body().dump();
    }
  }
  auto healthy = call("healthy", 100);
  ASSERT_TRUE(healthy->wait(kPrompt)) << "the healthy agent got no worker";
  EXPECT_EQ(healthy->body()["result"]["structuredContent"]["stdout"], "ran:echo hi");
}

// The class of the three findings above: every route a stranger can reach is answered within a
// bound, calls no backend method (the slow agent's start would block forever) and says a bounded
// amount. A new route that forgets the rule fails here.
TEST_F(SharedServerTest, EveryRouteWithoutCredentialsIsBoundedAndTouchesNoBackend) {
  // Fill the metrics first: 200 calls with made-up tool names, 20 real ones.
  for (int i = 0; i < 220; ++i) {
    auto done = call("healthy", i, i < 200 ? "made-up-" + std::to_string(i) : "execute_command");
    ASSERT_TRUE(done->wait(kWait));
  }
  ASSERT_TRUE(endpoint_->wait_idle(kWait));
  const int healthy_calls = healthy_gate_->other_calls.load();
  const std::string initialize =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}})";
  const std::string tools_call =
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_command","arguments":{"command":"id"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})";
  const http::Headers json_type{{"content-type", "application/json"}};
  // Every route the endpoint has (a new one joins by itself), below and beside it, and paths it
  // does not have; every method; no credentials or wrong ones.
  std::vector<std::string> targets{"/", "/nowhere", "/mcp", "/ready/x", "/metricsx"};
  for (const auto& route : routes_->routes()) {
    const std::string path(route.path);
    if (route.prefix) {
      for (const char* below : {"", "slow", "healthy", "no_such_agent", "slow/x"})
        targets.push_back(path + below);
    } else {
      targets.push_back(path);
      targets.push_back(path + "?verbose=1&agent=slow");
    }
  }
  const http::Headers session{{"mcp-session-id", "0123456789abcdef0123456789abcdef"}};
  std::size_t walked = 0;
  for (const auto& target : targets) {
    for (const char* method : {"GET", "HEAD", "POST", "DELETE", "OPTIONS"}) {
      for (const auto& credentials :
           {http::Headers{}, http::Headers{{"authorization", "Bearer mallory"}}}) {
        const bool post = std::string(method) == "POST";
        for (const std::string& body : post ? std::vector<std::string>{initialize, tools_call}
                                            : std::vector<std::string>{""}) {
          http::Headers headers = credentials;
          headers.insert(headers.end(), session.begin(), session.end());
          if (post) headers.insert(headers.end(), json_type.begin(), json_type.end());
          auto exchange = request(method, target, headers, body);
          const std::string what = std::string(method) + " " + target;
          ASSERT_TRUE(exchange->wait(kPrompt)) << what << ": no answer";
          EXPECT_NE(exchange->status(), 0) << what;
          EXPECT_LE(exchange->raw_body().size(), 8u * 1024) << what << ": " << exchange->raw_body();
          EXPECT_EQ(exchange->raw_body().find("slow"), std::string::npos)
              << what << " names an agent: " << exchange->raw_body();
          ++walked;
        }
      }
    }
  }
  EXPECT_GT(walked, 200u);
  EXPECT_EQ(slow_gate_->starts, 0);
  EXPECT_EQ(slow_gate_->other_calls, 0);
  EXPECT_EQ(healthy_gate_->other_calls, healthy_calls);
  EXPECT_EQ(healthy_gate_->starts, 1) << "the authenticated calls above, nothing since";
}

}  // namespace
}  // namespace execmcp::host::mcp
