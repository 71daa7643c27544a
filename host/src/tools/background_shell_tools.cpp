// The five background-shell tools (MassGen's names, parameters and fields), over the agent's table.
#include <algorithm>
#include <cmath>
#include <ctime>

#include "common/utf8.hpp"
#include "tools/tool.hpp"
#include "tools/tool_arguments.hpp"

namespace execmcp::host::tools {
namespace {

using nlohmann::json;

// The agent's shells, or the answers of an agent without any.
BackgroundShellControl& shells_of(Agent& agent) {
  static UnavailableBackgroundShells unavailable;
  BackgroundShellControl* shells = agent.background_shells();
  return shells != nullptr ? *shells : unavailable;
}

ToolResult failure(const std::string& error, json extra = json::object()) {
  json structured{{"success", false}, {"error", sanitize_utf8(error)}};
  for (auto& [key, value] : extra.items()) structured[key] = value;
  return ToolResult{sanitize_utf8(error), std::move(structured), true};
}

ToolResult success(json structured) {
  std::string text = structured.dump(2, ' ', false, json::error_handler_t::replace);
  return ToolResult{std::move(text), std::move(structured), false};
}

// ISO 8601 in UTC with microseconds, e.g. 2026-11-23T16:04:07.123456Z.
std::string iso8601(std::chrono::system_clock::time_point when) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(when.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(micros / 1000000);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char text[48];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(text + n, sizeof text - n, ".%06lldZ", static_cast<long long>(micros % 1000000));
  return text;
}

json exit_code_json(const BackgroundShellStatus& status) {
  return status.exit_code ? json(*status.exit_code) : json(nullptr);
}

json status_json(const BackgroundShellStatus& status) {
  json s{{"shell_id", status.shell_id},
         {"status", status.status},
         {"exit_code", exit_code_json(status)},
         {"pid", status.pid > 0 ? json(status.pid) : json(nullptr)},
         {"command", sanitize_utf8(status.command)},
         {"cwd", sanitize_utf8(status.cwd)},
         {"start_time", iso8601(status.start_time)},
         {"duration_seconds", std::round(status.duration_seconds * 100.0) / 100.0}};
  if (status.command_truncated) s["command_truncated"] = true;
  if (!status.error.empty()) s["error"] = sanitize_utf8(status.error);
  return s;
}

// One stream of an output answer: lines joined by "\n" (MassGen's shape), bounded by `cap` bytes
// as JSON-escaped, like execute_command's streams.
struct RenderedStream {
  std::string text;
  std::uint64_t next_seq = 0;  // the cursor position after what was shown
  bool truncated = false;      // the cap left lines (or part of one) out
};

RenderedStream render_stream(const StreamSlice& slice, std::size_t cap) {
  RenderedStream out;
  std::vector<std::string> shown;  // sanitized pieces, in output order
  std::size_t used = 0;
  // Fits `bytes` (plus its separator) in what is left; a piece that cannot fit whole is cut when
  // nothing was shown yet, so every answer makes progress.
  auto take = [&](std::string_view bytes, bool& cut) {
    std::string text = sanitize_utf8(bytes);
    const std::size_t cost = json_escaped_size(text) + (shown.empty() ? 0 : 1);
    cut = false;
    if (used + cost <= cap) {
      used += cost;
      shown.push_back(std::move(text));
      return true;
    }
    if (!shown.empty()) return false;
    text = sanitize_utf8_within(bytes, cap - used, cut);
    used = cap;
    shown.push_back(std::move(text));
    cut = true;
    return true;
  };
  const std::uint64_t all = slice.start_seq + slice.lines.size();
  if (slice.from_newest) {
    // No cursor: the newest lines that fit, the tail first.
    std::vector<std::string_view> pieces;  // newest first
    if (!slice.tail.empty()) pieces.push_back(slice.tail);
    for (auto it = slice.lines.rbegin(); it != slice.lines.rend(); ++it) pieces.push_back(*it);
    bool cut = false;
    for (const std::string_view piece : pieces) {
      if (!take(piece, cut) || cut) break;
    }
    out.truncated = shown.size() < pieces.size() || cut;
    std::reverse(shown.begin(), shown.end());
    out.next_seq = all;
  } else {
    // From the cursor on: the oldest lines that fit; the cursor moves past them only.
    std::uint64_t consumed = 0;
    bool cut = false;
    for (const auto& line : slice.lines) {
      if (!take(line, cut)) break;
      ++consumed;
      if (cut) break;
    }
    out.truncated = consumed < slice.lines.size() || cut;
    if (consumed == slice.lines.size() && !cut && !slice.tail.empty()) {
      // Shown, not consumed: it comes again, complete, after its newline.
      if (!take(slice.tail, cut) || cut) out.truncated = true;
    }
    out.next_seq = slice.start_seq + consumed;
  }
  for (std::size_t i = 0; i < shown.size(); ++i) {
    if (i > 0) out.text += '\n';
    out.text += shown[i];
  }
  return out;
}

// ---- start_background_shell ----

ToolOutcome run_start(const json& arguments, ToolContext& context) {
  ToolArguments args(arguments, {"command", "work_dir"});
  BackgroundStartArgs start;
  start.command = args.required_string("command");
  start.work_dir = args.optional_path("work_dir").value_or("");
  if (!args.error() && start.command.find_first_not_of(" \t\r\n") == std::string::npos)
    args.fail("argument 'command' must not be empty");
  if (args.error()) return ArgumentError{*args.error()};
  start.principal = context.principal;
  const BackgroundStartResult result = shells_of(context.agent).start(start);
  if (!result.error.empty()) {
    json extra = json::object();
    if (!result.blocked_by.empty()) {
      extra["blocked_by"] = sanitize_utf8(result.blocked_by);
      extra["rule"] = sanitize_utf8(result.rule);
    }
    return failure(result.error, std::move(extra));
  }
  const BackgroundShellStatus& s = result.status;
  json started{{"success", true},
               {"shell_id", s.shell_id},
               {"status", s.status},
               {"command", sanitize_utf8(s.command)},
               {"pid", s.pid > 0 ? json(s.pid) : json(nullptr)},
               {"work_dir", sanitize_utf8(s.cwd)}};
  if (s.command_truncated) started["command_truncated"] = true;
  return success(std::move(started));
}

// ---- get_background_shell_output ----

ToolOutcome run_output(const json& arguments, ToolContext& context) {
  ToolArguments args(arguments, {"shell_id", "cursor", "max_lines"});
  const std::string shell_id = args.required_string("shell_id");
  const auto cursor = args.optional_string("cursor");
  const auto max_lines = args.optional_integer("max_lines");
  if (!args.error() && max_lines &&
      (*max_lines < 1 || *max_lines > static_cast<std::int64_t>(kBackgroundMaxLinesPerRead))) {
    args.fail("argument 'max_lines' must be from 1 to " +
              std::to_string(kBackgroundMaxLinesPerRead));
  }
  if (args.error()) return ArgumentError{*args.error()};
  const BackgroundOutput output =
      shells_of(context.agent)
          .output(shell_id, cursor,
                  max_lines ? std::optional<std::size_t>(static_cast<std::size_t>(*max_lines))
                            : std::nullopt,
                  context.principal);
  if (!output.error.empty()) return failure(output.error);
  const RenderedStream out = render_stream(output.stdout_slice, output.output_cap);
  const RenderedStream err = render_stream(output.stderr_slice, output.output_cap);
  json structured{{"success", true},
                  {"shell_id", output.status.shell_id},
                  {"stdout", out.text},
                  {"stderr", err.text},
                  {"status", output.status.status},
                  {"exit_code", exit_code_json(output.status)},
                  {"next_cursor", format_cursor({out.next_seq, err.next_seq})},
                  {"stdout_dropped_lines", output.stdout_slice.dropped_lines},
                  {"stderr_dropped_lines", output.stderr_slice.dropped_lines},
                  {"truncated_lines",
                   output.stdout_slice.truncated_lines + output.stderr_slice.truncated_lines},
                  {"truncated", out.truncated || err.truncated}};
  if (!output.status.error.empty()) structured["error"] = sanitize_utf8(output.status.error);
  return success(std::move(structured));
}

// ---- get_background_shell_status ----

ToolOutcome run_status(const json& arguments, ToolContext& context) {
  ToolArguments args(arguments, {"shell_id"});
  const std::string shell_id = args.required_string("shell_id");
  if (args.error()) return ArgumentError{*args.error()};
  const auto status = shells_of(context.agent).status(shell_id, context.principal);
  if (!status) return failure("Shell not found: " + sanitize_utf8(shell_id));
  json structured = status_json(*status);
  structured["success"] = true;
  return success(std::move(structured));
}

// ---- kill_background_shell ----

ToolOutcome run_kill(const json& arguments, ToolContext& context) {
  ToolArguments args(arguments, {"shell_id"});
  const std::string shell_id = args.required_string("shell_id");
  if (args.error()) return ArgumentError{*args.error()};
  const BackgroundKillResult result = shells_of(context.agent).kill(shell_id, context.principal);
  if (!result.error.empty()) return failure(result.error);
  // "killed" only when the backend confirmed the whole tree ended; a shell whose supervisor was
  // killed under it ends "failed" with the reason, and saying "killed" would hide a survivor.
  if (result.was_running && result.status.status != "killed") {
    const std::string why =
        result.status.error.empty() ? "the process did not end as killed" : result.status.error;
    return failure("Kill sent, but the shell ended " + result.status.status + ": " + why,
                   json{{"shell_id", result.status.shell_id},
                        {"status", result.status.status},
                        {"error", sanitize_utf8(why)}});
  }
  if (result.was_running) {
    return success(json{{"success", true},
                        {"shell_id", result.status.shell_id},
                        {"status", "killed"},
                        {"signal", "SIGTERM"},
                        {"forced", result.forced}});
  }
  return success(json{{"success", true},
                      {"shell_id", result.status.shell_id},
                      {"status", result.status.status},
                      {"signal", nullptr},
                      {"message", "Process already terminated"}});
}

// ---- list_background_shells ----

ToolOutcome run_list(const json& arguments, ToolContext& context) {
  ToolArguments args(arguments, {});
  if (args.error()) return ArgumentError{*args.error()};
  json shells = json::array();
  for (const auto& status : shells_of(context.agent).list(context.principal))
    shells.push_back(status_json(status));
  const std::size_t count = shells.size();
  return success(json{{"success", true}, {"shells", std::move(shells)}, {"count", count}});
}

json shell_id_schema() {
  return json{{"type", "string"},
              {"description", "The shell_id start_background_shell returned (shell_ + 8 hex)."}};
}

json status_properties() {
  return json::parse(R"({
    "success": {"type": "boolean"},
    "shell_id": {"type": "string"},
    "status": {"type": "string", "enum": ["running", "stopped", "failed", "killed"]},
    "exit_code": {"type": ["integer", "null"], "description": "null while running; -N for signal N."},
    "pid": {"type": ["integer", "null"]},
    "command": {"type": "string", "description": "At most 1 KiB; a longer one ends with '… (N bytes, cut)'."},
    "command_truncated": {"type": "boolean", "description": "Present (true) when the command is cut."},
    "cwd": {"type": "string"},
    "start_time": {"type": "string", "description": "ISO 8601, UTC."},
    "duration_seconds": {"type": "number"},
    "error": {"type": "string"}
  })");
}

Tool background_tool(std::string name, std::string title, std::string description,
                     json input_schema, json output_schema,
                     std::function<ToolOutcome(const json&, ToolContext&)> run) {
  Tool tool{std::move(name),         std::move(title),         std::move(description),
            std::move(input_schema), std::move(output_schema), std::move(run)};
  tool.requires_background = true;
  return tool;
}

}  // namespace

