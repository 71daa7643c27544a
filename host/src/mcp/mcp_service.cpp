// The MCP methods and the tool-call workers every transport shares (see mcp_service.hpp).
#include "mcp/mcp_service.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/utf8.hpp"
#include "mcp/tasks/task_wire.hpp"
#include "tools/tool_arguments.hpp"

namespace execmcp::host::mcp {

using nlohmann::json;

namespace {

std::size_t clamp_limit(std::size_t limit) {
  return std::clamp<std::size_t>(limit, 1, 1024);
}

// `notice` (may be empty) follows the tool's text as a content block of its own, so the tool's
// text and structuredContent stay exactly what the tool made.
json to_call_result(const tools::ToolResult& result, const std::string& notice = {}) {
  json content = json::array({json{{"type", "text"}, {"text", sanitize_utf8(result.text)}}});
  if (!notice.empty()) content.push_back(json{{"type", "text"}, {"text", notice}});
  json reply{{"content", std::move(content)}, {"isError", result.is_error}};
  if (!result.structured.is_null()) reply["structuredContent"] = result.structured;
  return reply;
}

std::string instructions_for(const Agent& agent) {
  return sanitize_utf8(
      "This server runs shell commands for agent '" + agent.id() + "' in its workspace " +
      agent.cwd() +
      ". Use execute_command to run commands (each call passes the agent's command filters; a "
      "refused command is reported, not run), read_file and write_file for files inside the "
      "agent's allowed paths, and read_docstring to read the documentation of a Python tool "
      "function without running it." +
      (agent.capabilities().background
           ? std::string(" start_background_shell runs a long command in the background; read it "
                         "with get_background_shell_output (pass next_cursor for new lines only) "
                         "and stop it with kill_background_shell.")
           : std::string()));
}

// The answer to a call past its agent's or its user's bound (HTTP 429), naming the bound.
RpcError busy_key(const Agent& agent, const CallLimit& limit, const McpService::KeyBound& bound) {
  const std::string calls = std::to_string(bound.calls);
  if (!limit.per_user) {
    return RpcError{kServerBusy,
                    "Server busy: agent '" + agent.id() + "' already has " + calls +
                        " calls running or waiting (" + bound.set_by +
                        "); retry when one has finished",
                    json{{"retryAfterSeconds", 1}, {"limit", "agent"}, {"max", bound.calls}}};
  }
  return RpcError{kServerBusy,
                  "Too many calls: you already have " + calls + " calls to agent '" + agent.id() +
                      "' running or waiting, the most one user may have (" + bound.set_by +
                      "); retry when one has finished",
                  json{{"retryAfterSeconds", 1}, {"limit", "user"}, {"max", bound.calls}}};
}

// Runs `action` when it goes out of scope, however the scope is left.
template <typename F>
class ScopeExit {
 public:
  explicit ScopeExit(F action) : action_(std::move(action)) {}
  ~ScopeExit() { action_(); }
  ScopeExit(const ScopeExit&) = delete;
  ScopeExit& operator=(const ScopeExit&) = delete;

 private:
  F action_;
};

}  // namespace

// What an admitted call holds: its agent's count, and (once acquired) a global slot. Released by
// the destructor, so no exit path can leak either.
class McpService::Admission {
 public:
  Admission(McpService& service, std::string agent_id)
      : service_(service), agent_id_(std::move(agent_id)) {
    service_.in_flight_.fetch_add(1);
  }
  ~Admission() {
    if (slot_) service_.call_slots_.release();
    service_.release_agent(agent_id_);
    service_.in_flight_.fetch_sub(1);
  }
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  bool try_slot() { return slot_ = service_.call_slots_.try_acquire(); }
  // Waits for a slot unless it holds one already.
  void wait_slot() {
    if (slot_) return;
    service_.call_slots_.acquire();
    slot_ = true;
  }

