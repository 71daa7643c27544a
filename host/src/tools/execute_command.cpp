// The execute_command tool: runs a shell command through the agent's filters and backend.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "common/utf8.hpp"
#include "tools/tool.hpp"
#include "tools/tool_arguments.hpp"

namespace execmcp::host::tools {
namespace {

using nlohmann::json;

constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600.0;  // far above any agent's limit; no overflow

json input_schema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "command": {"type": "string", "description": "Shell command to run (sh -c)."},
      "timeout": {"type": "number", "minimum": 0,
                  "description": "Timeout in seconds, more than 0; default: the agent's configured timeout."},
      "work_dir": {"type": "string",
                   "description": "Working directory (absolute, or relative to the workspace); default: the workspace."}
    },
    "required": ["command"],
    "additionalProperties": false
  })");
}

json output_schema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "success": {"type": "boolean", "description": "Ran, exited 0 and did not time out."},
      "exit_code": {"type": "integer", "description": "-1 when the command did not exit normally."},
      "stdout": {"type": "string"},
      "stderr": {"type": "string"},
      "execution_time": {"type": "number", "description": "Seconds."},
      "timed_out": {"type": "boolean"},
      "truncated": {"type": "boolean", "description": "stdout or stderr was cut at the output cap."},
      "cancelled": {"type": "boolean"},
      "blocked_by": {"type": "string", "description": "The filter that refused the command."},
      "rule": {"type": "string", "description": "The filter rule that matched."},
      "error": {"type": "string", "description": "Why the command was not run."},
      "notices": {"type": "array", "items": {"type": "string"}},
      "command": {"type": "string", "description": "The command as sent."},
      "work_dir": {"type": "string", "description": "The directory it ran in (or would have)."}
    },
    "required": ["success", "exit_code", "stdout", "stderr", "execution_time", "timed_out",
                 "truncated", "cancelled", "command", "work_dir"]
  })");
}

// Each stream is cut where its JSON-escaped form would pass the output cap, so a response is at
// most 2 x (stdout cap + stderr cap) plus a small constant (the streams appear in `text` and in
// `structuredContent`), whatever the bytes: a NUL costs 6 bytes escaped, an invalid byte 3 (as
// U+FFFD), a quote 2. Sets the result's truncated flags when it cuts.
json to_structured(ExecuteOutcome& outcome, const ExecuteArgs& args, const std::string& cwd) {
  sdk::ExecResult& r = outcome.result;
  const bool ran = !outcome.blocked && r.error.empty();
  bool stdout_cut = false;
  bool stderr_cut = false;
  std::string out = sanitize_utf8_within(r.stdout_data, outcome.output_cap, stdout_cut);
  std::string err = sanitize_utf8_within(r.stderr_data, outcome.output_cap, stderr_cut);
  r.stdout_truncated = r.stdout_truncated || stdout_cut;
  r.stderr_truncated = r.stderr_truncated || stderr_cut;
  json s{{"success", ran && r.exit_code == 0 && !r.timed_out && !r.cancelled},
         {"exit_code", r.exit_code},
         {"stdout", std::move(out)},
         {"stderr", std::move(err)},
         {"execution_time", r.duration_seconds},
         {"timed_out", r.timed_out},
         {"truncated", r.stdout_truncated || r.stderr_truncated},
         {"cancelled", r.cancelled},
         {"command", sanitize_utf8(args.command)},
         // The backend's resolved directory; else (an agent that did not say) the lexical join.
         {"work_dir",
          sanitize_utf8(
              !r.work_dir.empty() ? r.work_dir
              : args.work_dir.empty()
                  ? cwd
                  : (std::filesystem::path(cwd) / args.work_dir).lexically_normal().string())}};
  if (outcome.blocked) {
    s["blocked_by"] = sanitize_utf8(outcome.blocked_by);
    s["rule"] = sanitize_utf8(outcome.rule);
    s["error"] =
        sanitize_utf8(outcome.reason.empty() ? "blocked by a command filter" : outcome.reason);
  } else if (!r.error.empty()) {
    s["error"] = sanitize_utf8(r.error);
  }
  if (!r.notices.empty()) {
    json notices = json::array();
    for (const auto& n : r.notices) notices.push_back(sanitize_utf8(n));
    s["notices"] = std::move(notices);
  }
  return s;
}

