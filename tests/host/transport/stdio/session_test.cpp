// MCP session tests over the in-memory transport: lifecycle, errors, tool calls, concurrency,
// cancellation, progress and shutdown.
#include "transport/stdio/session.hpp"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "common/utf8.hpp"
#include "mcp/fake_agent.hpp"
#include "transport/stdio/memory_transport.hpp"

namespace execmcp::host::mcp {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

ServerOptions server_options(std::string version, std::size_t max_concurrent_calls) {
  ServerOptions options;
  options.server_version = std::move(version);
  options.max_concurrent_calls = max_concurrent_calls;
  return options;
}
using testing::FakeAgent;

constexpr auto kWait = 10s;

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override { start(server_options("1.2.3", 4)); }
  void TearDown() override { stop(); }

  void start(const ServerOptions& options) {
    session_ = std::make_unique<Session>(agent_, transport_, options);
    done_ = std::async(std::launch::async, [this] { return session_->run(); });
  }
  // Ends input and returns run()'s exit code (-100 if it did not return in time).
  int stop() {
    if (!session_) return -100;
    transport_.end_input();
    int code = -100;
    if (done_.wait_for(kWait) == std::future_status::ready) code = done_.get();
    EXPECT_NE(code, -100) << "Session::run did not return after end of input";
    if (code == -100) std::abort();  // a hung session would hang the whole test binary
    session_.reset();
    return code;
  }