 private:
  McpService& service_;
  std::string agent_id_;
  bool slot_ = false;
};

McpService::McpService(ServiceOptions options, std::vector<tools::Tool> tools)
    : options_(std::move(options)),
      call_limit_(clamp_limit(options_.max_concurrent_calls)),
      tools_(std::move(tools)),
      call_slots_(static_cast<std::ptrdiff_t>(call_limit_)),
      // One thread more than the call limit: stdio's reader runs on the pool too.
      pool_(call_limit_ + 1),
      tasks_(options_.tasks) {}

McpService::~McpService() {
  shutdown();
}

void McpService::shutdown() {
  tasks_.shutdown();
  pool_.shutdown();
  ticker_.stop();
}

json McpService::server_info() const {
  return json{{"name", options_.server_name},
              {"version",
               options_.server_version.empty() ? std::string("0.0.0") : options_.server_version}};
}

json McpService::finish_result(json result, const CallerContext& caller, bool cacheable) const {
  if (caller.protocol_version != protocol::kStateless) return result;
  result["resultType"] = "complete";
  result["_meta"][protocol::kMetaServerInfo] = server_info();
  if (cacheable) {
    // The list is fixed for the life of the server, but it names the agent's workspace:
    // cacheable by this client only.
    result["ttlMs"] = 60000;
    result["cacheScope"] = "private";
  }
  return result;
}

RpcOutcome McpService::initialize(const Request& request, CallerContext& caller) const {
  const auto version = request.params.find("protocolVersion");
  if (version == request.params.end() || !version->is_string()) {
    return RpcError{rpc_error::kInvalidParams,
                    "Invalid params: 'protocolVersion' (a string) is required"};
  }
  const std::string requested = version->get<std::string>();
  caller.protocol_version = protocol::negotiate_handshake(requested);
  if (const auto info = request.params.find("clientInfo");
      info != request.params.end() && info->is_object()) {
    caller.client =
        sanitize_utf8(string_member(*info, "name", "?") + " " + string_member(*info, "version"));
  }
  spdlog::info("mcp: initialize from {} for agent '{}' (asked for protocol {}, using {})",
               caller.client.empty() ? "unknown client" : caller.client, caller.agent->id(),
               sanitize_utf8(requested.substr(0, 64)), caller.protocol_version);
  json capabilities{{"tools", {{"listChanged", false}}}};
  if (caller.protocol_version == tasks::kLegacyTasksRevision)
    capabilities["tasks"] = tasks::capabilities_json(caller.identified);
  return json{
      {"protocolVersion", caller.protocol_version},
      {"capabilities", std::move(capabilities)},
      {"serverInfo", server_info()},
      {"instructions", instructions_for(*caller.agent)},
  };
}

RpcOutcome McpService::discover(const CallerContext& caller) const {
  // Answered in 2026-07-28's shape whatever the caller's revision: only that revision has it.
  CallerContext modern = caller;
  modern.protocol_version = protocol::kStateless;
  return finish_result(json{{"supportedVersions", protocol::supported_versions_json()},
                            {"capabilities",
                             {{"tools", {{"listChanged", false}}},
                              {"extensions", {{tasks::kTasksExtension, json::object()}}}}},
                            {"instructions", instructions_for(*caller.agent)}},
                       modern, true);
}

RpcOutcome McpService::tools_list(const CallerContext& caller) const {
  json list = json::array();
  for (const auto& tool : tools_) {
    if (!tools::offered_to(tool, *caller.agent)) continue;
    json entry{{"name", tool.name},
               {"title", tool.title},
               {"description", tool.description},
               {"inputSchema", tool.input_schema},
               {"outputSchema", tool.output_schema}};
    // Absent means "forbidden": only tools that may take long say they run as tasks.
    if (tool.task_optional && caller.protocol_version == tasks::kLegacyTasksRevision)
      entry["execution"] = tasks::optional_execution_json();
    list.push_back(std::move(entry));
  }
  return finish_result(json{{"tools", std::move(list)}}, caller, true);
}

std::string McpService::tool_label(const Agent& agent, const std::string& name) const {
  for (const auto& tool : tools_) {
    if (tool.name == name && tools::offered_to(tool, agent)) return tool.name;
  }
  return "unknown";
}

McpService::KeyBound McpService::bound_for(const CallLimit& limit) const {
  const std::size_t agent = options_.max_calls_per_agent;
  if (!limit.per_user) return {agent, "--max-calls-per-agent"};
  // Whatever is set applies (the lower of the two); the default only when nothing is.
  if (limit.max_calls != 0 && (agent == 0 || limit.max_calls <= agent))
    return {limit.max_calls, "per_user.max_calls_per_user"};
  if (agent != 0) return {agent, "--max-calls-per-agent"};
  return {std::max<std::size_t>(1, call_limit_ / kUserShareOfWorkers),
          "per_user.max_calls_per_user; by default a quarter of --max-concurrent"};
}

bool McpService::admit_agent(const std::string& key, std::size_t bound) {
  std::lock_guard lock(agents_mutex_);
  std::size_t& count = per_agent_[key];
  if (bound != 0 && count >= bound) {
    if (count == 0) per_agent_.erase(key);
    return false;
  }
  ++count;
  return true;
}

void McpService::release_agent(const std::string& agent_id) {
  std::lock_guard lock(agents_mutex_);
  if (const auto it = per_agent_.find(agent_id); it != per_agent_.end() && --it->second == 0)
    per_agent_.erase(it);
}

void McpService::complete(ToolCall& call, RpcOutcome outcome) noexcept {
  try {
    if (call.finished) std::exchange(call.finished, nullptr)();
  } catch (...) {
  }
  try {
    if (call.state && call.state->cancelled_by_client.load()) {
      call.responder.drop("cancelled by the client");  // MCP: no response to a cancelled request
    } else {
      call.responder.reply(std::move(outcome));
    }
  } catch (...) {
    // Out of memory while answering: the Responder's destructor still frees the id.
    spdlog::error("mcp: could not send the response to a tools/call");
  }
  try {
    if (call.answered) std::exchange(call.answered, nullptr)();
  } catch (...) {
  }
}

void McpService::call_tool(ToolCall call) {
  // Whatever happens below, the client gets exactly one answer and the transport's callbacks run
  // exactly once.
  std::shared_ptr<ToolCall> shared;
  try {
    shared = std::make_shared<ToolCall>(std::move(call));
  } catch (...) {
    complete(call, RpcError{rpc_error::kInternalError, "Internal error: out of memory"});
    return;
  }
  auto refuse = [&](RpcError error) { complete(*shared, std::move(error)); };
  try {
    const tools::Tool* tool = nullptr;
    if (auto error = check_call(shared->request, *shared->caller.agent, tool))
      return refuse(std::move(*error));
    const CallLimit limit = shared->caller.agent->call_limit();
    const std::string& limit_key = limit.key;
    if (const KeyBound bound = bound_for(limit); !admit_agent(limit_key, bound.calls))
      return refuse(busy_key(*shared->caller.agent, limit, bound));
    std::shared_ptr<Admission> admission;
    try {
      admission = std::make_shared<Admission>(*this, limit_key);
    } catch (...) {
      release_agent(limit_key);
      throw;
    }
    if (admission->try_slot()) {
      if (shared->run_here && shared->run_here()) {
        run_call(*shared, *tool);
        return;
      }
      if (pool_.submit_if_idle([this, tool, admission, shared] { run_call(*shared, *tool); }))
        return;
      // No idle worker after all: queue it like any other call (it keeps its slot).
    }
    if (queued_calls_.fetch_add(1) >= options_.max_queued_calls) {
      queued_calls_.fetch_sub(1);
      return refuse(RpcError{kServerBusy,
                             "Server busy: " + std::to_string(call_limit_) +
                                 " calls are running and " +
                                 std::to_string(options_.max_queued_calls) +
                                 " are waiting; retry when one has finished",
                             json{{"retryAfterSeconds", 1}, {"limit", "server"}}});
    }
    try {
      pool_.submit([this, tool, admission, shared] {
        // A call cancelled while queued is answered at once, without waiting for a slot.
        // (A call queued after try_slot() succeeded keeps that slot: wait_slot() is a no-op.)
        if (!shared->state->cancel.cancel_requested()) admission->wait_slot();
        queued_calls_.fetch_sub(1);
        run_call(*shared, *tool);
      });
    } catch (...) {
      queued_calls_.fetch_sub(1);
      throw;
    }
  } catch (const std::exception& e) {
    // bad_alloc before the call was handed on; answered once (a Responder answers at most once).
    spdlog::error("mcp: tools/call could not be scheduled: {}", e.what());
    refuse(RpcError{rpc_error::kInternalError, "Internal error: the call could not be scheduled"});
  }
}

void McpService::run_call(ToolCall& call, const tools::Tool& tool) noexcept {
  std::optional<RpcOutcome> outcome;
  std::unique_ptr<ProgressReporter> progress;
  try {
    if (call.state->cancel.cancel_requested()) {
      outcome = finish_result(to_call_result(tools::ToolResult{
                                  "The call was cancelled before it started.", nullptr, true}),
                              call.caller, false);
    } else {
      if (const auto meta = call.request.params.find("_meta");
          call.send_progress && meta != call.request.params.end() && meta->is_object()) {
        if (const auto token = meta->find("progressToken");
            token != meta->end() && is_request_id(*token)) {
          progress = std::make_unique<ProgressReporter>(*token, call.send_progress);
          ticker_.add(progress.get());
        }
      }
      // The reporter leaves the ticker however this block is left.
      ScopeExit unregister([&] {
        if (progress) ticker_.remove(progress.get());
      });
      outcome = invoke(tool, call.caller, call.request.params, progress.get(), &call.state->cancel);
      // Progress always precedes the response; a cancelled call gets neither.
      if (progress && !call.state->cancelled_by_client.load()) progress->finish();
    }
  } catch (const std::exception& e) {
    spdlog::error("mcp: tool {} failed: {}", tool.name, e.what());
    outcome = RpcError{rpc_error::kInternalError,
                       "Internal error in tool " + tool.name + ": " + sanitize_utf8(e.what())};
  } catch (...) {
    spdlog::error("mcp: tool {} failed with an unknown exception", tool.name);
    outcome = RpcError{rpc_error::kInternalError,
                       "Internal error in tool " + tool.name + ": unknown exception"};
  }
  complete(call,
           outcome ? std::move(*outcome)
                   : RpcOutcome{RpcError{rpc_error::kInternalError, "Internal error: no outcome"}});
}

}  // namespace execmcp::host::mcp