std::vector<Tool> make_background_shell_tools() {
  std::vector<Tool> tools;
  tools.push_back(background_tool(
      "start_background_shell", "Start background shell",
      "Start a shell command in the background (a server, a watcher, a long build) and return its "
      "shell_id at once. The command passes this agent's command filters like execute_command. "
      "Read its output with get_background_shell_output; stop it with kill_background_shell.",
      json::parse(R"({
        "type": "object",
        "properties": {
          "command": {"type": "string", "description": "Shell command to run (sh -c)."},
          "work_dir": {"type": "string", "description": "Working directory (absolute, or relative to the workspace); default: the workspace."}
        },
        "required": ["command"],
        "additionalProperties": false
      })"),
      json::parse(R"({
        "type": "object",
        "properties": {
          "success": {"type": "boolean"},
          "shell_id": {"type": "string"},
          "status": {"type": "string"},
          "command": {"type": "string", "description": "At most 1 KiB; a longer one ends with '… (N bytes, cut)'."},
          "command_truncated": {"type": "boolean", "description": "Present (true) when the command is cut."},
          "pid": {"type": ["integer", "null"]},
          "work_dir": {"type": "string"},
          "error": {"type": "string"},
          "blocked_by": {"type": "string"},
          "rule": {"type": "string"}
        },
        "required": ["success"]
      })"),
      run_start));

  json output_input = json::parse(R"({
    "type": "object",
    "properties": {
      "cursor": {"type": "string", "description": "The next_cursor of your previous read: only lines after it come back. Omit it to get everything kept."},
      "max_lines": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "At most this many lines per stream."}
    },
    "required": ["shell_id"],
    "additionalProperties": false
  })");
  output_input["properties"]["shell_id"] = shell_id_schema();
  tools.push_back(background_tool(
      "get_background_shell_output", "Get background shell output",
      "Read a background shell's stdout and stderr (the last 10,000 lines of each are kept) and "
      "its status. Pass the returned next_cursor on the next call to get only new lines.",
      std::move(output_input), json::parse(R"({
        "type": "object",
        "properties": {
          "success": {"type": "boolean"},
          "shell_id": {"type": "string"},
          "stdout": {"type": "string"},
          "stderr": {"type": "string"},
          "status": {"type": "string"},
          "exit_code": {"type": ["integer", "null"]},
          "next_cursor": {"type": "string"},
          "stdout_dropped_lines": {"type": "integer", "description": "Lines evicted before you read them."},
          "stderr_dropped_lines": {"type": "integer"},
          "truncated_lines": {"type": "integer", "description": "Lines cut at 64 KiB."},
          "truncated": {"type": "boolean", "description": "The output cap left lines out; read again with next_cursor."},
          "error": {"type": "string"}
        },
        "required": ["success"]
      })"),
      run_output));

  json id_only = json{{"type", "object"},
                      {"properties", {{"shell_id", shell_id_schema()}}},
                      {"required", json::array({"shell_id"})},
                      {"additionalProperties", false}};
  tools.push_back(background_tool(
      "get_background_shell_status", "Get background shell status",
      "Status of a background shell: running, stopped (exit 0), failed or killed, with its exit "
      "code, pid, command, directory, start time and duration.",
      id_only,
      json{{"type", "object"},
           {"properties", status_properties()},
           {"required", json::array({"success"})}},
      run_status));

  tools.push_back(background_tool(
      "kill_background_shell", "Kill background shell",
      "Stop a background shell and every process it started (SIGTERM, a grace period, then "
      "SIGKILL); returns once they are gone.",
      id_only, json::parse(R"({
        "type": "object",
        "properties": {
          "success": {"type": "boolean"},
          "shell_id": {"type": "string"},
          "status": {"type": "string"},
          "signal": {"type": ["string", "null"]},
          "forced": {"type": "boolean", "description": "SIGKILL was needed after the grace period."},
          "message": {"type": "string"},
          "error": {"type": "string"}
        },
        "required": ["success"]
      })"),
      run_kill));

  json list_output = json::parse(R"({
    "type": "object",
    "properties": {
      "success": {"type": "boolean"},
      "count": {"type": "integer"}
    },
    "required": ["success", "shells", "count"]
  })");
  list_output["properties"]["shells"] = json{
      {"type", "array"}, {"items", json{{"type", "object"}, {"properties", status_properties()}}}};
  tools.push_back(background_tool(
      "list_background_shells", "List background shells",
      "All of this agent's background shells (running, and the most recent finished ones) with "
      "their status.",
      json::parse(
          R"({"type": "object", "properties": {}, "required": [], "additionalProperties": false})"),
      std::move(list_output), run_list));
  return tools;
}

}  // namespace execmcp::host::tools
