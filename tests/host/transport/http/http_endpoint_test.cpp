// HttpEndpoint without sockets: each request goes to a fake exchange that records the answer.
// Covers both eras of Streamable HTTP, credentials and sessions, cancel on disconnect, SSE
// progress, limits and the plain routes.
#include "transport/http/http_endpoint.hpp"
#include "server/probes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <thread>

#include "agent/fake_target.hpp"
#include "fake_access_check.hpp"
#include "fake_exchange.hpp"
#include "mcp/fake_agent.hpp"
#include "mcp/protocol.hpp"

namespace execmcp::host::mcp {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using testing::FakeAccessCheck;
using testing::FakeAgent;
using testing::FakeExchange;
using testing::FakeTarget;
using testing::kWait;

json modern_meta() {
  return json{{protocol::kMetaProtocolVersion, protocol::kStateless},
              {protocol::kMetaClientCapabilities, json::object()}};
}

class HttpEndpointTest : public ::testing::Test {
 protected:
  HttpEndpointTest() : service_(options()) { make_endpoint(); }
  // `per_user`: with the agent "per_user", whose users each get their own agent.
  void make_endpoint(HttpEndpointOptions endpoint_options = {}, bool per_user = false) {
    routes_.reset();
    probes_.reset();
    endpoint_.reset();
    targets_.clear();
    targets_.push_back(std::make_unique<FakeTarget>("agent_a", agent_a_));
    targets_.push_back(
        std::make_unique<FakeTarget>("agent_b", agent_b_, [] { return AgentState::kFailed; }));
    // A per-user agent: alice and bob each get their own agent, anyone else is past max_users.
    if (per_user)
      targets_.push_back(std::make_unique<FakeTarget>(
          "per_user",
          [this](const std::string& user_key) {
            Resolution user;
            if (user_key == "alice" || user_key == "bob") {
              std::lock_guard lock(users_mutex_);
              auto& agent = users_[user_key];
              if (!agent) agent = std::make_shared<FakeAgent>("per_user");
              user.agent = agent;
            } else {
              user.at_limit = true;
              user.refusal = "limit of 2 user sandboxes (per_user.max_users)";
            }
            return user;
          },
          [] { return AgentState::kStarted; }));
    AgentTargets agents;
    for (const auto& target : targets_) agents[target->id()] = target.get();
    routes_.reset();
    probes_.reset();
    access_ = std::make_unique<FakeAccessCheck>(
        [](const http::HttpRequest& request, const std::string& agent) {
          AccessDecision access;
          const std::string* token = request.header("authorization");
          if (token == nullptr) {
            access.status = 401;
            access.headers = {{"www-authenticate", "Bearer realm=\"execmcp\""}};
            access.body = R"({"error":"invalid_token"})";
          } else if (*token == "Bearer alice" || (*token == "Bearer bob" && agent == "agent_a")) {
            access.allowed = true;
            access.principal = token->substr(7);
            access.user_key = access.principal;
            access.agents = {*token == "Bearer bob" ? "agent_a" : "*"};
          } else if (*token == "Bearer carol" || (*token == "Bearer bob" && agent == "per_user")) {
            access.allowed = true;
            access.principal = token->substr(7);
            access.user_key = access.principal;
            access.agents = {"per_user"};
          } else if (*token == "Bearer bob") {
            access.status = 403;
            access.principal = "bob";
            access.agents = {"agent_a"};
            access.body = R"({"error":"insufficient_scope"})";
          } else {
            access.status = 401;
            access.body = R"({"error":"invalid_token"})";
          }
          return access;
        });
    endpoint_ = std::make_unique<HttpEndpoint>(service_, agents, access_.get(), metrics_,
                                               std::move(endpoint_options));
    probes_ = std::make_unique<server::Probes>(agents, access_.get(), metrics_);
    routes_ =
        std::make_unique<http::RouteTable>(server::server_routes(*endpoint_, *probes_, metrics_));
  }
  static ServiceOptions options() {
    ServiceOptions options;
    options.server_version = "1.0";
    options.max_calls_per_agent = 2;
    return options;
  }
  ~HttpEndpointTest() override {
    routes_.reset();
    endpoint_.reset();
  }