namespace execmcp::host::mcp {

namespace {

// The audit record of a task the client was told of (its command's own comes when it ends).
void audit_task_created(const CallerContext& caller, const std::string& id, const json& params) {
  const json arguments = params.value("arguments", json::object());
  const auto command = arguments.is_object() ? arguments.find("command") : arguments.end();
  caller.agent->audit_task(TaskAuditEvent{
      "task:created", id, caller.principal,
      command != arguments.end() && command->is_string() ? command->get<std::string>() : ""});
}

}  // namespace

void McpService::answer_in_window(const std::string& id, const Responder& responder,
                                  const CallerContext& caller, const json& params,
                                  WindowCall window) {
  // Whichever comes first answers: the command's end (a plain result; the task is forgotten) or
  // the window's end (CreateTaskResult; the client polls). No thread waits for either. Until
  // then it is a call: the transport's callbacks run around the answer, and a client that
  // cancels it (notifications/cancelled, a closed stream) cancels the task and gets nothing.
  auto answered = std::make_shared<std::atomic<bool>>(false);
  auto answer = [window, responder](auto send) {
    if (window.finished) window.finished();
    if (window.state && window.state->cancelled_by_client.load()) {
      responder.drop("cancelled by the client");
    } else {
      send();
    }
    if (window.answered) window.answered();
  };
  const tasks::TaskOwner owner = task_owner(caller);
  auto error = tasks_.store().wait_result(
      owner, id,
      [this, answered, answer, responder, id](const tasks::TaskSnapshot&, const RpcOutcome& o) {
        if (answered->exchange(true)) return;
        tasks_.store().discard(id);
        answer([&] { responder.reply(o); });
      });
  if (error) {  // gone already (cannot happen: it was made just now)
    return answer([&] {
      responder.reply(
          tasks::task_error(*error, "create", tasks_.store().options(), caller.agent->id()));
    });
  }
  const auto until = std::chrono::steady_clock::now() + tasks_.task_after();
  if (window.state) {
    watch_window(id, owner, window.state, answered, until,
                 static_cast<int>(tasks_.task_after().count() / 50) + 2);
  }
  tasks_.at(until, [this, answered, answer, responder, owner, id, caller, params] {
    if (answered->exchange(true)) return;
    auto found = tasks_.store().get(owner, id);
    if (auto* error = std::get_if<tasks::TaskError>(&found)) {
      return answer([&] {
        responder.reply(
            tasks::task_error(*error, "create", tasks_.store().options(), caller.agent->id()));
      });
    }
    const auto& task = std::get<tasks::TaskSnapshot>(found);
    // Only now is it a task the client knows of: a command answered within the window was a call
    // (its command's record still names the task it ran as).
    audit_task_created(caller, id, params);
    json created = finish_result(tasks::extension_task_json(task, task.status), caller, false);
    created["resultType"] = "task";
    answer([&] { responder.reply(std::move(created)); });
  });
}

void McpService::watch_window(const std::string& id, const tasks::TaskOwner& owner,
                              std::shared_ptr<CallState> state,
                              std::shared_ptr<std::atomic<bool>> answered,
                              std::chrono::steady_clock::time_point until, int checks_left) {
  if (answered->load()) return;
  if (state->cancel.cancel_requested()) {
    // The task's tree is killed as for tasks/cancel; its end answers the call (with nothing,
    // when the client cancelled it).
    (void)tasks_.store().cancel(owner, id, "cancelled: the call was cancelled");
    return;
  }
  // checks_left bounds the chain where at() runs an action at once (the service is stopping).
  const auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  if (next >= until || checks_left <= 0) return;
  tasks_.at(next, [this, id, owner, state, answered, until, checks_left] {
    watch_window(id, owner, state, answered, until, checks_left - 1);
  });
}

tasks::TaskOwner task_owner(const CallerContext& caller) {
  return tasks::TaskOwner{caller.endpoint.empty() ? caller.agent->id() : caller.endpoint,
                          caller.principal, caller.user_key};
}

const tools::Tool* McpService::find_tool(const Agent& agent, const std::string& name) const {
  for (const auto& candidate : tools_) {
    // A tool the caller's agent does not get is as unknown as a misspelt one.
    if (candidate.name == name && tools::offered_to(candidate, agent)) return &candidate;
  }
  return nullptr;
}

std::optional<RpcError> McpService::check_call(const Request& request, const Agent& agent,
                                               const tools::Tool*& tool) const {
  const auto name = request.params.find("name");
  if (name == request.params.end() || !name->is_string()) {
    return RpcError{rpc_error::kInvalidParams,
                    "Invalid params: 'name' (the tool name, a string) is required"};
  }
  tool = find_tool(agent, name->get<std::string>());
  if (tool == nullptr) {
    return RpcError{rpc_error::kInvalidParams,
                    "Unknown tool: " + sanitize_utf8(name->get<std::string>().substr(0, 200))};
  }
  if (const auto args = request.params.find("arguments");
      args != request.params.end() && !args->is_object() && !args->is_null()) {
    return RpcError{rpc_error::kInvalidParams, "Invalid params: 'arguments' must be an object"};
  }
  return std::nullopt;
}

RpcOutcome McpService::invoke(const tools::Tool& tool, const CallerContext& caller,
                              const json& params, sdk::OutputSink* sink,
                              const sdk::CancelToken* cancel, const std::string& task) const {
  const auto args = params.find("arguments");
  // For every tool alike: what its schema does not declare is set aside with a notice.
  tools::UndeclaredArguments arguments = tools::set_aside_undeclared(
      tool.input_schema, args == params.end() || args->is_null() ? json::object() : *args);
  std::string notice;
  if (!arguments.ignored.empty()) {
    notice = tools::ignored_arguments_notice(tool.name, tool.input_schema, arguments.ignored);
    spdlog::debug("mcp: {}: {}", tool.name, notice);
  }
  tools::ToolContext context{*caller.agent, sink, cancel, caller.principal, task};
  tools::ToolOutcome result = tool.run(arguments.kept, context);
  if (auto* bad = std::get_if<tools::ArgumentError>(&result)) {
    std::string message =
        "Invalid arguments for tool " + tool.name + ": " + sanitize_utf8(bad->message);
    // Since 2025-11-25 input validation errors are tool results the model can read and act on;
    // before, they were protocol errors.
    if (protocol::at_least(caller.protocol_version, "2025-11-25")) {
      return finish_result(to_call_result(tools::ToolResult{message, nullptr, true}, notice),
                           caller, false);
    }
    return RpcError{rpc_error::kInvalidParams, std::move(message)};
  }
  return finish_result(to_call_result(std::get<tools::ToolResult>(result), notice), caller, false);
}

// Where one task's notifications go: first where the creating request said, then the stream of
// the latest tasks/result that waits on it.
class McpService::TaskNotifier {
 public:
  explicit TaskNotifier(SendProgress target) : target_(std::move(target)) {}
  void send(const json& notification) {
    SendProgress target;
    {
      std::lock_guard lock(mutex_);
      target = target_;
    }
    if (target) target(notification);
  }
  void retarget(SendProgress target) {
    std::lock_guard lock(mutex_);
    target_ = std::move(target);
  }

