// What tasks look like on the wire in MCP 2025-11-25 (experimental tasks, part of the core
// revision): the Task object, CreateTaskResult, the status notification, the errors, and the
// related-task _meta. Pure JSON, no state.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mcp/json_rpc.hpp"
#include "mcp/tasks/task_store.hpp"

namespace execmcp::host::mcp::tasks {

// The revision that has these tasks (and the only one: 2026-07-28 moved them to an extension).
inline constexpr const char* kLegacyTasksRevision = "2025-11-25";
inline constexpr const char* kMetaRelatedTask = "io.modelcontextprotocol/related-task";
inline constexpr const char* kStatusNotification = "notifications/tasks/status";

// 2026-11-28T20:56:10.123Z (RFC 3339, UTC, milliseconds).
[[nodiscard]] std::string rfc3339(SystemClock::time_point time);

// {taskId, status, statusMessage?, createdAt, lastUpdatedAt, ttl, pollInterval}
[[nodiscard]] nlohmann::json task_json(const TaskSnapshot& task);
// capabilities.tasks for initialize: list only when the caller is identifiable (the spec: a
// receiver that cannot tell requestors apart SHOULD NOT offer tasks/list).
[[nodiscard]] nlohmann::json capabilities_json(bool list);
// A tools/list entry's execution member for a tool that may run as a task.
[[nodiscard]] nlohmann::json optional_execution_json();

// The status notification (params: the Task).
[[nodiscard]] nlohmann::json status_notification(const TaskSnapshot& task);

// `message` (a response's result, or a notification's params) with the related-task _meta.
void add_related_task(nlohmann::json& object, std::string_view task_id);

// --- MCP 2026-07-28: the extension io.modelcontextprotocol/tasks (SEP-2663) ---
inline constexpr const char* kTasksExtension = "io.modelcontextprotocol/tasks";

// The flat task fields of the extension: {taskId, status, statusMessage?, createdAt,
// lastUpdatedAt, ttlMs, pollIntervalMs}. `status` is given: the extension derives it from the
// outcome differently (see extension_status).
[[nodiscard]] nlohmann::json extension_task_json(const TaskSnapshot& task, TaskStatus status);
// The extension's status: a tool result with isError is `completed` (its result says so); only
// a JSON-RPC error is `failed`.
[[nodiscard]] TaskStatus extension_status(TaskStatus stored, const RpcOutcome* outcome);
// tasks/get's DetailedTask: the flat fields, plus `result` (completed) or `error` (failed).
[[nodiscard]] nlohmann::json extension_detailed_task(const TaskSnapshot& task,
                                                     const RpcOutcome* outcome);
// -32021 for a tasks/* request whose _meta does not declare the extension.
[[nodiscard]] RpcError missing_extension_error(std::string_view method);

// The JSON-RPC error for a refused task request. `doing`: "retrieve", "cancel", "create".
[[nodiscard]] RpcError task_error(TaskError error, std::string_view doing,
                                  const TaskStoreOptions& options, const std::string& agent_id);

}  // namespace execmcp::host::mcp::tasks