  std::shared_ptr<FakeExchange> post(const std::string& agent, const json& body,
                                     http::Headers headers, bool wait = true) {
    http::HttpRequest request;
    request.method = "POST";
    request.target = "/mcp/" + agent;
    request.headers = std::move(headers);
    request.headers.emplace_back("content-type", "application/json");
    request.body = body.dump();
    auto exchange = std::make_shared<FakeExchange>();
    routes_->handle(std::move(request), exchange);
    if (wait) {
      EXPECT_TRUE(exchange->wait()) << "no answer to " << body.dump();
    }
    return exchange;
  }
  static http::Headers modern_headers(const std::string& method, const std::string& name = {},
                                      const std::string& token = "alice") {
    http::Headers headers{{"authorization", "Bearer " + token},
                          {"mcp-protocol-version", protocol::kStateless},
                          {"mcp-method", method},
                          {"accept", "application/json, text/event-stream"}};
    if (!name.empty()) headers.emplace_back("mcp-name", name);
    return headers;
  }
  static json call(int id, const std::string& command, json meta = modern_meta()) {
    return json{{"jsonrpc", "2.0"},
                {"id", id},
                {"method", "tools/call"},
                {"params",
                 {{"name", "execute_command"},
                  {"arguments", {{"command", command}}},
                  {"_meta", std::move(meta)}}}};
  }
  std::string legacy_session(const std::string& token, const std::string& agent = "agent_a") {
    auto exchange =
        post(agent,
             json{{"jsonrpc", "2.0"},
                  {"id", 0},
                  {"method", "initialize"},
                  {"params", {{"protocolVersion", "2025-06-18"}, {"capabilities", {}}}}},
             {{"authorization", "Bearer " + token}});
    EXPECT_EQ(exchange->status(), 200);
    EXPECT_EQ(exchange->body()["result"]["protocolVersion"], "2025-06-18");
    return exchange->header("mcp-session-id");
  }

