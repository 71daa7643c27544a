// The MCP session: method table, version negotiation, tool calls on workers, cancellation.
#include "mcp/session.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include <spdlog/spdlog.h>

#include "mcp/utf8.hpp"

namespace execmcp::host::mcp {

using nlohmann::json;

namespace {

// Set on the reader thread when it handed reading over and ran a tool call itself.
thread_local bool t_reader_handed_off = false;

// How many calls may run at once: options.max_concurrent_calls, within what call_slots_ can hold.
std::size_t call_limit(const ServerOptions& options) {
  return std::clamp<std::size_t>(options.max_concurrent_calls, 1, 1024);
}

// JSON-RPC's range for server errors: too many calls waiting.
constexpr int kServerBusy = -32000;

bool is_request_id(const json& id) {
  return id.is_number_integer() ||
         (id.is_string() && id.get_ref<const std::string&>().size() <= kMaxIdBytes);
}

// Reads an optional string member without throwing when the client sent another type.
std::string string_member(const json& object, const char* key, std::string fallback = {}) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

json to_call_result(const tools::ToolResult& result) {
  json reply{
      {"content", json::array({json{{"type", "text"}, {"text", sanitize_utf8(result.text)}}})},
      {"isError", result.is_error}};
  if (!result.structured.is_null()) reply["structuredContent"] = result.structured;
  return reply;
}

}  // namespace

Session::Session(Agent& agent, Transport& transport, ServerOptions options)
    : agent_(agent),
      transport_(transport),
      options_(std::move(options)),
      tools_(tools::make_builtin_tools()),
      dispatcher_([this](const json& message) { send(message); }, options_.limits),
      call_slots_(static_cast<std::ptrdiff_t>(call_limit(options_))),
      outbox_(
          transport,
          Outbox::Limits{options_.max_outbound_bytes,
                         std::min(options_.max_outbound_bytes, Outbox::kDefaultMaxDroppableBytes)},
          [this] { on_peer_gone(); }),
      pool_(call_limit(options_) + 1) {
  register_handlers();
}

Session::~Session() {
  cancel_all();
  pool_.shutdown();
  ticker_.stop();
  outbox_.stop(std::chrono::milliseconds(0));
}

void Session::register_handlers() {
  dispatcher_.on_request("initialize", [this](const Request& r) { return handle_initialize(r); });
  dispatcher_.on_request("ping", [](const Request&) -> RpcOutcome { return json::object(); });
  dispatcher_.on_request("tools/list", [this](const Request& r) { return handle_tools_list(r); });
  dispatcher_.on_deferred_request("tools/call", [this](Request r, Responder responder) {
    handle_tools_call(std::move(r), std::move(responder));
  });
  dispatcher_.on_notification("notifications/initialized", [](const Notification&) {
    spdlog::debug("mcp: client reports initialized");
  });
  dispatcher_.on_notification("notifications/cancelled",
                              [this](const Notification& n) { handle_cancelled(n); });
}

int Session::run() {
  spdlog::info("mcp: serving agent '{}' ({} concurrent calls)", agent_.id(), call_limit(options_));
  pool_.submit([this] { read_messages(); });
  {
    std::unique_lock lock(input_mutex_);
    input_ended_cv_.wait(lock, [this] { return input_ended_; });
  }
  const bool finishing = finishing_calls();
  if (stop_requested_.load()) {
    spdlog::info("mcp: stop requested; cancelling running calls");
  } else if (write_failed_.load()) {
    spdlog::info("mcp: the client stopped reading; shutting down");
  } else if (finishing) {
    spdlog::info("mcp: end of input; finishing the calls already received, then shutting down");
  } else {
    spdlog::info("mcp: end of input; shutting down");
  }
  if (!finishing) cancel_all();
  pool_.shutdown();  // every call answers promptly: backends honour the cancel token
  ticker_.stop();
  // The responses are queued; a client that does not read them gets shutdown_grace, no more.
  outbox_.stop(write_failed_.load() ? std::chrono::milliseconds(0) : options_.shutdown_grace);
  spdlog::info("mcp: session ended");
  return 0;
}

void Session::read_messages() {
  while (!stop_requested_.load()) {
    std::optional<std::string> line = transport_.read_line();
    if (!line) break;
    dispatcher_.handle_line(*line);
    if (std::exchange(t_reader_handed_off, false)) return;  // another thread reads now
  }
  // Before this thread goes back to the pool, where it could start a queued call.
  if (!finishing_calls()) cancel_all();
  {
    std::lock_guard lock(input_mutex_);
    input_ended_ = true;
  }
  input_ended_cv_.notify_all();
}

bool Session::finishing_calls() const {
  return options_.finish_calls_on_eof && !stop_requested_.load() && !write_failed_.load();
}

void Session::request_stop() {
  stop_requested_.store(true);
  cancel_all();  // also reaches calls left to finish after the end of input
  transport_.close();
}

void Session::send(const json& message) {
  outbox_.post_response(serialize_message(message));
}

void Session::send_progress(const json& message) {
  outbox_.post_droppable(serialize_message(message));
}

void Session::on_peer_gone() {
  if (write_failed_.exchange(true)) return;
  transport_.close();  // ends reading; run() then cancels the calls and shuts down
}

RpcOutcome Session::handle_initialize(const Request& request) {
  const auto version = request.params.find("protocolVersion");
  if (version == request.params.end() || !version->is_string()) {
    return RpcError{rpc_error::kInvalidParams,
                    "Invalid params: 'protocolVersion' (a string) is required"};
  }
  const std::string requested = version->get<std::string>();
  std::string negotiated = kSupportedProtocolVersions[0];
  for (const char* supported : kSupportedProtocolVersions) {
    if (requested == supported) negotiated = supported;
  }
  std::string client = "unknown client";
  if (const auto info = request.params.find("clientInfo");
      info != request.params.end() && info->is_object()) {
    client = string_member(*info, "name", "?") + " " + string_member(*info, "version");
  }
  client = sanitize_utf8(client);
  spdlog::info("mcp: initialize from {} (asked for protocol {}, using {})", client, requested,
               negotiated);
  if (initialized_.exchange(true)) spdlog::warn("mcp: initialize received twice");

  const std::string instructions =
      "This server runs shell commands for agent '" + agent_.id() + "' in its workspace " +
      agent_.cwd() +
      ". Use execute_command to run commands (each call passes the agent's command filters; a "
      "refused command is reported, not run), read_file and write_file for files inside the "
      "agent's allowed paths, and read_docstring to read the documentation of a Python tool "
      "function without running it.";
  return json{
      {"protocolVersion", negotiated},
      {"capabilities", {{"tools", {{"listChanged", false}}}}},
      {"serverInfo",
       {{"name", options_.server_name},
        {"version",
         options_.server_version.empty() ? std::string("0.0.0") : options_.server_version}}},
      {"instructions", sanitize_utf8(instructions)},
  };
}

RpcOutcome Session::handle_tools_list(const Request&) {
  if (!initialized_.load()) spdlog::warn("mcp: tools/list before initialize; serving it anyway");
  json list = json::array();
  for (const auto& tool : tools_) {
    list.push_back(json{{"name", tool.name},
                        {"title", tool.title},
                        {"description", tool.description},
                        {"inputSchema", tool.input_schema},
                        {"outputSchema", tool.output_schema}});
  }
  return json{{"tools", std::move(list)}};
}

void Session::handle_tools_call(Request request, Responder responder) {
  if (!initialized_.load()) spdlog::warn("mcp: tools/call before initialize; serving it anyway");
  const auto name = request.params.find("name");
  if (name == request.params.end() || !name->is_string()) {
    responder.reply(RpcError{rpc_error::kInvalidParams,
                             "Invalid params: 'name' (the tool name, a string) is required"});
    return;
  }
  const tools::Tool* tool = nullptr;
  for (const auto& candidate : tools_) {
    if (candidate.name == name->get_ref<const std::string&>()) tool = &candidate;
  }
  if (tool == nullptr) {
    responder.reply(
        RpcError{rpc_error::kInvalidParams,
                 "Unknown tool: " + sanitize_utf8(name->get<std::string>().substr(0, 200))});
    return;
  }
  if (const auto args = request.params.find("arguments");
      args != request.params.end() && !args->is_object() && !args->is_null()) {
    responder.reply(
        RpcError{rpc_error::kInvalidParams, "Invalid params: 'arguments' must be an object"});
    return;
  }

  auto call = std::make_shared<Call>();
  {
    std::lock_guard lock(calls_mutex_);
    // The dispatcher never runs two requests with one id at once.
    calls_.insert_or_assign(request.id.dump(), call);
    if (shutting_down_) call->cancel.request_cancel();
  }
  if (call_slots_.try_acquire()) {
    if (pool_.submit_if_idle([this] { read_messages(); })) {
      t_reader_handed_off = true;
      run_tool_call(*tool, request, call, responder);
      call_slots_.release();
      return;
    }
    call_slots_.release();
  }
  if (queued_calls_.fetch_add(1) >= options_.max_queued_calls) {
    queued_calls_.fetch_sub(1);
    {
      std::lock_guard lock(calls_mutex_);
      calls_.erase(request.id.dump());
    }
    responder.reply(RpcError{kServerBusy, "Server busy: " + std::to_string(call_limit(options_)) +
                                              " calls are running and " +
                                              std::to_string(options_.max_queued_calls) +
                                              " are waiting; retry when one has finished"});
    return;
  }
  pool_.submit([this, tool, request = std::move(request), call, responder] {
    // A call cancelled while queued is answered at once, without a slot.
    const bool slot = !call->cancel.cancel_requested();
    if (slot) call_slots_.acquire();
    queued_calls_.fetch_sub(1);
    run_tool_call(*tool, request, call, responder);
    if (slot) call_slots_.release();
  });
}

void Session::run_tool_call(const tools::Tool& tool, const Request& request,
                            const std::shared_ptr<Call>& call, const Responder& responder) {
  std::optional<RpcOutcome> outcome;
  std::unique_ptr<ProgressReporter> progress;
  if (call->cancel.cancel_requested()) {
    // Cancelled while queued: do not start it at all.
    outcome = to_call_result(
        tools::ToolResult{"The call was cancelled before it started.", nullptr, true});
  } else {
    if (const auto meta = request.params.find("_meta");
        meta != request.params.end() && meta->is_object()) {
      if (const auto token = meta->find("progressToken");
          token != meta->end() && is_request_id(*token)) {
        progress = std::make_unique<ProgressReporter>(
            *token, [this](const json& notification) { send_progress(notification); });
        ticker_.add(progress.get());
      }
    }
    const json no_arguments = json::object();
    const auto args = request.params.find("arguments");
    const json& arguments = args == request.params.end() || args->is_null() ? no_arguments : *args;
    tools::ToolContext context{agent_, progress.get(), &call->cancel};
    try {
      tools::ToolOutcome result = tool.run(arguments, context);
      if (auto* bad = std::get_if<tools::ArgumentError>(&result)) {
        outcome = RpcError{rpc_error::kInvalidParams, "Invalid arguments for tool " + tool.name +
                                                          ": " + sanitize_utf8(bad->message)};
      } else {
        outcome = to_call_result(std::get<tools::ToolResult>(result));
      }
    } catch (const std::exception& e) {
      spdlog::error("mcp: tool {} failed: {}", tool.name, e.what());
      outcome = RpcError{rpc_error::kInternalError,
                         "Internal error in tool " + tool.name + ": " + sanitize_utf8(e.what())};
    }
    if (progress) {
      ticker_.remove(progress.get());
      // Progress always precedes the response; a cancelled call gets neither.
      if (!call->cancelled_by_client.load()) progress->finish();
    }
  }
  {
    std::lock_guard lock(calls_mutex_);
    calls_.erase(request.id.dump());
  }
  if (call->cancelled_by_client.load()) {
    responder.drop("cancelled by the client");  // MCP: no response to a cancelled request
  } else {
    responder.reply(std::move(*outcome));
  }
}

void Session::handle_cancelled(const Notification& notification) {
  const auto id = notification.params.find("requestId");
  if (id == notification.params.end() || !is_request_id(*id)) {
    spdlog::warn("mcp: notifications/cancelled without a valid requestId; ignored");
    return;
  }
  std::shared_ptr<Call> call;
  {
    std::lock_guard lock(calls_mutex_);
    if (const auto it = calls_.find(id->dump()); it != calls_.end()) call = it->second;
  }
  const std::string reason = sanitize_utf8(string_member(notification.params, "reason"));
  if (!call) {
    spdlog::debug("mcp: cancel for id {} which is not running; ignored", id->dump());
    return;
  }
  spdlog::info("mcp: client cancelled call {}{}{}", id->dump(), reason.empty() ? "" : ": ", reason);
  call->cancelled_by_client.store(true);
  call->cancel.request_cancel();
}

void Session::cancel_all() {
  std::lock_guard lock(calls_mutex_);
  shutting_down_ = true;
  for (auto& [id, call] : calls_) call->cancel.request_cancel();
}

}  // namespace execmcp::host::mcp
