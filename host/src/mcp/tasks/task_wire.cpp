// MCP 2025-11-25 task shapes (see task_wire.hpp).
#include "mcp/tasks/task_wire.hpp"

#include <cstdio>
#include <ctime>

namespace execmcp::host::mcp::tasks {

using nlohmann::json;

namespace {

// JSON-RPC's server-error range, as the call limits use it (HTTP 429/503 by data.limit).
constexpr int kBusy = -32000;

}  // namespace

std::string rfc3339(SystemClock::time_point time) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch());
  const std::time_t seconds = static_cast<std::time_t>(ms.count() / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(ms.count() % 1000));
  return text;
}

json task_json(const TaskSnapshot& task) {
  json out{{"taskId", task.id},
           {"status", std::string(to_string(task.status))},
           {"createdAt", rfc3339(task.created_at)},
           {"lastUpdatedAt", rfc3339(task.last_updated_at)},
           {"ttl", task.ttl.count()},
           {"pollInterval", task.poll_interval.count()}};
  if (!task.status_message.empty()) out["statusMessage"] = task.status_message;
  return out;
}

json capabilities_json(bool list) {
  json out{{"cancel", json::object()}, {"requests", {{"tools", {{"call", json::object()}}}}}};
  if (list) out["list"] = json::object();
  return out;
}

json optional_execution_json() {
  return json{{"taskSupport", "optional"}};
}

json status_notification(const TaskSnapshot& task) {
  return make_notification(kStatusNotification, task_json(task));
}

void add_related_task(json& object, std::string_view task_id) {
  object["_meta"][kMetaRelatedTask] = json{{"taskId", std::string(task_id)}};
}

json extension_task_json(const TaskSnapshot& task, TaskStatus status) {
  json out{{"taskId", task.id},
           {"status", std::string(to_string(status))},
           {"createdAt", rfc3339(task.created_at)},
           {"lastUpdatedAt", rfc3339(task.last_updated_at)},
           {"ttlMs", task.ttl.count()},
           {"pollIntervalMs", task.poll_interval.count()}};
  if (!task.status_message.empty()) out["statusMessage"] = task.status_message;
  return out;
}

TaskStatus extension_status(TaskStatus stored, const RpcOutcome* outcome) {
  if (stored != TaskStatus::kFailed || outcome == nullptr) return stored;
  return std::holds_alternative<json>(*outcome) ? TaskStatus::kCompleted : TaskStatus::kFailed;
}

json extension_detailed_task(const TaskSnapshot& task, const RpcOutcome* outcome) {
  const TaskStatus status = extension_status(task.status, outcome);
  json out = extension_task_json(task, status);
  if (outcome == nullptr) return out;
  if (status == TaskStatus::kCompleted && std::holds_alternative<json>(*outcome)) {
    json result = std::get<json>(*outcome);
    // The call's own envelope stays outside: the inlined result is a plain CallToolResult.
    result.erase("resultType");
    result.erase("_meta");
    out["result"] = std::move(result);
  } else if (status == TaskStatus::kFailed && std::holds_alternative<RpcError>(*outcome)) {
    const RpcError& error = std::get<RpcError>(*outcome);
    json wire{{"code", error.code}, {"message", error.message}};
    if (!error.data.is_null()) wire["data"] = error.data;
    out["error"] = std::move(wire);
  }
  return out;
}

RpcError missing_extension_error(std::string_view method) {
  return RpcError{
      -32021,
      "Missing required client capability: " + std::string(method) + " needs the extension " +
          kTasksExtension + " in _meta['io.modelcontextprotocol/clientCapabilities'].extensions",
      json{{"requiredCapabilities", {{"extensions", {{kTasksExtension, json::object()}}}}}}};
}

RpcError task_error(TaskError error, std::string_view doing, const TaskStoreOptions& options,
                    const std::string& agent_id) {
  const std::string failed = "Failed to " + std::string(doing) + " task: ";
  switch (error) {
    case TaskError::kNotFound:
      return RpcError{rpc_error::kInvalidParams, failed + "Task not found"};
    case TaskError::kExpired:
      return RpcError{rpc_error::kInvalidParams, failed + "Task has expired"};
    case TaskError::kTerminal:
      return RpcError{rpc_error::kInvalidParams,
                      failed + "Task has already ended (a terminal status never changes)"};
    case TaskError::kOwnerCap: {
      const std::string max = std::to_string(options.max_live_per_owner);
      return RpcError{
          kBusy,
          "Too many tasks: you have " + max + " tasks running for agent '" + agent_id +
              "' (--max-tasks-per-principal); cancel one, or wait for one to end",
          json{{"retryAfterSeconds", 5}, {"limit", "tasks"}, {"max", options.max_live_per_owner}}};
    }
    case TaskError::kServerCap:
      return RpcError{kBusy,
                      "Server busy: the server holds " + std::to_string(options.max_live) +
                          " tasks, the most it keeps; retry when some have expired",
                      json{{"retryAfterSeconds", 5}, {"limit", "server"}}};
  }
  return RpcError{rpc_error::kInternalError, failed + "internal error"};
}

}  // namespace execmcp::host::mcp::tasks