std::string render(const json& s, const ExecuteOutcome& outcome) {
  std::ostringstream text;
  if (outcome.blocked) {
    text << "Command blocked by filter '" << s["blocked_by"].get<std::string>() << "'";
    if (!outcome.rule.empty()) text << " (rule: " << s["rule"].get<std::string>() << ")";
    text << ": " << s["error"].get<std::string>() << "\nThe command was not run.";
    return text.str();
  }
  if (!outcome.result.error.empty()) {
    text << "Command could not be run: " << s["error"].get<std::string>();
  } else {
    text << "Exit code: " << outcome.result.exit_code;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", outcome.result.duration_seconds);
    text << " (" << seconds << " s)";
    if (outcome.result.timed_out) text << "\nThe command timed out and was killed.";
    if (outcome.result.cancelled) text << "\nThe command was cancelled and killed.";
    const auto& out = s["stdout"].get_ref<const std::string&>();
    const auto& err = s["stderr"].get_ref<const std::string&>();
    text << "\n--- stdout ---\n" << (out.empty() ? "(empty)\n" : out);
    if (!out.empty() && out.back() != '\n') text << '\n';
    text << "--- stderr ---\n" << (err.empty() ? "(empty)" : err);
    if (outcome.result.stdout_truncated || outcome.result.stderr_truncated) {
      text << "\n[output truncated: ";
      if (outcome.result.stdout_truncated) text << "stdout";
      if (outcome.result.stdout_truncated && outcome.result.stderr_truncated) text << " and ";
      if (outcome.result.stderr_truncated) text << "stderr";
      text << " exceeded the output cap (" << outcome.output_cap
           << " bytes, counted as escaped in this response); the rest was dropped]";
    }
  }
  if (s.contains("notices")) {
    for (const auto& n : s["notices"]) text << "\nNote: " << n.get<std::string>();
  }
  return text.str();
}

ToolOutcome run(const json& arguments, ToolContext& context) {
  ToolArguments args(arguments, {"command", "timeout", "work_dir"});
  ExecuteArgs exec;
  exec.command = args.required_string("command");
  const auto timeout = args.optional_number("timeout");
  exec.work_dir = args.optional_path("work_dir").value_or("");
  if (timeout) {
    if (!std::isfinite(*timeout) || *timeout <= 0) {
      args.fail("argument 'timeout' must be a positive number of seconds");
    } else if (*timeout > kMaxTimeoutSeconds) {
      args.fail("argument 'timeout' must be at most " +
                std::to_string(static_cast<long>(kMaxTimeoutSeconds)) + " seconds");
    } else {
      exec.timeout = std::chrono::milliseconds(static_cast<long long>(std::ceil(*timeout * 1000)));
    }
  }
  if (!args.error() && exec.command.find_first_not_of(" \t\r\n") == std::string::npos) {
    args.fail("argument 'command' must not be empty");
  }
  if (args.error()) return ArgumentError{*args.error()};

  exec.principal = context.principal;
  exec.task = context.task;
  ExecuteOutcome outcome = context.agent.execute(exec, context.sink, context.cancel);
  json structured = to_structured(outcome, exec, context.agent.cwd());
  ToolResult result;
  result.text = render(structured, outcome);
  result.is_error = outcome.blocked || !outcome.result.error.empty();
  result.structured = std::move(structured);
  return result;
}

}  // namespace

Tool make_execute_command_tool() {
  return Tool{
      "execute_command",
      "Execute command",
      "Run a shell command in this agent's workspace and return its exit code, stdout and stderr. "
      "Commands pass the agent's command filters first; a refused command is reported, not run. "
      "Output past the per-stream cap is dropped and flagged as truncated.",
      input_schema(),
      output_schema(),
      run,
      false,
      true,  // long commands may run as MCP tasks
  };
}

}  // namespace execmcp::host::tools
