// The write_file tool: writes (creates or replaces) a file inside the agent's writable paths.
#include "common/utf8.hpp"
#include "tools/tool.hpp"
#include "tools/tool_arguments.hpp"

namespace execmcp::host::tools {
namespace {

using nlohmann::json;

json input_schema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "path": {"type": "string", "description": "File path (absolute, or relative to the workspace)."},
      "content": {"type": "string", "description": "The whole new content of the file."}
    },
    "required": ["path", "content"],
    "additionalProperties": false
  })");
}

json output_schema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "path": {"type": "string"},
      "bytes_written": {"type": "integer"}
    },
    "required": ["path", "bytes_written"]
  })");
}

ToolOutcome run(const json& arguments, ToolContext& context) {
  ToolArguments args(arguments, {"path", "content"});
  std::string path = args.required_path("path");
  std::string content = args.required_string("content");
  if (!args.error() && path.empty()) args.fail("argument 'path' must not be empty");
  if (args.error()) return ArgumentError{*args.error()};

  const sdk::FileWriteResult written = context.agent.write_file(
      sdk::FileWriteRequest{path, std::move(content), context.cancel}, context.principal);
  const std::string shown_path = sanitize_utf8(path);
  if (!written.error.empty()) {
    return ToolResult{"Cannot write " + shown_path + ": " + sanitize_utf8(written.error), nullptr,
                      true};
  }
  return ToolResult{
      "Wrote " + std::to_string(written.bytes_written) + " bytes to " + shown_path,
      json{{"path", shown_path}, {"bytes_written", written.bytes_written}},
      false,
  };
}

}  // namespace

Tool make_write_file_tool() {
  return Tool{
      "write_file",
      "Write file",
      "Create or overwrite a file inside this agent's writable paths with the given text.",
      input_schema(),
      output_schema(),
      run,
  };
}

}  // namespace execmcp::host::tools