  FakeAgent agent_a_{"agent_a"};
  FakeAgent agent_b_{"agent_b"};
  std::mutex users_mutex_;
  std::map<std::string, std::shared_ptr<FakeAgent>> users_;  // the per-user agent's, by user key
  std::vector<std::unique_ptr<FakeTarget>> targets_;
  std::unique_ptr<FakeAccessCheck> access_;
  Metrics metrics_;
  McpService service_;
  std::unique_ptr<HttpEndpoint> endpoint_;
  // As serve --http has them: the endpoint's routes beside the server's probes.
  std::unique_ptr<server::Probes> probes_;
  std::unique_ptr<http::RouteTable> routes_;
};

TEST_F(HttpEndpointTest, StatelessToolCallAnswersJsonWithResultType) {
  auto exchange =
      post("agent_a", call(1, "echo hi"), modern_headers("tools/call", "execute_command"));
  EXPECT_EQ(exchange->status(), 200);
  EXPECT_EQ(exchange->header("content-type"), "application/json");
  const json body = exchange->body();
  EXPECT_EQ(body["result"]["resultType"], "complete");
  EXPECT_EQ(body["result"]["structuredContent"]["stdout"], "hi\n");
  EXPECT_EQ(exchange->header("mcp-session-id"), "") << "2026-07-28 mints no session";
}

TEST_F(HttpEndpointTest, StatelessHeadersMustAgreeWithTheBody) {
  auto no_version = modern_headers("tools/call", "execute_command");
  no_version.erase(no_version.begin() + 1);
  auto exchange = post("agent_a", call(1, "echo hi"), no_version);
  EXPECT_EQ(exchange->status(), 400);
  EXPECT_EQ(exchange->body()["error"]["code"], protocol::kHeaderMismatch);
  EXPECT_EQ(exchange->body()["id"], 1);

  exchange = post("agent_a", call(2, "echo hi"), modern_headers("tools/list", "execute_command"));
  EXPECT_EQ(exchange->status(), 400);
  EXPECT_EQ(exchange->body()["error"]["code"], protocol::kHeaderMismatch);

  exchange = post("agent_a", call(3, "echo hi"), modern_headers("tools/call", "read_file"));
  EXPECT_EQ(exchange->status(), 400);
  EXPECT_EQ(exchange->body()["error"]["code"], protocol::kHeaderMismatch);

  // An encoded Mcp-Name is compared decoded; surrounding whitespace is not part of a value.
  exchange = post("agent_a", call(4, "echo hi"),
                  modern_headers("tools/call", "=?base64?ZXhlY3V0ZV9jb21tYW5k?="));
  EXPECT_EQ(exchange->status(), 200) << exchange->body().dump();
  exchange = post("agent_a", call(5, "echo hi"), modern_headers(" tools/call ", "execute_command"));
  EXPECT_EQ(exchange->status(), 200) << exchange->body().dump();
}

TEST_F(HttpEndpointTest, StatelessErrorsHaveTheTransportsStatusCodes) {
  json meta = modern_meta();
  meta[protocol::kMetaProtocolVersion] = "v999";
  auto headers = modern_headers("tools/list");
  headers[1].second = "v999";
  auto exchange = post(
      "agent_a",
      json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}, {"params", {{"_meta", meta}}}},
      headers);
  EXPECT_EQ(exchange->status(), 400);
  EXPECT_EQ(exchange->body()["error"]["code"], protocol::kUnsupportedProtocolVersion);
  EXPECT_EQ(exchange->body()["error"]["data"]["requested"], "v999");

  exchange = post("agent_a",
                  json{{"jsonrpc", "2.0"},
                       {"id", 2},
                       {"method", "ping"},
                       {"params", {{"_meta", modern_meta()}}}},
                  modern_headers("ping"));
  EXPECT_EQ(exchange->status(), 404);
  EXPECT_EQ(exchange->body()["error"]["code"], rpc_error::kMethodNotFound);

  // The header names 2026-07-28 but the body carries no revision.
  exchange = post("agent_a", json{{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tools/list"}},
                  modern_headers("tools/list"));
  EXPECT_EQ(exchange->status(), 400);
  EXPECT_EQ(exchange->body()["error"]["code"], rpc_error::kInvalidParams);

  // An unknown tool is an in-band error: 200.
  json unknown = call(4, "echo hi");
  unknown["params"]["name"] = "nope";
  exchange = post("agent_a", unknown, modern_headers("tools/call", "nope"));
  EXPECT_EQ(exchange->status(), 200);
  EXPECT_EQ(exchange->body()["error"]["code"], rpc_error::kInvalidParams);
}

TEST_F(HttpEndpointTest, DiscoverNeedsNoSessionAndNoHandshake) {
  auto exchange = post("agent_a",
                       json{{"jsonrpc", "2.0"},
                            {"id", "d"},
                            {"method", "server/discover"},
                            {"params", {{"_meta", modern_meta()}}}},
                       modern_headers("server/discover"));
  EXPECT_EQ(exchange->status(), 200);
  EXPECT_EQ(exchange->body()["result"]["supportedVersions"][0], "2026-07-28");
}

TEST_F(HttpEndpointTest, CredentialsDecideAndTheAgentComesFromTheUrl) {
  auto exchange = post("agent_a", call(1, "echo hi"), {});
  EXPECT_EQ(exchange->status(), 401);
  EXPECT_EQ(exchange->header("www-authenticate"), "Bearer realm=\"execmcp\"");
  exchange =
      post("agent_b", call(1, "echo hi"), modern_headers("tools/call", "execute_command", "bob"));
  EXPECT_EQ(exchange->status(), 403);
  EXPECT_EQ(agent_b_.executions(), 0);
  exchange = post("agent_zz", call(1, "echo hi"), modern_headers("tools/call", "execute_command"));
  EXPECT_EQ(exchange->status(), 404);
  EXPECT_EQ(agent_a_.executions() + agent_b_.executions(), 0);
}

TEST_F(HttpEndpointTest, LegacySessionsAreMintedAndBoundToTheirCredential) {
  const std::string session = legacy_session("bob");
  ASSERT_EQ(session.size(), 32u);
  const json list{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}};
  auto exchange = post("agent_a", list, {{"authorization", "Bearer bob"}});
  EXPECT_EQ(exchange->status(), 400) << "a request without its session id";
  exchange = post("agent_a", list, {{"authorization", "Bearer bob"}, {"mcp-session-id", "nope"}});
  EXPECT_EQ(exchange->status(), 404);
  exchange =
      post("agent_a", list, {{"authorization", "Bearer alice"}, {"mcp-session-id", session}});
  EXPECT_EQ(exchange->status(), 403) << "another credential's session";
  exchange = post("agent_a", list,
                  {{"authorization", "Bearer bob"},
                   {"mcp-session-id", session},
                   {"mcp-protocol-version", "2025-06-18"}});
  EXPECT_EQ(exchange->status(), 200);
  EXPECT_EQ(exchange->body()["result"]["tools"].size(), 4u);
  EXPECT_FALSE(exchange->body()["result"].contains("resultType"));
  exchange = post("agent_a", list,
                  {{"authorization", "Bearer bob"},
                   {"mcp-session-id", session},
                   {"mcp-protocol-version", "1999-01-01"}});
  EXPECT_EQ(exchange->status(), 400);

  http::HttpRequest del;
  del.method = "DELETE";
  del.target = "/mcp/agent_a";
  del.headers = {{"authorization", "Bearer bob"}, {"mcp-session-id", session}};
  auto deleted = std::make_shared<FakeExchange>();
  routes_->handle(del, deleted);
  ASSERT_TRUE(deleted->wait());
  EXPECT_EQ(deleted->status(), 204);
  exchange = post("agent_a", list, {{"authorization", "Bearer bob"}, {"mcp-session-id", session}});
  EXPECT_EQ(exchange->status(), 404) << "an ended session";
}

