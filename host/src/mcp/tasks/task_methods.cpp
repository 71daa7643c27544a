// The router's tasks/* handlers (MCP 2025-11-25, and 2026-07-28's extension
// io.modelcontextprotocol/tasks; the router has checked the revision and the extension): each
// looks up the caller's own task in the
// service's store and answers in task_wire's shapes. Only tasks/result may answer later.
#include <spdlog/spdlog.h>

#include "common/utf8.hpp"
#include "mcp/mcp_router.hpp"
#include "mcp/protocol.hpp"
#include "mcp/tasks/task_wire.hpp"

namespace execmcp::host::mcp {

using nlohmann::json;

namespace {

// params.taskId, or the error to answer with.
std::variant<std::string, RpcError> task_id_of(const Request& request) {
  const auto id = request.params.find("taskId");
  if (id == request.params.end() || !id->is_string() || id->get_ref<const std::string&>().empty())
    return RpcError{rpc_error::kInvalidParams, "Invalid params: 'taskId' (a string) is required"};
  return id->get<std::string>();
}

// Logged with who asked (the spec: log task retrieval with its authorization context); the id
// only in part, as it is the task's only secret where callers are not told apart. A poll
// (tasks/get) is a debug line, reading a result an info line.
void log_lookup(std::string_view what, const std::string& id, const CallerContext& caller,
                bool found, spdlog::level::level_enum level = spdlog::level::debug) {
  spdlog::log(level, "mcp: {} task {}… by '{}' on agent '{}': {}", what,
              sanitize_utf8(id.substr(0, 8)), caller.principal, caller.agent->id(),
              found ? "found" : "not found");
}

}  // namespace

void McpRouter::tasks_get(Request& request, Responder& responder, Context& context) {
  auto id = task_id_of(request);
  if (auto* error = std::get_if<RpcError>(&id)) return responder.reply(std::move(*error));
  const std::string& task_id = std::get<std::string>(id);
  if (context.caller.protocol_version == protocol::kStateless) {
    auto viewed = service_.tasks().store().view(task_owner(context.caller), task_id);
    log_lookup("get", task_id, context.caller,
               std::holds_alternative<tasks::TaskStore::View>(viewed));
    if (auto* error = std::get_if<tasks::TaskError>(&viewed)) {
      return responder.reply(tasks::task_error(
          *error, "retrieve", service_.tasks().store().options(), context.caller.agent->id()));
    }
    const auto& view = std::get<tasks::TaskStore::View>(viewed);
    return responder.reply(service_.finish_result(
        tasks::extension_detailed_task(view.task, view.outcome ? &*view.outcome : nullptr),
        context.caller, false));
  }
  auto found = service_.tasks().store().get(task_owner(context.caller), task_id);
  log_lookup("get", task_id, context.caller, std::holds_alternative<tasks::TaskSnapshot>(found));
  if (auto* error = std::get_if<tasks::TaskError>(&found)) {
    return responder.reply(tasks::task_error(*error, "retrieve", service_.tasks().store().options(),
                                             context.caller.agent->id()));
  }
  responder.reply(tasks::task_json(std::get<tasks::TaskSnapshot>(found)));
}

void McpRouter::tasks_result(Request& request, Responder& responder, Context& context) {
  auto id = task_id_of(request);
  if (auto* error = std::get_if<RpcError>(&id)) return responder.reply(std::move(*error));
  const std::string task_id = std::get<std::string>(id);
  // Answered when the task's work has ended (at once if it has): exactly what the call would
  // have answered, with the related-task _meta. No thread waits meanwhile.
  auto error = service_.tasks().store().wait_result(
      task_owner(context.caller), task_id,
      [responder, task_id](const tasks::TaskSnapshot&, const RpcOutcome& outcome) {
        if (const auto* result = std::get_if<json>(&outcome)) {
          json answer = *result;
          tasks::add_related_task(answer, task_id);
          return responder.reply(std::move(answer));
        }
        RpcError failed = std::get<RpcError>(outcome);
        responder.reply(std::move(failed));
      });
  log_lookup("result of", task_id, context.caller, !error, spdlog::level::info);
  // Until its result, the task's status and progress come on this request's own answer (on
  // HTTP the only stream a client has open while it waits).
  if (!error && context.stream) service_.stream_task_to(task_id, context.stream);
  if (error) {
    responder.reply(tasks::task_error(*error, "retrieve", service_.tasks().store().options(),
                                      context.caller.agent->id()));
  }
}

void McpRouter::tasks_list(Request& request, Responder& responder, Context& context) {
  if (!context.caller.identified) {
    // Every unauthenticated caller looks alike: listing would show one client another's tasks.
    return responder.reply(RpcError{
        rpc_error::kMethodNotFound,
        "Method not found: tasks/list needs authentication (this server has none, so it cannot "
        "tell whose tasks are whose); keep the taskId CreateTaskResult gave you"});
  }
  std::string cursor;
  if (const auto given = request.params.find("cursor");
      given != request.params.end() && !given->is_null()) {
    if (!given->is_string())
      return responder.reply(
          RpcError{rpc_error::kInvalidParams, "Invalid params: 'cursor' must be a string"});
    cursor = given->get<std::string>();
  }
  auto page = service_.tasks().store().list(task_owner(context.caller), cursor);
  if (!page) {
    return responder.reply(RpcError{rpc_error::kInvalidParams,
                                    "Invalid params: unknown cursor (use nextCursor as given)"});
  }
  json list = json::array();
  for (const tasks::TaskSnapshot& task : page->tasks) list.push_back(tasks::task_json(task));
  json result{{"tasks", std::move(list)}};
  if (!page->next_cursor.empty()) result["nextCursor"] = page->next_cursor;
  responder.reply(std::move(result));
}

void McpRouter::tasks_cancel(Request& request, Responder& responder, Context& context) {
  auto id = task_id_of(request);
  if (auto* error = std::get_if<RpcError>(&id)) return responder.reply(std::move(*error));
  const std::string& task_id = std::get<std::string>(id);
  auto cancelled = service_.tasks().store().cancel(task_owner(context.caller), task_id,
                                                   "cancelled by tasks/cancel");
  const bool extension = context.caller.protocol_version == protocol::kStateless;
  if (auto* error = std::get_if<tasks::TaskError>(&cancelled);
      error != nullptr && !(extension && *error == tasks::TaskError::kTerminal)) {
    log_lookup("cancel", task_id, context.caller, false);
    return responder.reply(tasks::task_error(*error, "cancel", service_.tasks().store().options(),
                                             context.caller.agent->id()));
  }
  if (!std::holds_alternative<tasks::TaskError>(cancelled)) {
    spdlog::info("mcp: task {}… cancelled by '{}' on agent '{}'",
                 sanitize_utf8(task_id.substr(0, 8)), context.caller.principal,
                 context.caller.agent->id());
    context.caller.agent->audit_task(
        TaskAuditEvent{"task:cancelled", task_id, context.caller.principal, ""});
  }
  // The extension's cancel is an empty acknowledgement (also for a task that already ended).
  if (extension)
    return responder.reply(service_.finish_result(json::object(), context.caller, false));
  responder.reply(tasks::task_json(std::get<tasks::TaskSnapshot>(cancelled)));
}

void McpRouter::tasks_update(Request& request, Responder& responder, Context& context) {
  auto id = task_id_of(request);
  if (auto* error = std::get_if<RpcError>(&id)) return responder.reply(std::move(*error));
  const std::string& task_id = std::get<std::string>(id);
  // execmcp never asks a task for input, so there is nothing to deliver: a known task's update
  // is acknowledged, an unknown one is not found.
  auto found = service_.tasks().store().get(task_owner(context.caller), task_id);
  log_lookup("update", task_id, context.caller, std::holds_alternative<tasks::TaskSnapshot>(found));
  if (auto* error = std::get_if<tasks::TaskError>(&found)) {
    return responder.reply(tasks::task_error(*error, "update", service_.tasks().store().options(),
                                             context.caller.agent->id()));
  }
  responder.reply(service_.finish_result(json::object(), context.caller, false));
}

}  // namespace execmcp::host::mcp
