// The MCP router (see mcp_router.hpp): one table of methods for every transport.
#include "mcp/mcp_router.hpp"

#include <utility>

#include <spdlog/spdlog.h>

#include "common/utf8.hpp"
#include "mcp/protocol.hpp"
#include "mcp/tasks/task_wire.hpp"

namespace execmcp::host::mcp {

using nlohmann::json;

// Which revisions have a method.
enum class Revisions {
  kHandshake,    // every revision with initialize
  kAll,          // those and 2026-07-28
  kLegacyTasks,  // 2025-11-25 only (its tasks; 2026-07-28 moved them to an extension)
  kTasks,        // 2025-11-25's tasks and 2026-07-28's extension
  kExtension,    // 2026-07-28's tasks extension only
};

// One request method: the revisions that have it, and its handler.
struct McpRouter::Method {
  std::string_view name;
  Revisions revisions;
  bool resolves;  // served in a resolved revision; initialize negotiates one instead
  void (McpRouter::*handle)(Request& request, Responder& responder, Context& context);
};

namespace {

constexpr std::string_view kCancelled = "notifications/cancelled";
constexpr std::string_view kInitialized = "notifications/initialized";

RpcError not_in_stateless(const std::string& method) {
  return RpcError{rpc_error::kMethodNotFound,
                  "Method not found: " + sanitize_utf8(method.substr(0, 64)) +
                      " is not part of MCP " + protocol::kStateless +
                      " (requests name their revision in _meta; use server/discover)"};
}

}  // namespace

const std::vector<McpRouter::Method>& McpRouter::table() {
  // Adding a method is adding a line here (and its handler).
  static const std::vector<Method> methods{
      {kInitialize, Revisions::kHandshake, false, &McpRouter::initialize},
      {"ping", Revisions::kHandshake, true, &McpRouter::ping},
      {"server/discover", Revisions::kAll, true, &McpRouter::discover},
      {"tools/list", Revisions::kAll, true, &McpRouter::tools_list},
      {"tools/call", Revisions::kAll, true, &McpRouter::call_tool},
      {"tasks/get", Revisions::kTasks, true, &McpRouter::tasks_get},
      {"tasks/result", Revisions::kLegacyTasks, true, &McpRouter::tasks_result},
      {"tasks/list", Revisions::kLegacyTasks, true, &McpRouter::tasks_list},
      {"tasks/cancel", Revisions::kTasks, true, &McpRouter::tasks_cancel},
      {"tasks/update", Revisions::kExtension, true, &McpRouter::tasks_update},
  };
  return methods;
}

std::vector<std::string> McpRouter::request_methods() {
  std::vector<std::string> out;
  for (const Method& method : table()) out.emplace_back(method.name);
  return out;
}

std::vector<std::string> McpRouter::notification_methods() {
  return {std::string(kInitialized), std::string(kCancelled)};
}

std::optional<RpcError> McpRouter::resolve_revision(const Request& request, CallerContext& caller) {
  protocol::MetaOutcome meta = protocol::read_request_meta(request.params);
  if (auto* error = std::get_if<protocol::MetaError>(&meta)) return std::move(error->error);
  if (auto* stateless = std::get_if<protocol::StatelessMeta>(&meta)) {
    // 2026-07-28: this request alone says which revision and client it is; nothing carries over.
    caller.protocol_version = stateless->version;
    caller.client = stateless->client;
    caller.tasks_extension = stateless->tasks_extension;
  }
  return std::nullopt;
}

void McpRouter::handle(Request request, Responder responder, Context context) {
  const Method* method = nullptr;
  for (const Method& candidate : table()) {
    if (candidate.name == request.method) method = &candidate;
  }
  if (method != nullptr && !method->resolves) {
    return (this->*method->handle)(request, responder, context);
  }
  if (auto error = resolve_revision(request, context.caller)) {
    return responder.reply(std::move(*error));
  }
  const bool stateless = context.caller.protocol_version == protocol::kStateless;
  if (method == nullptr) {
    std::vector<std::string_view> names;
    for (const Method& candidate : table()) {
      if (candidate.revisions == Revisions::kAll) names.push_back(candidate.name);
    }
    std::string served;
    for (std::size_t i = 0; i < names.size(); ++i) {
      served += i == 0 ? "" : (i + 1 == names.size() ? " and " : ", ");
      served += names[i];
    }
    return responder.reply(RpcError{
        rpc_error::kMethodNotFound,
        "Method not found: " + sanitize_utf8(request.method.substr(0, 64)) +
            (stateless
                 ? std::string(" (MCP ") + protocol::kStateless + " here serves " + served + ")"
                 : std::string())});
  }
  const Revisions revisions = method->revisions;
  if (stateless && revisions != Revisions::kAll && revisions != Revisions::kTasks &&
      revisions != Revisions::kExtension)
    return responder.reply(not_in_stateless(request.method));
  if (stateless && revisions != Revisions::kAll && !context.caller.tasks_extension) {
    // The extension's methods need the extension declared on the request itself.
    return responder.reply(tasks::missing_extension_error(request.method));
  }
  const bool legacy = context.caller.protocol_version == tasks::kLegacyTasksRevision;
  if ((revisions == Revisions::kLegacyTasks && !legacy) ||
      (revisions == Revisions::kTasks && !legacy && !stateless) ||
      (revisions == Revisions::kExtension && !stateless)) {
    return responder.reply(RpcError{
        rpc_error::kMethodNotFound,
        "Method not found: " + request.method + " is part of MCP " + tasks::kLegacyTasksRevision +
            "'s tasks; this session speaks " +
            (context.caller.protocol_version.empty() ? std::string("no revision (no initialize)")
                                                     : context.caller.protocol_version)});
  }
  if (context.caller.protocol_version.empty() && context.warned_before_initialize != nullptr &&
      !context.warned_before_initialize->exchange(true)) {
    spdlog::warn(
        "mcp: {} before initialize (and without a protocol version in _meta); serving it anyway",
        request.method);
  }
  (this->*method->handle)(request, responder, context);
}

void McpRouter::initialize(Request& request, Responder& responder, Context& context) {
  // A request that names a revision in _meta is served by that revision, which has no handshake.
  if (!std::holds_alternative<protocol::NoMeta>(protocol::read_request_meta(request.params)))
    return responder.reply(not_in_stateless(request.method));
  CallerContext caller = context.caller;
  RpcOutcome outcome = service_.initialize(request, caller);
  if (std::holds_alternative<json>(outcome) && context.keep_session &&
      !context.keep_session(caller)) {
    return responder.drop("answered by the transport");
  }
  responder.reply(std::move(outcome));
}

void McpRouter::ping(Request& /*request*/, Responder& responder, Context& /*context*/) {
  responder.reply(json::object());
}

void McpRouter::discover(Request& /*request*/, Responder& responder, Context& context) {
  responder.reply(service_.discover(context.caller));
}

void McpRouter::tools_list(Request& /*request*/, Responder& responder, Context& context) {
  responder.reply(service_.tools_list(context.caller));
}

void McpRouter::call_tool(Request& request, Responder& responder, Context& context) {
  if (const auto task = request.params.find("task");
      task != request.params.end() && !task->is_null() &&
      context.caller.protocol_version == tasks::kLegacyTasksRevision) {
    // Task-augmented: runs on the task runner, answered at once with CreateTaskResult; the
    // transport's call table never sees it (a closed connection or session does not end it).
    if (!task->is_object()) {
      return responder.reply(RpcError{rpc_error::kInvalidParams,
                                      "Invalid params: 'task' must be an object ({} or {ttl})"});
    }
    return service_.call_tool_as_task(request, responder, context.caller, context.notify);
  }
  if (context.caller.protocol_version == protocol::kStateless && context.caller.tasks_extension) {
    // 2026-07-28 with the tasks extension: the server decides. A command becomes a task (its
    // client polls it); the file tools answer at once. No notifications flow on a task there.
    const auto name = request.params.find("name");
    const tools::Tool* tool =
        name != request.params.end() && name->is_string()
            ? service_.find_tool(*context.caller.agent, name->get<std::string>())
            : nullptr;
    if (tool != nullptr && tool->task_optional) {
      if (service_.tasks().task_after().count() == 0 || !context.start_call)
        return service_.call_tool_as_task(request, responder, context.caller, {});
      // Within its --task-after window it is still a call: the transport records it, so that
      // notifications/cancelled or a closed stream cancels it (and its task).
      auto hooks = context.start_call(request, context.caller, tool->name);
      if (!hooks) return responder.drop("answered by the transport");
      return service_.call_tool_as_task(
          request, responder, context.caller, {},
          McpService::WindowCall{std::move(hooks->state), std::move(hooks->finished),
                                 std::move(hooks->answered)});
    }
  }
  std::optional<CallHooks> hooks;
  if (context.start_call) {
    const auto name = request.params.find("name");
    const std::string tool = service_.tool_label(
        *context.caller.agent,
        name != request.params.end() && name->is_string() ? name->get<std::string>() : "");
    hooks = context.start_call(request, context.caller, tool);
    if (!hooks) return responder.drop("answered by the transport");
  } else {
    hooks = CallHooks{std::make_shared<CallState>(), {}, {}, {}, {}};
  }
  service_.call_tool(McpService::ToolCall{
      std::move(context.caller), std::move(request), std::move(responder), std::move(hooks->state),
      std::move(hooks->send_progress), std::move(hooks->run_here), std::move(hooks->finished),
      std::move(hooks->answered)});
}

void McpRouter::notify(const Notification& notification, CallTable* calls) {
  if (notification.method == kInitialized) {
    spdlog::debug("mcp: client reports initialized");
    return;
  }
  if (notification.method != kCancelled) {
    spdlog::debug("mcp: ignoring notification {}",
                  sanitize_utf8(notification.method.substr(0, 64)));
    return;
  }
  const auto id = notification.params.find("requestId");
  if (id == notification.params.end() || !is_request_id(*id)) {
    spdlog::warn("mcp: notifications/cancelled without a valid requestId; ignored");
    return;
  }
  const std::string key = id->dump();
  if (calls == nullptr || !calls->cancel(key)) {
    spdlog::debug("mcp: cancel for id {} which is not running; ignored", key.substr(0, 64));
    return;
  }
  const std::string reason = sanitize_utf8(string_member(notification.params, "reason"));
  spdlog::info("mcp: client cancelled call {}{}{}", key.substr(0, 64), reason.empty() ? "" : ": ",
               reason);
}

}  // namespace execmcp::host::mcp