// Review finding: calls were keyed by JSON-RPC id alone, so two clients both using id 1 collided
// and one could cancel the other's call.
TEST_F(HttpEndpointTest, TwoSessionsUsingOneIdCancelOnlyTheirOwnCall) {
  const std::string first = legacy_session("alice");
  const std::string second = legacy_session("alice");
  auto legacy_call = [&](const std::string& session) {
    return post("agent_a", call(1, "slow", json::object()),
                {{"authorization", "Bearer alice"}, {"mcp-session-id", session}}, false);
  };
  auto a = legacy_call(first);
  auto b = legacy_call(second);
  ASSERT_TRUE(agent_a_.wait_slow_started(2, kWait));
  auto cancel = post("agent_a",
                     json{{"jsonrpc", "2.0"},
                          {"method", "notifications/cancelled"},
                          {"params", {{"requestId", 1}}}},
                     {{"authorization", "Bearer alice"}, {"mcp-session-id", first}});
  EXPECT_EQ(cancel->status(), 202);
  ASSERT_TRUE(agent_a_.wait_slow_finished(1, kWait));
  // MCP sends no response to a cancelled request, but the POST still ends: an empty stream.
  ASSERT_TRUE(a->wait());
  EXPECT_TRUE(a->streaming());
  EXPECT_TRUE(a->events().empty());
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(agent_a_.wait_slow_finished(2, 0ms)) << "the other session's call was cancelled";
  endpoint_->cancel_all();
  ASSERT_TRUE(b->wait());
  EXPECT_EQ(b->body()["result"]["structuredContent"]["cancelled"], true);
}

TEST_F(HttpEndpointTest, ClosingTheStreamCancelsAStatelessCall) {
  auto exchange =
      post("agent_a", call(1, "slow"), modern_headers("tools/call", "execute_command"), false);
  ASSERT_TRUE(agent_a_.wait_slow_started(1, kWait));
  exchange->go_away();
  ASSERT_TRUE(agent_a_.wait_slow_finished(1, kWait)) << "the command kept running";
  EXPECT_TRUE(endpoint_->wait_idle(kWait));
  EXPECT_EQ(exchange->status(), 0) << "nothing is sent for a cancelled request";
}

