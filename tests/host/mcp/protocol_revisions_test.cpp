// The MCP revisions over one stream: 2026-07-28's stateless requests (server/discover, _meta per
// request, its error codes and result fields) next to the handshake revisions up to 2025-11-25.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "fake_agent.hpp"
#include "mcp/protocol.hpp"
#include "transport/stdio/memory_transport.hpp"
#include "transport/stdio/session.hpp"

namespace execmcp::host::mcp {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using testing::FakeAgent;

constexpr auto kWait = 10s;

json modern_meta(std::string version = protocol::kStateless) {
  return json{{protocol::kMetaProtocolVersion, std::move(version)},
              {protocol::kMetaClientCapabilities, json::object()},
              {protocol::kMetaClientInfo, {{"name", "client2"}, {"version", "2.4.0"}}}};
}

class Revisions : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.server_version = "9.9.9";
    options.task_after = 100ms;  // the 2026-07-28 tasks extension's window, shortened
    session_ = std::make_unique<Session>(agent_, transport_, options);
    done_ = std::async(std::launch::async, [this] { return session_->run(); });
  }
  void TearDown() override {
    transport_.end_input();
    ASSERT_EQ(done_.wait_for(kWait), std::future_status::ready);
    session_.reset();
  }
  json request(const json& id, const std::string& method, json params = json::object()) {
    transport_.push_line(
        json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}
            .dump());
    auto response = transport_.wait_for_response(id, kWait);
    EXPECT_TRUE(response.has_value()) << "no response to " << method;
    return response.value_or(json::object());
  }

  FakeAgent agent_;
  MemoryTransport transport_;
  std::unique_ptr<Session> session_;
  std::future<int> done_;
};

TEST_F(Revisions, DiscoverWithoutAnyHandshakeDescribesTheServer) {
  const json response = request("d", "server/discover", json{{"_meta", modern_meta()}});
  const json& result = response["result"];
  EXPECT_EQ(result["resultType"], "complete");
  EXPECT_EQ(result["supportedVersions"][0], "2026-07-28");
  EXPECT_NE(std::find(result["supportedVersions"].begin(), result["supportedVersions"].end(),
                      "2025-06-18"),
            result["supportedVersions"].end());
  EXPECT_TRUE(result["capabilities"].contains("tools"));
  EXPECT_EQ(result["_meta"][protocol::kMetaServerInfo]["name"], "execmcp");
  EXPECT_EQ(result["_meta"][protocol::kMetaServerInfo]["version"], "9.9.9");
  EXPECT_TRUE(result["ttlMs"].is_number_integer());
  EXPECT_GE(result["ttlMs"].get<int>(), 0);
  EXPECT_EQ(result["cacheScope"], "private");
  EXPECT_TRUE(result["instructions"].is_string());
  EXPECT_FALSE(result.contains("serverInfo")) << "serverInfo lives in _meta in 2026-07-28";
}

TEST_F(Revisions, StatelessToolsListAndCallCarryResultTypeWithoutInitialize) {
  const json list = request(1, "tools/list", json{{"_meta", modern_meta()}});
  EXPECT_EQ(list["result"]["resultType"], "complete");
  EXPECT_EQ(list["result"]["tools"].size(), 4u);
  EXPECT_TRUE(list["result"].contains("ttlMs"));
  const json call = request(2, "tools/call",
                            json{{"name", "execute_command"},
                                 {"arguments", {{"command", "echo hi"}}},
                                 {"_meta", modern_meta()}});
  EXPECT_EQ(call["result"]["resultType"], "complete");
  EXPECT_EQ(call["result"]["structuredContent"]["stdout"], "hi\n");
  EXPECT_EQ(call["result"]["_meta"][protocol::kMetaServerInfo]["name"], "execmcp");
  EXPECT_FALSE(call["result"].contains("ttlMs"));
}

TEST_F(Revisions, EachRequestIsServedInTheRevisionItNames) {
  // A handshake-era client and stateless requests share the stream; neither leaks into the other.
  const json init = request(1, "initialize",
                            json{{"protocolVersion", "2025-06-18"},
                                 {"capabilities", json::object()},
                                 {"clientInfo", {{"name", "old"}, {"version", "1"}}}});
  EXPECT_EQ(init["result"]["protocolVersion"], "2025-06-18");
  const json legacy = request(2, "tools/list");
  EXPECT_FALSE(legacy["result"].contains("resultType"));
  const json modern = request(3, "tools/list", json{{"_meta", modern_meta()}});
  EXPECT_EQ(modern["result"]["resultType"], "complete");
  const json legacy_again = request(4, "tools/list");
  EXPECT_FALSE(legacy_again["result"].contains("resultType"));
}

