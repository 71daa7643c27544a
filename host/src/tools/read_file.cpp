// The read_file tool: returns a slice of a text file's lines from the agent's allowed paths.
#include <algorithm>
#include <cstdint>
#include <string_view>

#include "common/utf8.hpp"
#include "tools/tool.hpp"
#include "tools/tool_arguments.hpp"

namespace execmcp::host::tools {
namespace {

using nlohmann::json;

constexpr std::int64_t kMaxLines = 20000;              // per call; the model pages with offset
constexpr std::size_t kMaxContentBytes = 1024 * 1024;  // per call

json input_schema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "path": {"type": "string", "description": "File path (absolute, or relative to the workspace)."},
      "offset": {"type": "integer", "minimum": 0, "description": "Number of lines to skip from the start (default 0 = from the first line)."},
      "line_count": {"type": "integer", "minimum": 1, "description": "Number of lines to return (default: all, up to 20000)."}
    },
    "required": ["path"],
    "additionalProperties": false
  })");
}

json output_schema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "path": {"type": "string"},
      "content": {"type": "string", "description": "The lines, with their line endings."},
      "total_lines": {"type": "integer"},
      "offset": {"type": "integer", "description": "The lines skipped, as requested."},
      "start_line": {"type": "integer", "description": "1-based number of the first line returned."},
      "lines_returned": {"type": "integer"},
      "truncated": {"type": "boolean", "description": "Fewer lines were returned than requested (a cap was reached); continue with the offset the notice names."},
      "notice": {"type": "string"}
    },
    "required": ["path", "content", "total_lines", "offset", "start_line", "lines_returned", "truncated"]
  })");
}

// Byte offsets where each line starts; a trailing newline does not start a new line.
std::vector<std::size_t> line_starts(std::string_view data) {
  std::vector<std::size_t> starts;
  if (data.empty()) return starts;
  starts.push_back(0);
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (data[i] == '\n' && i + 1 < data.size()) starts.push_back(i + 1);
  }
  return starts;
}

ToolOutcome run(const json& arguments, ToolContext& context) {
  ToolArguments args(arguments, {"path", "offset", "line_count"});
  const std::string path = args.required_path("path");
  // offset = lines skipped from the start (MassGen's file API), so `first` is the 0-based index of
  // the first line returned.
  const std::int64_t offset = args.optional_integer("offset").value_or(0);
  const std::int64_t first = offset;
  const auto line_count = args.optional_integer("line_count");
  if (!args.error() && path.empty()) args.fail("argument 'path' must not be empty");
  if (!args.error() && offset < 0) {
    args.fail(
        "argument 'offset' must be >= 0 (the number of lines to skip; 0 = from the first line)");
  }
  if (!args.error() && line_count && *line_count < 1) {
    args.fail("argument 'line_count' must be >= 1");
  }
  if (args.error()) return ArgumentError{*args.error()};

  sdk::FileReadRequest request{path};
  request.cancel = context.cancel;
  const sdk::FileReadResult file = context.agent.read_file(request, context.principal);
  const std::string shown_path = sanitize_utf8(path);
  if (!file.error.empty()) {
    return ToolResult{"Cannot read " + shown_path + ": " + sanitize_utf8(file.error), nullptr,
                      true};
  }

  const auto starts = line_starts(file.data);
  const auto total = static_cast<std::int64_t>(starts.size());
  std::vector<std::string> notices;
  std::string content;
  std::int64_t returned = 0;
  bool truncated = false;
  if (first >= total && !(first == 0 && total == 0)) {
    notices.push_back("offset " + std::to_string(offset) + " is past the end of the file (" +
                      std::to_string(total) + " lines)");
  } else if (total > 0) {
    const std::int64_t wanted = std::min(line_count.value_or(kMaxLines), kMaxLines);
    const std::int64_t available = total - first;
    std::int64_t end_line = first + std::min(wanted, available);  // exclusive, 0-based
    const std::size_t begin = starts[static_cast<std::size_t>(first)];
    auto end_of = [&](std::int64_t line) {
      return line < total ? starts[static_cast<std::size_t>(line)] : file.data.size();
    };
    // Respect the byte cap, but always return at least one (possibly cut) line.
    while (end_line > first + 1 && end_of(end_line) - begin > kMaxContentBytes) --end_line;
    std::size_t end = end_of(end_line);
    if (end - begin > kMaxContentBytes) {
      end = begin + kMaxContentBytes;
      notices.push_back("line " + std::to_string(first + 1) + " is longer than " +
                        std::to_string(kMaxContentBytes) + " bytes and was cut");
      truncated = true;
    }
    std::string_view slice = std::string_view(file.data).substr(begin, end - begin);
    if (!is_valid_utf8(slice)) {
      notices.push_back(
          "the file is not valid UTF-8 text (binary?); invalid bytes were replaced with U+FFFD");
    }
    // The cap holds for the content as escaped in the response too (a NUL takes 6 bytes there):
    // keep the whole lines that fit, or cut the first line.
    bool cut = false;
    std::size_t consumed = 0;
    content = sanitize_utf8_within(slice, kMaxContentBytes, cut, &consumed);
    if (cut) {
      const std::size_t newline = slice.substr(0, consumed).rfind('\n');
      if (newline != std::string_view::npos) {
        slice = slice.substr(0, newline + 1);
        content = sanitize_utf8(slice);
        end_line = first + static_cast<std::int64_t>(std::count(slice.begin(), slice.end(), '\n'));
      } else {
        end_line = first + 1;
        if (!truncated)
          notices.push_back("line " + std::to_string(first + 1) + " is longer than " +
                            std::to_string(kMaxContentBytes) + " bytes (escaped) and was cut");
      }
      truncated = true;
    }
    returned = end_line - first;
    truncated = truncated || (end_line < total && (!line_count || returned < *line_count));
  }
  if (file.truncated) {
    truncated = true;
    notices.push_back(
        "the file is larger than the read limit; total_lines counts only the part "
        "that was read");
  }
  if (truncated && returned > 0) {
    notices.push_back("showing lines " + std::to_string(first + 1) + "-" +
                      std::to_string(first + returned) + " of " + std::to_string(total) +
                      "; pass offset=" + std::to_string(first + returned) + " to continue");
  }

  json structured{{"path", shown_path},
                  {"content", content},
                  {"total_lines", total},
                  {"offset", offset},
                  {"start_line", std::min(first, total) + 1},
                  {"lines_returned", returned},
                  {"truncated", truncated}};
  std::string text = content;
  if (!notices.empty()) {
    std::string joined;
    for (const auto& n : notices) joined += (joined.empty() ? "" : "; ") + n;
    structured["notice"] = joined;
    if (!text.empty() && text.back() != '\n') text += '\n';
    text += "[" + joined + "]";
  } else if (text.empty()) {
    text = "(empty file)";
  }
  return ToolResult{std::move(text), std::move(structured), false};
}

}  // namespace

Tool make_read_file_tool() {
  return Tool{
      "read_file",
      "Read file",
      "Read a text file from this agent's allowed paths, optionally a slice of its lines "
      "(offset is how many lines to skip from the start, 0 by default; line_count how many to "
      "return).",
      input_schema(),
      output_schema(),
      run,
  };
}

}  // namespace execmcp::host::tools