TEST_F(HttpEndpointTest, ProgressTurnsTheAnswerIntoAnEventStream) {
  json meta = modern_meta();
  meta["progressToken"] = "p1";
  auto exchange =
      post("agent_a", call(1, "emit", meta), modern_headers("tools/call", "execute_command"));
  EXPECT_TRUE(exchange->streaming());
  const auto events = exchange->events();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.front()["method"], "notifications/progress");
  EXPECT_EQ(events.front()["params"]["progressToken"], "p1");
  EXPECT_EQ(events.back()["id"], 1);
  EXPECT_EQ(events.back()["result"]["resultType"], "complete");
}

TEST_F(HttpEndpointTest, PerAgentLimitAnswers429WithRetryAfter) {
  auto one =
      post("agent_a", call(1, "slow"), modern_headers("tools/call", "execute_command"), false);
  auto two =
      post("agent_a", call(2, "slow"), modern_headers("tools/call", "execute_command"), false);
  ASSERT_TRUE(agent_a_.wait_slow_started(2, kWait));
  auto three = post("agent_a", call(3, "echo hi"), modern_headers("tools/call", "execute_command"));
  EXPECT_EQ(three->status(), 429);
  EXPECT_EQ(three->header("retry-after"), "1");
  // Another agent is not held up by agent_a's calls.
  auto other = post("agent_b", call(4, "echo hi"), modern_headers("tools/call", "execute_command"));
  EXPECT_EQ(other->status(), 200);
  one->go_away();
  two->go_away();
  EXPECT_TRUE(endpoint_->wait_idle(kWait));
}