TEST_F(Revisions, AnUnsupportedRevisionInMetaGetsMinus32022ListingWhatWeSpeak) {
  const json response = request(7, "tools/list", json{{"_meta", modern_meta("v999.0.0")}});
  EXPECT_EQ(response["id"], 7);
  EXPECT_EQ(response["error"]["code"], protocol::kUnsupportedProtocolVersion);
  EXPECT_EQ(response["error"]["data"]["requested"], "v999.0.0");
  EXPECT_EQ(response["error"]["data"]["supported"], protocol::supported_versions_json());
}

TEST_F(Revisions, MissingClientCapabilitiesOrABadVersionTypeIsInvalidParams) {
  json meta = modern_meta();
  meta.erase(protocol::kMetaClientCapabilities);
  const json missing = request(1, "server/discover", json{{"_meta", meta}});
  EXPECT_EQ(missing["error"]["code"], rpc_error::kInvalidParams);
  EXPECT_NE(missing["error"]["message"].get<std::string>().find("clientCapabilities"),
            std::string::npos);
  json typed = modern_meta();
  typed[protocol::kMetaProtocolVersion] = 20260728;
  EXPECT_EQ(request(2, "tools/list", json{{"_meta", typed}})["error"]["code"],
            rpc_error::kInvalidParams);
  // clientInfo is only a SHOULD.
  json no_info = modern_meta();
  no_info.erase(protocol::kMetaClientInfo);
  EXPECT_EQ(request(3, "server/discover", json{{"_meta", no_info}})["result"]["resultType"],
            "complete");
}

TEST_F(Revisions, HandshakeMethodsDoNotExistInTheStatelessRevision) {
  for (const char* method : {"initialize", "ping"}) {
    json params{{"_meta", modern_meta()}};
    if (std::string(method) == "initialize") params["protocolVersion"] = "2025-11-25";
    const json response = request(method, method, params);
    EXPECT_EQ(response["error"]["code"], rpc_error::kMethodNotFound) << method;
  }
}

TEST_F(Revisions, InvalidToolArgumentsAreToolErrorsSince20251125) {
  // 2025-11-25 and 2026-07-28: a result the model can read; 2025-06-18: a protocol error.
  const json modern = request(
      1, "tools/call",
      json{
          {"name", "execute_command"}, {"arguments", {{"command", 42}}}, {"_meta", modern_meta()}});
  EXPECT_EQ(modern["result"]["isError"], true) << modern.dump();
  EXPECT_NE(modern["result"]["content"][0]["text"].get<std::string>().find("command"),
            std::string::npos);
  request(2, "initialize",
          json{{"protocolVersion", "2025-06-18"}, {"capabilities", json::object()}});
  const json old =
      request(3, "tools/call", json{{"name", "execute_command"}, {"arguments", {{"command", 42}}}});
  EXPECT_EQ(old["error"]["code"], rpc_error::kInvalidParams) << old.dump();
}

// --- Tasks: 2025-11-25's, 2026-07-28's extension, and none before (docs/protocol.md#tasks) ---

json initialize_params(const std::string& version) {
  return json{{"protocolVersion", version}, {"capabilities", json::object()}};
}

json tasks_meta() {
  json meta = modern_meta();
  meta[protocol::kMetaClientCapabilities] = {
      {"extensions", {{"io.modelcontextprotocol/tasks", json::object()}}}};
  return meta;
}