 private:
  std::mutex mutex_;
  SendProgress target_;
};

void McpService::stream_task_to(const std::string& id, SendProgress stream) {
  std::shared_ptr<TaskNotifier> notifier;
  {
    std::lock_guard lock(notifiers_mutex_);
    if (const auto it = notifiers_.find(id); it != notifiers_.end()) notifier = it->second.lock();
  }
  if (notifier) notifier->retarget(std::move(stream));
}

void McpService::call_tool_as_task(const Request& request, const Responder& responder,
                                   const CallerContext& caller, const SendProgress& notify,
                                   WindowCall window) {
  // Answered here, not in the window: the transport's call (when it made one) ends with it.
  auto reply_now = [&](RpcOutcome outcome) {
    if (window.finished) window.finished();
    responder.reply(std::move(outcome));
    if (window.answered) window.answered();
  };
  const tools::Tool* tool = nullptr;
  if (auto error = check_call(request, *caller.agent, tool)) return reply_now(std::move(*error));
  if (!tool->task_optional) {
    // 2025-11-25: a task asked of a tool whose taskSupport is (absent, so) forbidden.
    return reply_now(RpcError{rpc_error::kMethodNotFound,
                              "Method not found: tool " + tool->name +
                                  " does not run as a task (its execution.taskSupport is "
                                  "forbidden); call it without params.task"});
  }
  const bool extension = caller.protocol_version == protocol::kStateless;
  // The extension has no task parameter (a legacy one is ignored): the server picks the TTL.
  const json task = extension ? json::object() : request.params.value("task", json::object());
  std::optional<tasks::Millis> ttl;
  if (const auto requested = task.find("ttl"); requested != task.end() && !requested->is_null()) {
    if (!requested->is_number() || requested->get<double>() < 0)
      return reply_now(RpcError{rpc_error::kInvalidParams,
                                "Invalid params: task.ttl must be a number of milliseconds"});
    ttl = tasks::Millis(static_cast<std::int64_t>(
        std::min(requested->get<double>(), 1e12)));  // clamped again by the store
  }
  json progress_token;
  if (const auto meta = request.params.find("_meta");
      meta != request.params.end() && meta->is_object() && !extension) {
    if (const auto token = meta->find("progressToken");
        token != meta->end() && is_request_id(*token))
      progress_token = *token;
  }
  // The work keeps the caller (and with it a per-user sandbox's hold) until it ends.
  // Its notifications: where this request said (stdio), later a tasks/result's stream.
  auto notifier = std::make_shared<TaskNotifier>(notify);
  auto work = [this, tool, caller, params = request.params, notifier, progress_token](
                  const std::string& id, const sdk::CancelToken& cancel,
                  tasks::TaskOutputMeter& meter) -> RpcOutcome {
    if (cancel.cancel_requested()) {
      return to_call_result(
          tools::ToolResult{"The task was cancelled before it started.", nullptr, true});
    }
    std::unique_ptr<ProgressReporter> progress;
    if (!progress_token.is_null()) {
      // The create request's progressToken stays valid for the task's life; each notification
      // says which task it is about.
      progress = std::make_unique<ProgressReporter>(progress_token, [notifier, id](json n) {
        if (n.contains("params")) tasks::add_related_task(n["params"], id);
        notifier->send(n);
      });
      ticker_.add(progress.get());
    }
    ScopeExit unregister([&] {
      if (progress) ticker_.remove(progress.get());
    });
    meter.forward_to(progress.get());
    RpcOutcome outcome = invoke(*tool, caller, params, &meter, &cancel, id);
    meter.forward_to(nullptr);
    if (progress) progress->finish();
    return outcome;
  };
  tasks::TaskStore::StatusListener listener;
  if (!extension) {
    listener = [notifier](const tasks::TaskSnapshot& t) {
      notifier->send(tasks::status_notification(t));
    };
  }
  auto started = tasks_.start(task_owner(caller), ttl, std::move(work), std::move(listener));
  if (auto* error = std::get_if<tasks::TaskError>(&started)) {
    return reply_now(
        tasks::task_error(*error, "create", tasks_.store().options(), caller.agent->id()));
  }
  const auto& snapshot = std::get<tasks::TaskSnapshot>(started);
  {
    std::lock_guard lock(notifiers_mutex_);
    std::erase_if(notifiers_, [](const auto& entry) { return entry.second.expired(); });
    notifiers_[snapshot.id] = notifier;
  }
  if (extension && tasks_.task_after().count() > 0)
    return answer_in_window(snapshot.id, responder, caller, request.params, std::move(window));
  audit_task_created(caller, snapshot.id, request.params);
  if (!extension) return reply_now(json{{"task", tasks::task_json(snapshot)}});
  json created =
      finish_result(tasks::extension_task_json(snapshot, snapshot.status), caller, false);
  created["resultType"] = "task";
  reply_now(std::move(created));
}

}  // namespace execmcp::host::mcp