TEST_F(HttpEndpointTest, PlainRoutesAndWrongRequests) {
  auto get = [&](const std::string& target, http::Headers headers = {}) {
    http::HttpRequest request;
    request.method = "GET";
    request.target = target;
    request.headers = std::move(headers);
    auto exchange = std::make_shared<FakeExchange>();
    routes_->handle(request, exchange);
    EXPECT_TRUE(exchange->wait());
    return exchange;
  };
  EXPECT_EQ(get("/health")->status(), 200);
  auto ready = get("/ready", {{"authorization", "Bearer alice"}});
  EXPECT_EQ(ready->status(), 503);
  EXPECT_EQ(ready->body()["agent_states"]["agent_a"], "started");
  EXPECT_EQ(ready->body()["agent_states"]["agent_b"], "failed");
  EXPECT_EQ(get("/mcp/agent_a", {{"authorization", "Bearer alice"}})->status(), 405);
  EXPECT_EQ(get("/nowhere")->status(), 404);
  EXPECT_EQ(get("/.well-known/oauth-protected-resource")->status(), 404);

  http::HttpRequest text;
  text.method = "POST";
  text.target = "/mcp/agent_a";
  text.headers = {{"authorization", "Bearer alice"}, {"content-type", "text/plain"}};
  text.body = "{}";
  auto exchange = std::make_shared<FakeExchange>();
  routes_->handle(text, exchange);
  EXPECT_EQ(exchange->status(), 415);

  auto bad = post("agent_a", json::array(), {{"authorization", "Bearer alice"}});
  EXPECT_EQ(bad->status(), 400);

  (void)post("agent_a", call(1, "echo hi"), modern_headers("tools/call", "execute_command"));
  // The call is counted just after its answer went out.
  ASSERT_TRUE(endpoint_->wait_idle(kWait));
  const std::string metrics = metrics_.render();
  EXPECT_NE(metrics.find("execmcp_tool_calls_total{agent=\"agent_a\",principal=\"alice\","
                         "tool=\"execute_command\",outcome=\"ok\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("execmcp_tool_call_duration_seconds_count{tool=\"execute_command\"} 1"),
            std::string::npos);
}

std::shared_ptr<FakeExchange> get_route(http::RouteTable& routes, const std::string& target,
                                        http::Headers headers = {}) {
  http::HttpRequest request;
  request.method = "GET";
  request.target = target;
  request.headers = std::move(headers);
  auto exchange = std::make_shared<FakeExchange>();
  routes.handle(request, exchange);
  EXPECT_TRUE(exchange->wait()) << target;
  return exchange;
}

// Issue 19: a per-user agent's calls go to the caller's own agent, chosen from the credentials'
// user key (never from the request), and a new user past max_users gets 429 with Retry-After.
TEST_F(HttpEndpointTest, APerUserAgentServesEachUserTheirOwnAgentAndRefusesPastTheLimit) {
  make_endpoint({}, true);
  auto alice = post("per_user", call(1, "echo hi"),
                    modern_headers("tools/call", "execute_command", "alice"));
  EXPECT_EQ(alice->status(), 200);
  auto bob =
      post("per_user", call(2, "echo hi"), modern_headers("tools/call", "execute_command", "bob"));
  EXPECT_EQ(bob->status(), 200);
  // A call frees its slot just after its answer went out (max_calls_per_agent 2): seen in CI,
  // alice's next call came first and got 429. So wait until the service has none in flight.
  for (int i = 0; i < 10000 && service_.calls_in_flight() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(service_.calls_in_flight(), 0u);
  auto again = post("per_user", call(3, "echo hi"),
                    modern_headers("tools/call", "execute_command", "alice"));
  EXPECT_EQ(again->status(), 200);
  {
    std::lock_guard lock(users_mutex_);
    ASSERT_EQ(users_.size(), 2u);
    EXPECT_EQ(users_["alice"]->executions(), 2);
    EXPECT_EQ(users_["bob"]->executions(), 1);
    EXPECT_EQ(users_["alice"]->last_args().principal, "alice");
  }
  EXPECT_EQ(agent_a_.executions(), 0);

  auto carol = post("per_user", call(4, "echo hi"),
                    modern_headers("tools/call", "execute_command", "carol"));
  EXPECT_EQ(carol->status(), 429);
  EXPECT_EQ(carol->header("retry-after"), "60");
  EXPECT_EQ(carol->body()["error"], "too_many_users");
  EXPECT_NE(carol->body()["error_description"].get<std::string>().find("per_user.max_users"),
            std::string::npos);
  // A 2025-era session is bound to its user too: bob cannot use alice's.
  const std::string session = legacy_session("alice", "per_user");
  auto stolen = post("per_user", json{{"jsonrpc", "2.0"}, {"id", 5}, {"method", "tools/list"}},
                     {{"authorization", "Bearer bob"}, {"mcp-session-id", session}});
  EXPECT_EQ(stolen->status(), 403);
}

// The endpoint asks the URL's target for the call's agent (AgentTarget::resolve) once per
// request and only after the credentials; a refusal that is no limit is 503 with its own words.
TEST_F(HttpEndpointTest, TheTargetIsAskedOnceAfterTheCredentialsAndItsRefusalIsAnswered503) {
  FakeTarget refusing("agent_a", [](const std::string&) {
    return Resolution{nullptr, false, "the sandbox's engine is down"};
  });
  HttpEndpoint endpoint(service_, {{"agent_a", &refusing}}, access_.get(), metrics_);
  http::RouteTable routes(HttpEndpoint::not_found_body(), [](int) {});
  endpoint.add_routes(routes);
  auto send = [&](const std::string& token) {
    http::HttpRequest request;
    request.method = "POST";
    request.target = "/mcp/agent_a";
    request.headers = modern_headers("tools/call", "execute_command", token);
    request.headers.emplace_back("content-type", "application/json");
    request.body = call(1, "echo hi").dump();
    auto exchange = std::make_shared<FakeExchange>();
    routes.handle(std::move(request), exchange);
    EXPECT_TRUE(exchange->wait());
    return exchange;
  };
  auto stranger = send("mallory");
  EXPECT_EQ(stranger->status(), 401);
  EXPECT_EQ(refusing.resolved, 0);
  auto alice = send("alice");
  EXPECT_EQ(alice->status(), 503);
  EXPECT_EQ(alice->header("retry-after"), "5");
  EXPECT_EQ(alice->body()["error"], "unavailable");
  EXPECT_EQ(alice->body()["error_description"], "the sandbox's engine is down");
  EXPECT_EQ(refusing.resolved, 1);
  EXPECT_EQ(agent_a_.executions(), 0);
}

// Issue 17: /ready without credentials listed every agent's id with its error text (workspace
// paths, socket paths, preinstall log tails). Now: counts only; credentials add the states of
// the agents they may use.
TEST_F(HttpEndpointTest, ReadyWithoutCredentialsSaysOnlyAFixedVocabulary) {
  auto anonymous = get_route(*routes_, "/ready");
  EXPECT_EQ(anonymous->status(), 503) << "agent_b failed";
  EXPECT_EQ(anonymous->body(), json::parse(R"({"status":"not ready","agents":{"started":1,
            "starting":0,"not_started":0,"failed":1}})"));
  auto wrong = get_route(*routes_, "/ready", {{"authorization", "Bearer mallory"}});
  EXPECT_FALSE(wrong->body().contains("agent_states")) << wrong->body().dump();
  auto bob = get_route(*routes_, "/ready", {{"authorization", "Bearer bob"}});
  EXPECT_EQ(bob->body()["agent_states"], json::parse(R"({"agent_a":"started"})"));
  auto alice = get_route(*routes_, "/ready", {{"authorization", "Bearer alice"}});
  EXPECT_EQ(alice->body()["agent_states"],
            json::parse(R"({"agent_a":"started","agent_b":"failed"})"));
}

// Issue 17: every made-up tool name added a series (300 calls: 6.7 KB -> 548 KB), with the
// client's CR and ESC bytes in the label, served without credentials.
TEST_F(HttpEndpointTest, MadeUpToolNamesAddNoSeriesAndNoClientBytes) {
  auto made_up = [&](int i) {
    json body = call(i, "echo hi");
    const std::string name = "t" + std::to_string(i) + "\r\x1b[31m\"\\";
    body["params"]["name"] = name;
    (void)post("agent_a", body, modern_headers("tools/call", name));
  };
  for (int i = 0; i < 10; ++i) made_up(i);
  ASSERT_TRUE(endpoint_->wait_idle(kWait));
  auto lines = [](const std::string& text) { return std::count(text.begin(), text.end(), '\n'); };
  const auto after_ten = lines(metrics_.render());
  for (int i = 10; i < 300; ++i) made_up(i);
  ASSERT_TRUE(endpoint_->wait_idle(kWait));
  const std::string metrics = metrics_.render();
  EXPECT_EQ(lines(metrics), after_ten) << "the series grew with the names";
  EXPECT_NE(metrics.find("execmcp_tool_calls_total{agent=\"agent_a\",principal=\"alice\","
                         "tool=\"unknown\",outcome=\"rpc_error\"} 300"),
            std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find_first_of("\r\x1b"), std::string::npos);
}

TEST_F(HttpEndpointTest, MetricsWithoutCredentialsNameNoAgentAndNoPrincipal) {
  (void)post("agent_a", call(1, "echo hi"), modern_headers("tools/call", "execute_command"));
  (void)post("agent_b", call(2, "echo hi"), modern_headers("tools/call", "execute_command"));
  ASSERT_TRUE(endpoint_->wait_idle(kWait));
  const std::string anonymous = get_route(*routes_, "/metrics")->raw_body();
  EXPECT_EQ(anonymous.find("agent_"), std::string::npos) << anonymous;
  EXPECT_EQ(anonymous.find("alice"), std::string::npos) << anonymous;
  EXPECT_NE(anonymous.find("execmcp_tool_calls_by_tool_total{tool=\"execute_command\","
                           "outcome=\"ok\"} 2"),
            std::string::npos)
      << anonymous;
  const std::string bob =
      get_route(*routes_, "/metrics", {{"authorization", "Bearer bob"}})->raw_body();
  EXPECT_NE(bob.find("{agent=\"agent_a\",principal=\"alice\""), std::string::npos) << bob;
  EXPECT_EQ(bob.find("agent_b"), std::string::npos) << "not an agent bob may use: " << bob;
  const std::string alice =
      get_route(*routes_, "/metrics", {{"authorization", "Bearer alice"}})->raw_body();
  EXPECT_NE(alice.find("{agent=\"agent_b\",principal=\"alice\""), std::string::npos) << alice;
}

// Issue 17: one principal could open all 1024 sessions in under a second and lock every other
// tenant out for an hour. Now it holds at most its share; its oldest idle sessions end first.
TEST_F(HttpEndpointTest, OnePrincipalCannotTakeEverySession) {
  std::vector<std::string> alices;
  for (int i = 0; i < 2000; ++i) {
    auto exchange =
        post("agent_a",
             json{{"jsonrpc", "2.0"},
                  {"id", 0},
                  {"method", "initialize"},
                  {"params", {{"protocolVersion", "2025-06-18"}, {"capabilities", {}}}}},
             {{"authorization", "Bearer alice"}});
    ASSERT_EQ(exchange->status(), 200) << "session " << i << ": " << exchange->body().dump();
    alices.push_back(exchange->header("mcp-session-id"));
  }
  const std::string bobs = legacy_session("bob");
  const json list{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}};
  EXPECT_EQ(
      post("agent_a", list, {{"authorization", "Bearer bob"}, {"mcp-session-id", bobs}})->status(),
      200);
  EXPECT_EQ(
      post("agent_a", list, {{"authorization", "Bearer alice"}, {"mcp-session-id", alices.back()}})
          ->status(),
      200)
      << "the newest session works";
  auto oldest =
      post("agent_a", list, {{"authorization", "Bearer alice"}, {"mcp-session-id", alices[0]}});
  EXPECT_EQ(oldest->status(), 404);
  EXPECT_EQ(oldest->body()["error"], "unknown_session");
  // Exactly its share is alive: the 32 newest.
  int alive = 0;
  for (const auto& id : alices) {
    alive += post("agent_a", list, {{"authorization", "Bearer alice"}, {"mcp-session-id", id}})
                 ->status() == 200;
  }
  EXPECT_EQ(alive, 32);
}