TEST_F(Revisions, TasksIn2025_11_25) {
  const json init = request(1, "initialize", initialize_params("2025-11-25"));
  EXPECT_EQ(init["result"]["capabilities"]["tasks"],
            (json{{"list", json::object()},
                  {"cancel", json::object()},
                  {"requests", {{"tools", {{"call", json::object()}}}}}}));
  const json list = request(2, "tools/list");
  for (const json& tool : list["result"]["tools"]) {
    if (tool["name"] == "execute_command") {
      EXPECT_EQ(tool["execution"]["taskSupport"], "optional");
    } else {
      EXPECT_FALSE(tool.contains("execution")) << tool["name"];
    }
  }
  const json created = request(3, "tools/call",
                               json{{"name", "execute_command"},
                                    {"arguments", {{"command", "echo hi"}}},
                                    {"task", {{"ttl", 60000}}}});
  const std::string id = created["result"]["task"]["taskId"];
  EXPECT_EQ(created["result"]["task"]["status"], "working");
  EXPECT_EQ(created["result"]["task"]["ttl"], 60000);
  const json result = request(4, "tasks/result", json{{"taskId", id}});
  EXPECT_EQ(result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id);
  EXPECT_NE(result["result"]["content"][0]["text"].get<std::string>().find("hi"),
            std::string::npos);
  EXPECT_EQ(request(5, "tasks/get", json{{"taskId", id}})["result"]["status"], "completed");
  // A task that waits for its cancel: tasks/cancel answers cancelled, then its result comes.
  const json slow = request(6, "tools/call",
                            json{{"name", "execute_command"},
                                 {"arguments", {{"command", "slow"}}},
                                 {"task", json::object()}});
  const std::string slow_id = slow["result"]["task"]["taskId"];
  EXPECT_EQ(request(7, "tasks/cancel", json{{"taskId", slow_id}})["result"]["status"], "cancelled");
  EXPECT_TRUE(request(8, "tasks/result", json{{"taskId", slow_id}}).contains("result"));
  EXPECT_EQ(request(9, "tasks/cancel", json{{"taskId", slow_id}})["error"]["code"],
            rpc_error::kInvalidParams);
  const json listed = request(10, "tasks/list");
  EXPECT_EQ(listed["result"]["tasks"].size(), 2u);
  // A tool whose taskSupport is forbidden: -32601.
  EXPECT_EQ(request(11, "tools/call",
                    json{{"name", "read_file"},
                         {"arguments", {{"path", "x"}}},
                         {"task", json::object()}})["error"]["code"],
            rpc_error::kMethodNotFound);
}

TEST_F(Revisions, NoTasksBefore2025_11_25) {
  const json init = request(1, "initialize", initialize_params("2025-06-18"));
  EXPECT_FALSE(init["result"]["capabilities"].contains("tasks"));
  for (const char* method : {"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"}) {
    EXPECT_EQ(request(method, method, json{{"taskId", "x"}})["error"]["code"],
              rpc_error::kMethodNotFound)
        << method;
  }
  const json call = request(2, "tools/call",
                            json{{"name", "execute_command"},
                                 {"arguments", {{"command", "echo hi"}}},
                                 {"task", json::object()}});
  EXPECT_FALSE(call["result"].contains("task")) << "the task param is ignored: " << call.dump();
  EXPECT_TRUE(call["result"].contains("content"));
}

TEST_F(Revisions, TasksExtensionIn2026_07_28) {
  const json discover = request(1, "server/discover", json{{"_meta", modern_meta()}});
  EXPECT_EQ(discover["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
            json::object());
  // Without the extension: answered directly; tasks/* need it.
  const json plain = request(2, "tools/call",
                             json{{"name", "execute_command"},
                                  {"arguments", {{"command", "echo hi"}}},
                                  {"_meta", modern_meta()}});
  EXPECT_EQ(plain["result"]["resultType"], "complete");
  EXPECT_EQ(
      request(3, "tasks/get", json{{"taskId", "x"}, {"_meta", modern_meta()}})["error"]["code"],
      protocol::kMissingRequiredClientCapability);
  // With it: a command that ends within the window is answered directly...
  const json quick = request(4, "tools/call",
                             json{{"name", "execute_command"},
                                  {"arguments", {{"command", "echo hi"}}},
                                  {"_meta", tasks_meta()}});
  EXPECT_EQ(quick["result"]["resultType"], "complete") << quick.dump();
  EXPECT_TRUE(quick["result"].contains("content"));
  // ...and one still running then becomes a task the client polls and may cancel.
  const json created = request(5, "tools/call",
                               json{{"name", "execute_command"},
                                    {"arguments", {{"command", "slow"}}},
                                    {"_meta", tasks_meta()}});
  EXPECT_EQ(created["result"]["resultType"], "task") << created.dump();
  const std::string id = created["result"]["taskId"];
  EXPECT_EQ(
      request(6, "tasks/get", json{{"taskId", id}, {"_meta", tasks_meta()}})["result"]["status"],
      "working");
  for (const char* method : {"tasks/result", "tasks/list"}) {
    EXPECT_EQ(
        request(method, method, json{{"taskId", id}, {"_meta", tasks_meta()}})["error"]["code"],
        rpc_error::kMethodNotFound)
        << method;
  }
  EXPECT_EQ(request(7, "tasks/cancel",
                    json{{"taskId", id}, {"_meta", tasks_meta()}})["result"]["resultType"],
            "complete");
  json got;
  for (int i = 0; i < 200; ++i) {
    got = request(100 + i, "tasks/get", json{{"taskId", id}, {"_meta", tasks_meta()}});
    if (got["result"].contains("result")) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(got["result"]["status"], "cancelled") << got.dump();
}

}  // namespace
}  // namespace execmcp::host::mcp
