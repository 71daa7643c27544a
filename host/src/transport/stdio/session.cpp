// The MCP session: method table, version negotiation, tool calls on workers, cancellation.
#include "transport/stdio/session.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include <spdlog/spdlog.h>

#include "mcp/protocol.hpp"
#include "mcp/utf8.hpp"

namespace execmcp::host::mcp {

using nlohmann::json;

namespace {

// Set on the reader thread when it handed reading over and ran a tool call itself.
thread_local bool t_reader_handed_off = false;

RpcError not_in_stateless(const std::string& method) {
  return RpcError{rpc_error::kMethodNotFound,
                  "Method not found: " + method + " is not part of MCP " + protocol::kStateless +
                      " (requests name their revision in _meta; use server/discover)"};
}

}  // namespace

ServiceOptions service_options(const ServerOptions& options) {
  ServiceOptions out;
  out.server_name = options.server_name;
  out.server_version = options.server_version;
  out.max_concurrent_calls = options.max_concurrent_calls;
  out.max_queued_calls = options.max_queued_calls;
  return out;
}

Session::Session(Agent& agent, Transport& transport, ServerOptions options)
    : Session(agent, transport, options, std::make_unique<McpService>(service_options(options))) {}

Session::Session(Agent& agent, Transport& transport, ServerOptions options, McpService& service)
    : Session(agent, transport, std::move(options), std::unique_ptr<McpService>()) {
  service_ = &service;
}

Session::Session(Agent& agent, Transport& transport, ServerOptions options,
                 std::unique_ptr<McpService> owned)
    : agent_(agent),
      transport_(transport),
      options_(std::move(options)),
      owned_service_(std::move(owned)),
      service_(owned_service_.get()),
      dispatcher_([this](const json& message) { send(message); }, options_.limits),
      outbox_(
          transport,
          Outbox::Limits{options_.max_outbound_bytes,
                         std::min(options_.max_outbound_bytes, Outbox::kDefaultMaxDroppableBytes)},
          [this] { on_peer_gone(); }) {
  caller_.agent = &agent_;
  caller_.principal = "stdio";
  register_handlers();
}

Session::~Session() {
  cancel_all();
  transport_.close();
  {
    std::unique_lock lock(input_mutex_);
    input_ended_cv_.wait(lock, [this] { return threads_reading_ == 0; });
  }
  wait_for_calls();
  if (owned_service_) owned_service_->shutdown();
  outbox_.stop(std::chrono::milliseconds(0));
}

void Session::register_handlers() {
  dispatcher_.on_request("initialize", [this](const Request& r) { return handle_initialize(r); });
  dispatcher_.on_request("server/discover", [this](const Request& r) -> RpcOutcome {
    CallerContext caller;
    if (auto error = caller_for(r, caller)) return std::move(*error);
    return service_->discover(caller);
  });
  dispatcher_.on_request("ping", [this](const Request& r) -> RpcOutcome {
    CallerContext caller;
    if (auto error = caller_for(r, caller)) return std::move(*error);
    if (caller.protocol_version == protocol::kStateless) return not_in_stateless(r.method);
    return json::object();
  });
  dispatcher_.on_request("tools/list", [this](const Request& r) -> RpcOutcome {
    CallerContext caller;
    if (auto error = caller_for(r, caller)) return std::move(*error);
    return service_->tools_list(caller);
  });
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
  spdlog::info("mcp: serving agent '{}' ({} concurrent calls)", agent_.id(),
               service_->call_limit());
  service_->submit([this] { read_messages(); });
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
  wait_for_calls();  // every call answers promptly: backends honour the cancel token
  if (owned_service_) owned_service_->shutdown();
  // The responses are queued; a client that does not read them gets shutdown_grace, no more.
  outbox_.stop(write_failed_.load() ? std::chrono::milliseconds(0) : options_.shutdown_grace);
  spdlog::info("mcp: session ended");
  return 0;
}

void Session::read_messages() {
  // The service's pool may be shared and outlive this session: the destructor waits until no
  // thread is in here (a reader that handed reading off runs a call from in here, too).
  {
    std::lock_guard lock(input_mutex_);
    ++threads_reading_;
  }
  struct Leave {
    Session& session;
    ~Leave() {
      std::lock_guard lock(session.input_mutex_);
      --session.threads_reading_;
      session.input_ended_cv_.notify_all();  // under the lock: the session may go right after
    }
  } leave{*this};
  while (!stop_requested_.load()) {
    std::optional<std::string> line = transport_.read_line();
    if (!line) break;
    dispatcher_.handle_line(*line);
    if (std::exchange(t_reader_handed_off, false)) return;  // another thread reads now
  }
  // Before this thread goes back to the pool, where it could start a queued call.
  if (!finishing_calls()) cancel_all();
  std::lock_guard lock(input_mutex_);
  input_ended_ = true;
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

std::optional<RpcError> Session::caller_for(const Request& request, CallerContext& caller) {
  {
    std::lock_guard lock(caller_mutex_);
    caller = caller_;
  }
  protocol::MetaOutcome meta = protocol::read_request_meta(request.params);
  if (auto* error = std::get_if<protocol::MetaError>(&meta)) return std::move(error->error);
  if (auto* stateless = std::get_if<protocol::StatelessMeta>(&meta)) {
    // 2026-07-28: this request alone says which revision and client it is; nothing carries over.
    caller.protocol_version = stateless->version;
    caller.client = stateless->client;
    return std::nullopt;
  }
  if (caller.protocol_version.empty() && !warned_no_initialize_.exchange(true)) {
    spdlog::warn(
        "mcp: {} before initialize (and without a protocol version in _meta); serving "
        "it anyway",
        request.method);
  }
  return std::nullopt;
}

RpcOutcome Session::handle_initialize(const Request& request) {
  // A request that names 2026-07-28 in _meta is served by that revision, which has no handshake.
  if (!std::holds_alternative<protocol::NoMeta>(protocol::read_request_meta(request.params)))
    return not_in_stateless(request.method);
  CallerContext caller;
  {
    std::lock_guard lock(caller_mutex_);
    caller = caller_;
  }
  const bool again = !caller.protocol_version.empty();
  RpcOutcome outcome = service_->initialize(request, caller);
  if (std::holds_alternative<json>(outcome)) {
    if (again) spdlog::warn("mcp: initialize received twice");
    std::lock_guard lock(caller_mutex_);
    caller_ = caller;
  }
  return outcome;
}

void Session::handle_tools_call(Request request, Responder responder) {
  CallerContext caller;
  if (auto error = caller_for(request, caller)) {
    responder.reply(std::move(*error));
    return;
  }
  auto state = std::make_shared<CallState>();
  const std::string key = request.id.dump();
  {
    std::lock_guard lock(calls_mutex_);
    // The dispatcher never runs two requests with one id at once.
    calls_.insert_or_assign(key, state);
    ++open_calls_;
    if (shutting_down_) state->cancel.request_cancel();
  }
  McpService::ToolCall call{std::move(caller),
                            std::move(request),
                            std::move(responder),
                            state,
                            [this](const json& n) { send_progress(n); },
                            [this] {
                              if (!service_->submit_if_idle([this] { read_messages(); }))
                                return false;
                              t_reader_handed_off = true;
                              return true;
                            },
                            [this, key] {
                              std::lock_guard lock(calls_mutex_);
                              calls_.erase(key);
                            },
                            [this] {
                              std::lock_guard lock(calls_mutex_);
                              if (--open_calls_ == 0) calls_done_cv_.notify_all();
                            }};
  service_->call_tool(std::move(call));
}

void Session::wait_for_calls() {
  std::unique_lock lock(calls_mutex_);
  calls_done_cv_.wait(lock, [this] { return open_calls_ == 0; });
}

void Session::handle_cancelled(const Notification& notification) {
  const auto id = notification.params.find("requestId");
  if (id == notification.params.end() || !is_request_id(*id)) {
    spdlog::warn("mcp: notifications/cancelled without a valid requestId; ignored");
    return;
  }
  std::shared_ptr<CallState> call;
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