  void send(const json& message) { transport_.push_line(message.dump()); }
  void notify(const std::string& method, json params) {
    send(json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
  }
  void send_request(const json& id, const std::string& method, json params = json::object()) {
    send(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
  }
  json request(const json& id, const std::string& method, json params = json::object()) {
    send_request(id, method, std::move(params));
    auto response = transport_.wait_for_response(id, kWait);
    EXPECT_TRUE(response.has_value()) << "no response to " << method << " id " << id;
    return response.value_or(json::object());
  }
  json call(const json& id, const std::string& tool, json arguments) {
    return request(id, "tools/call", json{{"name", tool}, {"arguments", std::move(arguments)}});
  }
  bool has_response(const json& id) {
    for (const auto& line : transport_.written()) {
      const json m = json::parse(line);
      if (m.contains("id") && m["id"] == id) return true;
    }
    return false;
  }

  FakeAgent agent_;
  MemoryTransport transport_;
  std::unique_ptr<Session> session_;
  std::future<int> done_;
};

json initialize_params(const std::string& version) {
  return json{{"protocolVersion", version},
              {"capabilities", json::object()},
              {"clientInfo", {{"name", "test-client"}, {"version", "0.1"}}}};
}

TEST_F(SessionTest, InitializeAgreesToEachSupportedVersion) {
  int id = 1;
  for (const char* version : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
    const json response = request(id++, "initialize", initialize_params(version));
    EXPECT_EQ(response["result"]["protocolVersion"], version);
  }
}

TEST_F(SessionTest, InitializeAnswersUnknownVersionWithLatestAndDescribesServer) {
  const json response = request(1, "initialize", initialize_params("1999-01-01"));
  const json& result = response["result"];
  EXPECT_EQ(result["protocolVersion"], "2025-11-25");
  EXPECT_EQ(result["capabilities"]["tools"]["listChanged"], false);
  EXPECT_EQ(result["serverInfo"]["name"], "execmcp");
  EXPECT_EQ(result["serverInfo"]["version"], "1.2.3");
  ASSERT_TRUE(result["instructions"].is_string());
  EXPECT_NE(result["instructions"].get<std::string>().find("agent_a"), std::string::npos);
}

TEST_F(SessionTest, InitializeWithoutProtocolVersionIsInvalidParams) {
  const json response = request(1, "initialize", json::object());
  EXPECT_EQ(response["error"]["code"], rpc_error::kInvalidParams);
  EXPECT_NE(response["error"]["message"].get<std::string>().find("protocolVersion"),
            std::string::npos);
}

TEST_F(SessionTest, PingAnswersEmptyObjectAndKeepsStringIds) {
  const json response = request("abc", "ping");
  EXPECT_EQ(response["jsonrpc"], "2.0");
  EXPECT_EQ(response["result"], json::object());
}

TEST_F(SessionTest, ToolsListHasFourToolsWithBothSchemas) {
  const json response = request(1, "tools/list");
  const json& tools = response["result"]["tools"];
  ASSERT_EQ(tools.size(), 4u);
  std::set<std::string> names;
  for (const auto& tool : tools) {
    names.insert(tool["name"].get<std::string>());
    EXPECT_EQ(tool["inputSchema"]["type"], "object") << tool["name"];
    EXPECT_EQ(tool["outputSchema"]["type"], "object") << tool["name"];
    EXPECT_TRUE(tool["inputSchema"]["required"].is_array()) << tool["name"];
    EXPECT_FALSE(tool["description"].get<std::string>().empty());
  }
  EXPECT_EQ(names, (std::set<std::string>{"execute_command", "read_file", "write_file",
                                          "read_docstring"}));
  const json& exec = tools[0];
  EXPECT_EQ(exec["name"], "execute_command");
  for (const char* field :
       {"success", "exit_code", "stdout", "stderr", "execution_time", "timed_out", "truncated"}) {
    EXPECT_TRUE(exec["outputSchema"]["properties"].contains(field)) << field;
  }
}

TEST_F(SessionTest, MalformedJsonGetsParseErrorAndServingContinues) {
  transport_.push_line("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ");
  const auto error = transport_.wait_for(
      [](const json& m) { return m.contains("error") && m["error"]["code"] == -32700; }, kWait);
  ASSERT_TRUE(error.has_value());
  EXPECT_TRUE((*error)["id"].is_null());
  EXPECT_EQ(request(2, "ping")["result"], json::object());
}

// 200,000 nested arrays (a 400 KB line) once crashed the server with a stack overflow while the
// parsed message was copied. Now parsing stops at the depth limit, the request is answered with
// its id, and the server keeps serving.
TEST_F(SessionTest, DeeplyNestedJsonIsRefusedAndServingContinues) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  transport_.push_line(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":)" + deep + "}");
  transport_.push_line(
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_command","arguments":{"command":)" +
      deep + "}}}");
  transport_.push_line(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":)" + deep +
                       "}");
  transport_.push_line(deep);
  for (int id : {1, 2}) {
    const auto response = transport_.wait_for_response(id, kWait);
    ASSERT_TRUE(response.has_value()) << "no answer to id " << id;
    EXPECT_EQ((*response)["error"]["code"], rpc_error::kInvalidRequest);
    EXPECT_NE((*response)["error"]["message"].get<std::string>().find("deeper than"),
              std::string::npos)
        << *response;
  }
  EXPECT_EQ(request(3, "ping")["result"], json::object());
  // The notification and the bare array get an error with a null id (no id to recover).
  int null_id_errors = 0;
  for (const auto& line : transport_.written()) {
    const json m = json::parse(line);
    if (m.contains("error") && m["id"].is_null()) ++null_id_errors;
  }
  EXPECT_EQ(null_id_errors, 2);
  EXPECT_EQ(agent_.executions(), 0);
}

// `{"x":[{},{},...]}` cost about 53 bytes of memory per byte of input; the number of JSON values
// in one message is now limited while parsing.
TEST_F(SessionTest, MessageWithTooManyValuesIsRefused) {
  std::string many = R"({"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"x":[)";
  for (int i = 0; i < 200000; ++i) many += i == 0 ? "{}" : ",{}";
  many += "]}}";
  transport_.push_line(many);
  const auto response = transport_.wait_for_response("big", kWait);
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ((*response)["error"]["code"], rpc_error::kInvalidRequest);
  EXPECT_NE((*response)["error"]["message"].get<std::string>().find("values"), std::string::npos)
      << *response;
  EXPECT_EQ(request(3, "ping")["result"], json::object());
}

// The limits leave room for real work: a write_file of a few MiB still goes through.
TEST_F(SessionTest, WriteFileOfSeveralMiBStillWorks) {
  std::string content(4 * 1024 * 1024, 'a');
  for (std::size_t i = 0; i < content.size(); i += 100) content[i] = '\n';
  const json response =
      call(1, "write_file", json{{"path", "/workspace/agent_a/big.txt"}, {"content", content}});
  ASSERT_TRUE(response.contains("result")) << response.dump().substr(0, 300);
  EXPECT_EQ(response["result"]["isError"], false);
  EXPECT_EQ(agent_.file("/workspace/agent_a/big.txt"), content);
}

TEST_F(SessionTest, NonRequestsAreInvalidRequest) {
  transport_.push_line("42");
  transport_.push_line(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  transport_.push_line(R"({"jsonrpc":"2.0","id":7})");
  transport_.push_line(R"({"jsonrpc":"1.0","id":8,"method":"ping"})");
  transport_.push_line(R"({"jsonrpc":"2.0","id":{"x":1},"method":"ping"})");
  transport_.push_line(R"({"jsonrpc":"2.0","id":9,"method":"ping","params":"x"})");
  ASSERT_TRUE(transport_.wait_for_response(9, kWait).has_value());
  int invalid = 0;
  for (const auto& line : transport_.written()) {
    const json m = json::parse(line);
    if (m.contains("error") && m["error"]["code"] == rpc_error::kInvalidRequest) ++invalid;
  }
  EXPECT_EQ(invalid, 5);  // 42, the batch, no method, wrong version, object id
  EXPECT_EQ((*transport_.wait_for_response(7, kWait))["error"]["code"], rpc_error::kInvalidRequest);
  EXPECT_EQ((*transport_.wait_for_response(8, kWait))["error"]["code"], rpc_error::kInvalidRequest);
  EXPECT_EQ((*transport_.wait_for_response(9, kWait))["error"]["code"], rpc_error::kInvalidParams);
}

TEST_F(SessionTest, UnknownMethodIsMethodNotFound) {
  const json response = request(3, "resources/list");
  EXPECT_EQ(response["error"]["code"], rpc_error::kMethodNotFound);
}

TEST_F(SessionTest, NotificationsAndClientResponsesGetNoAnswer) {
  notify("notifications/initialized", json::object());
  notify("notifications/unknown_thing", json{{"x", 1}});
  transport_.push_line(R"({"jsonrpc":"2.0","id":55,"result":{}})");
  notify("notifications/cancelled", json{{"requestId", 12345}});  // nothing is running
  request(1, "ping");
  EXPECT_EQ(transport_.written().size(), 1u);
}

TEST_F(SessionTest, BackgroundShellToolsAreListedAndCallableOnlyWhenTheAgentOffersThem) {
  const json refused = call(2, "start_background_shell", json{{"command", "sleep 1"}});
  ASSERT_TRUE(refused.contains("error")) << refused;
  EXPECT_EQ(refused["error"]["code"], rpc_error::kInvalidParams);
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("Unknown tool"), std::string::npos);

  agent_.offer_background = true;
  const json list = request(3, "tools/list");
  const json& tools = list["result"]["tools"];
  std::set<std::string> names;
  for (const auto& tool : tools) {
    names.insert(tool["name"].get<std::string>());
    EXPECT_EQ(tool["inputSchema"]["type"], "object") << tool["name"];
    EXPECT_EQ(tool["outputSchema"]["type"], "object") << tool["name"];
  }
  for (const char* name :
       {"start_background_shell", "get_background_shell_output", "get_background_shell_status",
        "kill_background_shell", "list_background_shells"})
    EXPECT_TRUE(names.contains(name)) << name;
  EXPECT_EQ(names.size(), 9u);
  // Offered: the call reaches the agent (the fake has no shells).
  const json listed = call(4, "list_background_shells", json::object());
  ASSERT_TRUE(listed.contains("result")) << listed;
  EXPECT_EQ(listed["result"]["structuredContent"]["count"], 0);
}

TEST_F(SessionTest, ToolArgumentErrorsAreInvalidParamsNamingTheArgument) {
  struct Case {
    std::string tool;
    json arguments;
    std::string mentions;
  };
  const std::vector<Case> cases = {
      {"execute_command", json::object(), "command"},
      {"execute_command", json{{"command", 5}}, "command"},
      {"execute_command", json{{"command", "ls"}, {"timeout", -1}}, "timeout"},
      {"execute_command", json{{"command", "ls"}, {"timeout", "10"}}, "timeout"},
      {"execute_command", json{{"command", "ls"}, {"work_dir", true}}, "work_dir"},
      {"read_file", json{{"path", "/a"}, {"line_count", 0}}, "line_count"},
      {"read_file", json{{"path", "/a"}, {"line_count", -3}}, "line_count"},
      {"read_file", json{{"path", "/a"}, {"offset", -1}}, "offset"},
      {"read_file", json{{"path", "/a"}, {"offset", 1.5}}, "offset"},
      {"write_file", json{{"path", "/a"}}, "content"},
      {"read_docstring", json{{"module", "os; rm -rf /"}, {"function", "f"}}, "module"},
      {"nope", json::object(), "nope"},
  };
  int id = 100;
  for (const auto& c : cases) {
    const json response = call(id++, c.tool, c.arguments);
    ASSERT_TRUE(response.contains("error")) << c.tool << " " << c.arguments;
    EXPECT_EQ(response["error"]["code"], rpc_error::kInvalidParams) << c.arguments;
    EXPECT_NE(response["error"]["message"].get<std::string>().find(c.mentions), std::string::npos)
        << response["error"]["message"];
  }
  EXPECT_EQ(agent_.executions(), 0);
  // Issue 18: an argument the tool does not take is no longer refused (clients add their own, such
  // as Gemini CLI's wait_for_previous): the call runs and the result names what was ignored.
  const json unknown = call(id++, "execute_command", json{{"command", "echo hi"}, {"cwd", "/"}});
  ASSERT_TRUE(unknown.contains("result")) << unknown;
  EXPECT_FALSE(unknown["result"]["isError"].get<bool>()) << unknown;
  EXPECT_NE(unknown["result"]["content"].back()["text"].get<std::string>().find(
                "ignored the argument 'cwd'"),
            std::string::npos)
      << unknown;
  EXPECT_EQ(agent_.executions(), 1);
  const json no_name = request(200, "tools/call", json{{"arguments", json::object()}});
  EXPECT_EQ(no_name["error"]["code"], rpc_error::kInvalidParams);
  const json bad_args = request(201, "tools/call", json{{"name", "read_file"}, {"arguments", 3}});
  EXPECT_EQ(bad_args["error"]["code"], rpc_error::kInvalidParams);
}

TEST_F(SessionTest, ExecuteCommandSuccess) {
  const json response = call(1, "execute_command",
                             json{{"command", "echo hi"}, {"timeout", 2.5}, {"work_dir", "sub"}});
  const json& result = response["result"];
  EXPECT_EQ(result["isError"], false);
  const json& s = result["structuredContent"];
  EXPECT_EQ(s["success"], true);
  EXPECT_EQ(s["exit_code"], 0);
  EXPECT_EQ(s["stdout"], "hi\n");
  EXPECT_EQ(s["stderr"], "");
  EXPECT_EQ(s["timed_out"], false);
  EXPECT_EQ(s["truncated"], false);
  EXPECT_EQ(s["cancelled"], false);
  EXPECT_FALSE(s.contains("error"));
  EXPECT_FALSE(s.contains("notices"));
  ASSERT_EQ(result["content"].size(), 1u);
  EXPECT_EQ(result["content"][0]["type"], "text");
  const std::string text = result["content"][0]["text"];
  EXPECT_NE(text.find("Exit code: 0"), std::string::npos) << text;
  EXPECT_NE(text.find("hi"), std::string::npos) << text;
  const ExecuteArgs args = agent_.last_args();
  EXPECT_EQ(args.command, "echo hi");
  ASSERT_TRUE(args.timeout.has_value());
  EXPECT_EQ(args.timeout->count(), 2500);
  EXPECT_EQ(args.work_dir, "sub");
}

TEST_F(SessionTest, FailingCommandIsAResultNotAnError) {
  const json result = call(1, "execute_command", json{{"command", "fail"}})["result"];
  EXPECT_EQ(result["isError"], false);
  EXPECT_EQ(result["structuredContent"]["success"], false);
  EXPECT_EQ(result["structuredContent"]["exit_code"], 3);
  EXPECT_FALSE(agent_.last_args().timeout.has_value());
}

TEST_F(SessionTest, BlockedCommandIsToolErrorWithFilterAndRule) {
  const json result = call(1, "execute_command", json{{"command", "blocked"}})["result"];
  EXPECT_EQ(result["isError"], true);
  const json& s = result["structuredContent"];
  EXPECT_EQ(s["success"], false);
  EXPECT_EQ(s["blocked_by"], "patterns");
  EXPECT_EQ(s["rule"], "rm -rf");
  EXPECT_EQ(s["error"], "destructive commands are not allowed");
  const std::string text = result["content"][0]["text"];
  EXPECT_NE(text.find("blocked by filter 'patterns'"), std::string::npos) << text;
  EXPECT_NE(text.find("not run"), std::string::npos) << text;
}

TEST_F(SessionTest, BackendErrorIsToolError) {
  const json result = call(1, "execute_command", json{{"command", "broken"}})["result"];
  EXPECT_EQ(result["isError"], true);
  EXPECT_EQ(result["structuredContent"]["error"], "docker engine is not reachable");
  EXPECT_NE(result["content"][0]["text"].get<std::string>().find("could not be run"),
            std::string::npos);
}

TEST_F(SessionTest, TruncationAndNoticesAreReported) {
  const json result = call(1, "execute_command", json{{"command", "truncated"}})["result"];
  EXPECT_EQ(result["structuredContent"]["truncated"], true);
  EXPECT_EQ(result["structuredContent"]["notices"], json::array({"container was recreated"}));
  const std::string text = result["content"][0]["text"];
  EXPECT_NE(text.find("truncated"), std::string::npos) << text;
  EXPECT_NE(text.find("container was recreated"), std::string::npos) << text;
}

TEST_F(SessionTest, NonUtf8OutputBecomesValidJson) {
  const json result = call(1, "execute_command", json{{"command", "binary"}})["result"];
  for (const auto& line : transport_.written()) EXPECT_TRUE(is_valid_utf8(line));
  const std::string out = result["structuredContent"]["stdout"];
  EXPECT_EQ(out, std::string("ok \xEF\xBF\xBD\xEF\xBF\xBD\x00 \xEF\xBF\xBD", 14));
  EXPECT_EQ(result["structuredContent"]["stderr"], "\xEF\xBF\xBD");
}

TEST_F(SessionTest, LongCallDoesNotBlockPingOrOtherCalls) {
  send_request(10, "tools/call",
               json{{"name", "execute_command"}, {"arguments", {{"command", "slow"}}}});
  ASSERT_TRUE(agent_.wait_slow_started(1, kWait));
  EXPECT_EQ(request(11, "ping")["result"], json::object());
  EXPECT_EQ(call(12, "execute_command", json{{"command", "echo hi"}})["result"]["isError"], false);
  EXPECT_FALSE(has_response(10));
  notify("notifications/cancelled", json{{"requestId", 10}, {"reason", "test over"}});
  ASSERT_TRUE(agent_.wait_slow_finished(1, kWait));
}

TEST_F(SessionTest, ClientCancelSetsTokenAndSuppressesTheResponse) {
  send_request("slow-1", "tools/call",
               json{{"name", "execute_command"}, {"arguments", {{"command", "slow"}}}});
  ASSERT_TRUE(agent_.wait_slow_started(1, kWait));
  notify("notifications/cancelled", json{{"requestId", "slow-1"}});
  ASSERT_TRUE(agent_.wait_slow_finished(1, kWait));
  EXPECT_EQ(stop(), 0);  // joins the workers, so the call has been answered or dropped
  EXPECT_FALSE(has_response("slow-1"));
}

// A request that reuses the id of one still in progress is not run, and its error carries a null
// id (JSON-RPC's id for "cannot tell which request"): the only response with that id is the real
// result of the first request.
TEST_F(SessionTest, DuplicateInFlightIdIsNotRunAndNeverAnsweredWithThatId) {
  send_request(5, "tools/call",
               json{{"name", "execute_command"}, {"arguments", {{"command", "slow"}}}});
  ASSERT_TRUE(agent_.wait_slow_started(1, kWait));
  send_request(5, "tools/call",
               json{{"name", "execute_command"}, {"arguments", {{"command", "echo hi"}}}});
  send_request(5, "ping");
  EXPECT_EQ(request(6, "ping")["result"], json::object());  // both duplicates were read before
  int null_errors = 0;
  for (const auto& line : transport_.written()) {
    const json m = json::parse(line);
    if (!m.contains("error")) continue;
    EXPECT_TRUE(m["id"].is_null()) << m;
    EXPECT_EQ(m["error"]["code"], rpc_error::kInvalidRequest);
    EXPECT_NE(m["error"]["message"].get<std::string>().find("id 5 "), std::string::npos) << m;
    ++null_errors;
  }
  EXPECT_EQ(null_errors, 2);
  EXPECT_EQ(stop(), 0);  // end of input cancels the slow call, which is then answered
  EXPECT_EQ(agent_.executions(), 1) << "a duplicate ran";
  int with_id_5 = 0;
  for (const auto& line : transport_.written()) {
    const json m = json::parse(line);
    if (m.contains("id") && m["id"] == 5) {
      ++with_id_5;
      EXPECT_EQ(m["result"]["structuredContent"]["cancelled"], true) << m;
    }
  }
  EXPECT_EQ(with_id_5, 1);
}

TEST_F(SessionTest, ProgressNotificationsPrecedeTheResult) {
  const json params{{"name", "execute_command"},
                    {"arguments", {{"command", "emit"}}},
                    {"_meta", {{"progressToken", "tok-1"}}}};
  const json response = request(1, "tools/call", params);
  ASSERT_EQ(response["result"]["isError"], false);
  std::string streamed;
  double last_progress = -1;
  int notifications = 0;
  bool saw_result = false;
  for (const auto& line : transport_.written()) {
    const json m = json::parse(line);
    if (m.contains("id")) {
      saw_result = true;
      continue;
    }
    ASSERT_EQ(m["method"], "notifications/progress");
    EXPECT_FALSE(saw_result) << "progress after the result";
    EXPECT_EQ(m["params"]["progressToken"], "tok-1");
    const double progress = m["params"]["progress"];
    EXPECT_GT(progress, last_progress);
    last_progress = progress;
    streamed += m["params"]["message"].get<std::string>();
    ++notifications;
  }
  EXPECT_GE(notifications, 2);  // part1 goes out at once, the rest 250 ms later
  EXPECT_EQ(streamed, "part1\npart2 \xE2\x82\xAC end\n");
}

TEST_F(SessionTest, ProgressIsCoalesced) {
  const json params{{"name", "execute_command"},
                    {"arguments", {{"command", "emit-many"}}},
                    {"_meta", {{"progressToken", 77}}}};
  ASSERT_EQ(request(1, "tools/call", params)["result"]["isError"], false);
  std::string streamed;
  int notifications = 0;
  for (const auto& line : transport_.written()) {
    const json m = json::parse(line);
    if (m.value("method", "") != "notifications/progress") continue;
    EXPECT_EQ(m["params"]["progressToken"], 77);
    streamed += m["params"]["message"].get<std::string>();
    ++notifications;
  }
  EXPECT_EQ(streamed, std::string(1000, 'x'));
  EXPECT_GE(notifications, 1);
  EXPECT_LT(notifications, 50);  // 1000 chunks emitted back to back
}

TEST_F(SessionTest, NoProgressWithoutToken) {
  call(1, "execute_command", json{{"command", "emit"}});
  EXPECT_EQ(transport_.written().size(), 1u);
}

TEST_F(SessionTest, EndOfInputCancelsRunningCallsAndAnswersThem) {
  send_request(1, "tools/call",
               json{{"name", "execute_command"}, {"arguments", {{"command", "slow"}}}});
  send_request(2, "tools/call",
               json{{"name", "execute_command"}, {"arguments", {{"command", "slow"}}}});
  ASSERT_TRUE(agent_.wait_slow_started(2, kWait));
  EXPECT_EQ(stop(), 0);
  EXPECT_TRUE(agent_.wait_slow_finished(2, 0s));
  for (int id : {1, 2}) {
    const auto response = transport_.wait_for_response(id, 0s);
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ((*response)["result"]["structuredContent"]["cancelled"], true);
    EXPECT_EQ((*response)["result"]["structuredContent"]["success"], false);
  }
}

TEST_F(SessionTest, QueuedCallsBeyondThePoolWaitAndAreCancelledOnShutdown) {
  for (int id = 1; id <= 5; ++id) {  // pool of 4: the fifth waits in the queue
    send_request(id, "tools/call",
                 json{{"name", "execute_command"}, {"arguments", {{"command", "slow"}}}});
  }
  ASSERT_TRUE(agent_.wait_slow_started(4, kWait));
  EXPECT_EQ(request(6, "ping")["result"], json::object());
  EXPECT_EQ(stop(), 0);
  EXPECT_EQ(agent_.executions(), 4);  // the queued one never started
  const auto queued = transport_.wait_for_response(5, 0s);
  ASSERT_TRUE(queued.has_value());
  EXPECT_EQ((*queued)["result"]["isError"], true);
}

TEST(SessionEof, FinishOnEofAnswersTheCallsAlreadyReceived) {
  for (const bool finish : {false, true}) {
    SCOPED_TRACE(finish ? "--on-eof finish" : "--on-eof cancel");
    FakeAgent agent;
    MemoryTransport transport;
    ServerOptions options =
        server_options("1.2.3", 1);  // one call at a time: the second one queues
    options.finish_calls_on_eof = finish;
    Session session(agent, transport, options);
    auto done = std::async(std::launch::async, [&] { return session.run(); });
    // "emit" with a progress token takes 250 ms; "echo hi" waits behind it; then the input ends.
    auto request = [&](int id, const std::string& command, json meta) {
      json params{{"name", "execute_command"}, {"arguments", {{"command", command}}}};
      if (!meta.is_null()) params["_meta"] = std::move(meta);
      transport.push_line(json{
          {"jsonrpc", "2.0"},
          {"id", id},
          {"method", "tools/call"},
          {"params", params}}.dump());
    };
    request(1, "emit", json{{"progressToken", "p"}});
    request(2, "echo hi", nullptr);
    transport.end_input();
    ASSERT_EQ(done.wait_for(kWait), std::future_status::ready);
    EXPECT_EQ(done.get(), 0);
    const auto first = transport.wait_for_response(1, 0s);
    const auto second = transport.wait_for_response(2, 0s);
    ASSERT_TRUE(first.has_value() && second.has_value());
    if (finish) {
      EXPECT_EQ((*first)["result"]["isError"], false) << first->dump();
    }
    // Cancelled before it started, or run and answered.
    EXPECT_EQ((*second)["result"]["isError"], !finish) << second->dump();
    EXPECT_LE(agent.max_in_flight(), 1) << "more calls at once than --max-concurrent";
    if (finish) {
      EXPECT_EQ(agent.max_in_flight(), 1);  // both ran, one after the other
      EXPECT_EQ((*second)["result"]["structuredContent"]["stdout"], "hi\n");
    }
  }
}

TEST(SessionEof, StopDuringAFinishOnEofStillCancels) {
  FakeAgent agent;
  MemoryTransport transport;
  ServerOptions options = server_options("1.2.3", 4);
  options.finish_calls_on_eof = true;
  Session session(agent, transport, options);
  auto done = std::async(std::launch::async, [&] { return session.run(); });
  transport.push_line(
      json{{"jsonrpc", "2.0"},
           {"id", 1},
           {"method", "tools/call"},
           {"params", {{"name", "execute_command"}, {"arguments", {{"command", "slow"}}}}}}
          .dump());
  ASSERT_TRUE(agent.wait_slow_started(1, kWait));
  transport.end_input();
  std::this_thread::sleep_for(100ms);  // the session is now finishing the slow call
  EXPECT_EQ(done.wait_for(0s), std::future_status::timeout) << "finish did not wait";
  session.request_stop();  // SIGTERM
  ASSERT_TRUE(agent.wait_slow_finished(1, kWait)) << "the slow call was not cancelled";
  ASSERT_EQ(done.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(done.get(), 0);
  const auto response = transport.wait_for_response(1, kWait);
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ((*response)["result"]["structuredContent"]["cancelled"], true);
}

// Calls waiting for a slot are bounded: each may hold a message of up to --max-message-bytes.
TEST(SessionLimits, CallsPastTheWaitingRoomAreAnsweredServerBusy) {
  FakeAgent agent;
  MemoryTransport transport;
  ServerOptions options = server_options("1.2.3", 1);
  options.max_queued_calls = 2;
  Session session(agent, transport, options);
  auto done = std::async(std::launch::async, [&] { return session.run(); });
  auto slow = [&](int id) {
    transport.push_line(
        json{{"jsonrpc", "2.0"},
             {"id", id},
             {"method", "tools/call"},
             {"params", {{"name", "execute_command"}, {"arguments", {{"command", "slow"}}}}}}
            .dump());
  };
  slow(1);
  ASSERT_TRUE(agent.wait_slow_started(1, kWait));
  slow(2);  // waits
  slow(3);  // waits
  slow(4);  // no room
  const auto busy = transport.wait_for_response(4, kWait);
  ASSERT_TRUE(busy.has_value());
  EXPECT_EQ((*busy)["error"]["code"], -32000);
  EXPECT_NE((*busy)["error"]["message"].get<std::string>().find("busy"), std::string::npos);
  EXPECT_FALSE(transport.wait_for_response(2, 0s).has_value());
  transport.end_input();  // cancels all: the waiting calls are answered without running
  ASSERT_EQ(done.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(done.get(), 0);
  EXPECT_EQ(agent.executions(), 1);
  for (int id : {1, 2, 3}) EXPECT_TRUE(transport.wait_for_response(id, 0s).has_value()) << id;
}

// A client that stops reading while sending requests would make the server queue their answers
// without end; past --max-outbound-bytes the session ends as if the client had closed its end.
TEST(SessionLimits, AClientThatLeavesTooMuchUnreadIsDisconnected) {
  FakeAgent agent;
  MemoryTransport transport;
  ServerOptions options = server_options("1.2.3", 2);
  options.max_outbound_bytes = 64 * 1024;
  options.shutdown_grace = std::chrono::milliseconds(10);
  Session session(agent, transport, options);
  auto done = std::async(std::launch::async, [&] { return session.run(); });
  transport.stall_writes();
  for (int i = 0; i < 5000; ++i) {  // ~40 bytes of answer each: 200 KB
    transport.push_line(json{{"jsonrpc", "2.0"}, {"id", i}, {"method", "ping"}}.dump());
  }
  ASSERT_EQ(done.wait_for(kWait), std::future_status::ready) << "the session did not end";
  EXPECT_EQ(done.get(), 0);
}

TEST_F(SessionTest, RequestStopFromAnotherThreadEndsRun) {
  send_request(1, "tools/call",
               json{{"name", "execute_command"}, {"arguments", {{"command", "slow"}}}});
  ASSERT_TRUE(agent_.wait_slow_started(1, kWait));
  std::thread([this] { session_->request_stop(); }).join();
  ASSERT_EQ(done_.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(done_.get(), 0);
  EXPECT_TRUE(transport_.wait_for_response(1, 0s).has_value());
  session_.reset();
}

TEST_F(SessionTest, WriteFailureEndsTheSession) {
  transport_.fail_writes();
  send_request(1, "ping");
  ASSERT_EQ(done_.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(done_.get(), 0);
  session_.reset();
}

}  // namespace
}  // namespace execmcp::host::mcp
