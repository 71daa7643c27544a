// What an MCP tool is to the session: a name, JSON Schemas, and a handler that calls the Agent.
#pragma once

#include <functional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/agent.hpp"
#include "execmcp/sdk/types.hpp"

namespace execmcp::host::tools {

// A tools/call result. Failures of the command, a filter or the backend are results with
// is_error set, so the model can read them; only malformed arguments are protocol errors.
struct ToolResult {
  std::string text;           // readable rendering for the model (valid UTF-8)
  nlohmann::json structured;  // structuredContent; null to leave it out
  bool is_error = false;
};

// The arguments do not match the input schema; becomes JSON-RPC error -32602.
struct ArgumentError {
  std::string message;  // names the argument
};

using ToolOutcome = std::variant<ToolResult, ArgumentError>;

struct ToolContext {
  Agent& agent;
  sdk::OutputSink* sink = nullptr;  // set when the client asked for progress
  const sdk::CancelToken* cancel = nullptr;
  std::string principal;  // who asked (token name, or "stdio"): for the audit trail
  std::string task{};     // the MCP task this call runs for ("" for a plain call): for the audit
};

struct Tool {
  std::string name;
  std::string title;
  std::string description;
  nlohmann::json input_schema;
  nlohmann::json output_schema;
  std::function<ToolOutcome(const nlohmann::json& arguments, ToolContext& context)> run;
  // Offered only to agents whose backend runs background processes.
  bool requires_background = false;
  // MCP 2025-11-25's execution.taskSupport: "optional" (a client may ask for a task) or, when
  // false, "forbidden" (left out of tools/list): the tools that answer at once.
  bool task_optional = false;
};

// Whether `agent` gets `tool` (in tools/list and tools/call).
[[nodiscard]] inline bool offered_to(const Tool& tool, const Agent& agent) {
  return !tool.requires_background || agent.capabilities().background;
}

[[nodiscard]] Tool make_execute_command_tool();
[[nodiscard]] Tool make_read_file_tool();
[[nodiscard]] Tool make_write_file_tool();
[[nodiscard]] Tool make_read_docstring_tool();
// start_background_shell, get_background_shell_output, get_background_shell_status,
// kill_background_shell, list_background_shells (each requires_background).
[[nodiscard]] std::vector<Tool> make_background_shell_tools();

// Every tool execmcp serves, in the order tools/list shows them (each agent gets those it can use).
[[nodiscard]] std::vector<Tool> make_builtin_tools();

}  // namespace execmcp::host::tools