TEST_F(HttpEndpointTest, AFullServerEndsAnIdleSessionOfWhoeverHoldsTheMost) {
  HttpEndpointOptions options;
  options.max_sessions = 4;
  options.max_sessions_per_principal = 3;
  make_endpoint(options);
  const std::vector<std::string> alices{legacy_session("alice"), legacy_session("alice"),
                                        legacy_session("alice")};
  const std::string bobs = legacy_session("bob");  // the server is full now
  const std::string bobs_second = legacy_session("bob");
  const json list{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}};
  auto status = [&](const std::string& token, const std::string& id) {
    return post("agent_a", list, {{"authorization", "Bearer " + token}, {"mcp-session-id", id}})
        ->status();
  };
  EXPECT_EQ(status("alice", alices[0]), 404) << "alice held the most: her oldest ended";
  EXPECT_EQ(status("alice", alices[1]), 200);
  EXPECT_EQ(status("bob", bobs), 200);
  EXPECT_EQ(status("bob", bobs_second), 200);
}

TEST_F(HttpEndpointTest, APrincipalWhoseSessionsAreAllBusyGets429) {
  HttpEndpointOptions options;
  options.max_sessions_per_principal = 2;
  make_endpoint(options);
  const std::string first = legacy_session("alice");
  const std::string second = legacy_session("alice");
  auto busy = [&](const std::string& session, int id) {
    return post("agent_a", call(id, "slow", json::object()),
                {{"authorization", "Bearer alice"}, {"mcp-session-id", session}}, false);
  };
  auto one = busy(first, 1);
  auto two = busy(second, 2);
  ASSERT_TRUE(agent_a_.wait_slow_started(2, kWait));
  auto refused = post("agent_a",
                      json{{"jsonrpc", "2.0"},
                           {"id", 0},
                           {"method", "initialize"},
                           {"params", {{"protocolVersion", "2025-06-18"}, {"capabilities", {}}}}},
                      {{"authorization", "Bearer alice"}});
  EXPECT_EQ(refused->status(), 429);
  EXPECT_EQ(refused->body()["error"], "too_many_sessions");
  endpoint_->cancel_all();
  ASSERT_TRUE(one->wait());
  ASSERT_TRUE(two->wait());
}

}  // namespace
}  // namespace execmcp::host::mcp
