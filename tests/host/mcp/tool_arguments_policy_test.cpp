// Tools stay usable from every mainstream client: every input schema the server lists keeps to the
// keyword subset they all accept, and an argument a client adds on its own (Gemini CLI's
// wait_for_previous) is set aside with a notice instead of failing the call.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "mcp/fake_agent.hpp"
#include "mcp/mcp_service.hpp"
#include "tools/tool_arguments.hpp"

namespace execmcp::host::mcp {
namespace {

using nlohmann::json;
using testing::FakeAgent;

// What Gemini's function declarations (an OpenAPI 3.0 subset), OpenAI's strict function calling,
// Anthropic's and the MCP SDKs all accept. Left out on purpose: exclusiveMinimum/Maximum (refused
// by Gemini's older API), $ref/$defs, oneOf/anyOf/allOf, const, pattern, format, type arrays.
const std::set<std::string> kAllowedKeywords{
    "type", "properties", "required", "description", "items",
    "enum", "minimum",    "maximum",  "default",     "additionalProperties",
};

// Every keyword of `schema` and of the schemas inside it (properties' values, items).
void expect_allowed(const json& schema, const std::string& where) {
  ASSERT_TRUE(schema.is_object()) << where << " is not a schema object";
  for (const auto& [keyword, value] : schema.items()) {
    EXPECT_TRUE(kAllowedKeywords.contains(keyword)) << where << " uses '" << keyword << "'";
  }
  if (const auto type = schema.find("type"); type != schema.end()) {
    EXPECT_TRUE(type->is_string()) << where << ": 'type' must be one name, not a list";
  }
  if (const auto additional = schema.find("additionalProperties"); additional != schema.end()) {
    EXPECT_TRUE(additional->is_boolean()) << where << ": additionalProperties must be a boolean";
  }
  if (const auto properties = schema.find("properties"); properties != schema.end()) {
    ASSERT_TRUE(properties->is_object()) << where;
    for (const auto& [name, property] : properties->items()) {
      expect_allowed(property, where + ".properties." + name);
    }
    for (const auto& name : schema.value("required", json::array())) {
      EXPECT_TRUE(properties->contains(name.get<std::string>()))
          << where << " requires '" << name << "', which it does not declare";
    }
  }
  if (const auto items = schema.find("items"); items != schema.end()) {
    expect_allowed(*items, where + ".items");
  }
}

TEST(ToolSchemas, EveryListedInputSchemaKeepsToTheSubsetEveryClientAccepts) {
  FakeAgent agent;
  agent.offer_background = true;  // the background-shell tools are listed too
  McpService service(ServiceOptions{});
  const RpcOutcome outcome =
      service.tools_list(CallerContext{&agent, "test", "2025-11-25", {}, nullptr});
  ASSERT_TRUE(std::holds_alternative<json>(outcome));
  const json& tools = std::get<json>(outcome)["tools"];
  std::set<std::string> names;
  for (const auto& tool : tools) {
    const std::string name = tool["name"];
    names.insert(name);
    expect_allowed(tool["inputSchema"], name + ".inputSchema");
  }
  for (const char* expected :
       {"execute_command", "read_file", "write_file", "read_docstring", "start_background_shell",
        "get_background_shell_output", "kill_background_shell", "list_background_shells"}) {
    EXPECT_TRUE(names.contains(expected)) << expected << " is not listed";
  }
}

// Runs one tools/call on the service and returns its response (null after 10 s without one).
json call(McpService& service, FakeAgent& agent, const json& arguments,
          const std::string& revision = "2025-11-25") {
  // The answer lives on the heap, shared with the responder: the service may hold the call's
  // responder after this function returned. With the promise and its once_flag on this stack
  // frame instead, under CPU load one answer in four never arrived (10 of 40 runs; 0 of 40 so).
  struct Answer {
    std::promise<json> promise;
    std::once_flag once;
  };
  auto answer = std::make_shared<Answer>();
  auto got = answer->promise.get_future();
  McpService::ToolCall call{
      CallerContext{&agent, "test", revision, {}, nullptr},
      Request{1, "tools/call", json{{"name", "execute_command"}, {"arguments", arguments}}},
      Responder(1, "tools/call",
                [answer](const json& message) {
                  std::call_once(answer->once, [&] { answer->promise.set_value(message); });
                }),
      std::make_shared<CallState>(),
      {},
      {},
      {},
      {}};
  service.call_tool(std::move(call));
  if (got.wait_for(std::chrono::seconds(10)) != std::future_status::ready) return json();
  return got.get();
}

TEST(UndeclaredArguments, WaitForPreviousIsIgnoredWithANoticeAndTheCallRuns) {
  FakeAgent agent;
  McpService service(ServiceOptions{});
  const json response =
      call(service, agent, json{{"command", "echo hi"}, {"wait_for_previous", true}});
  ASSERT_TRUE(response.contains("result")) << response;
  const json& result = response["result"];
  EXPECT_FALSE(result["isError"].get<bool>()) << result;
  EXPECT_EQ(agent.executions(), 1);
  EXPECT_EQ(result["structuredContent"]["stdout"], "hi\n");
  ASSERT_EQ(result["content"].size(), 2u) << result;
  const std::string notice = result["content"][1]["text"];
  EXPECT_NE(notice.find("ignored the argument 'wait_for_previous'"), std::string::npos) << notice;
  EXPECT_NE(notice.find("command, timeout, work_dir"), std::string::npos) << notice;
}

TEST(UndeclaredArguments, AKnownArgumentOfTheWrongTypeIsStillAnError) {
  FakeAgent agent;
  McpService service(ServiceOptions{});
  const json response =
      call(service, agent, json{{"command", "echo hi"}, {"timeout", "soon"}, {"extra", 1}});
  ASSERT_TRUE(response.contains("result")) << response;
  EXPECT_TRUE(response["result"]["isError"].get<bool>());
  EXPECT_NE(response["result"]["content"][0]["text"].get<std::string>().find("timeout"),
            std::string::npos);
  EXPECT_EQ(agent.executions(), 0);
  // Before 2025-11-25 a bad argument is a protocol error, as it always was.
  const json old =
      call(service, agent, json{{"command", 5}, {"wait_for_previous", true}}, "2025-06-18");
  EXPECT_EQ(old["error"]["code"], rpc_error::kInvalidParams) << old;
}

TEST(UndeclaredArguments, ZeroAndNegativeTimeoutsAreStillRefusedClearly) {
  FakeAgent agent;
  McpService service(ServiceOptions{});
  for (const double timeout : {0.0, -1.0}) {
    const json response = call(service, agent, json{{"command", "echo hi"}, {"timeout", timeout}});
    ASSERT_TRUE(response.contains("result")) << response;
    EXPECT_TRUE(response["result"]["isError"].get<bool>());
    EXPECT_NE(response["result"]["content"][0]["text"].get<std::string>().find(
                  "'timeout' must be a positive number of seconds"),
              std::string::npos)
        << response;
  }
  EXPECT_EQ(agent.executions(), 0);
}

TEST(UndeclaredArguments, TheNoticeIsBoundedWhateverTheClientSends) {
  json arguments = json::object();
  for (int i = 0; i < 1000; ++i) arguments[std::string(500, 'x') + std::to_string(i)] = i;
  const json schema = json::parse(
      R"({"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false})");
  const tools::UndeclaredArguments set_aside = tools::set_aside_undeclared(schema, arguments);
  EXPECT_EQ(set_aside.ignored.size(), 1000u);
  EXPECT_TRUE(set_aside.kept.empty());
  const std::string notice = tools::ignored_arguments_notice("t", schema, set_aside.ignored);
  EXPECT_LT(notice.size(), 1000u) << notice.size();
  EXPECT_NE(notice.find("and 992 more"), std::string::npos);
  // A schema that does not close its argument list keeps everything for the tool.
  EXPECT_TRUE(tools::set_aside_undeclared(json{{"type", "object"}}, arguments).ignored.empty());
}

}  // namespace
}  // namespace execmcp::host::mcp
