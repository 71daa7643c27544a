// The stdio MCP session: reading, the negotiated revision, tool calls on workers, shutdown.
#include "transport/stdio/session.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/utf8.hpp"
#include "mcp/protocol.hpp"

namespace execmcp::host::mcp {

using nlohmann::json;

namespace {

// Set on the reader thread when it handed reading over and ran a tool call itself.
thread_local bool t_reader_handed_off = false;

}  // namespace

ServiceOptions service_options(const ServerOptions& options) {
  ServiceOptions out;
  out.server_name = options.server_name;
  out.server_version = options.server_version;
  out.max_concurrent_calls = options.max_concurrent_calls;
  out.max_queued_calls = options.max_queued_calls;
  out.tasks.store.max_live_per_owner = options.max_tasks_per_principal;
  out.tasks.store.max_ttl = options.max_task_ttl;
  out.tasks.store.default_ttl = std::min(out.tasks.store.default_ttl, options.max_task_ttl);
  out.tasks.max_running = options.max_running_tasks;
  out.tasks.task_after = options.task_after;
  return out;
}

Session::Session(Agent& agent, Transport& transport, ServerOptions options)
    : Session(agent, transport, options, nullptr,
              std::make_unique<McpService>(service_options(options))) {}

Session::Session(Agent& agent, Transport& transport, ServerOptions options, McpService& service)
    : Session(agent, transport, std::move(options), &service, nullptr) {}

Session::Session(Agent& agent, Transport& transport, ServerOptions options, McpService* shared,
                 std::unique_ptr<McpService> owned)
    : agent_(agent),
      transport_(transport),
      options_(std::move(options)),
      owned_service_(std::move(owned)),
      service_(shared != nullptr ? shared : owned_service_.get()),
      router_(*service_),
      dispatcher_([this](const json& message) { send(message); }, options_.limits),
      outbox_(
          transport,
          Outbox::Limits{options_.max_outbound_bytes,
                         std::min(options_.max_outbound_bytes, Outbox::kDefaultMaxDroppableBytes)},
          [this] { on_peer_gone(); }) {
  caller_.agent = &agent_;
  caller_.principal = "stdio";
  notify_gate_->session = this;
  register_handlers();
}

Session::~Session() {
  {
    std::lock_guard lock(notify_gate_->mutex);
    notify_gate_->session = nullptr;
  }
  calls_.cancel_all();
  transport_.close();
  {
    std::unique_lock lock(input_mutex_);
    input_ended_cv_.wait(lock, [this] { return threads_reading_ == 0; });
  }
  calls_.wait_idle();
  if (owned_service_) {
    owned_service_->shutdown();
  } else {
    // A shared service's tasks would answer this session's waiting tasks/result through it
    // after it is gone: they end with it (stdio's tasks are its client's; nobody else reads them).
    service_->tasks().cancel_all("cancelled: the stdio session ended");
    service_->tasks().wait_idle(std::chrono::seconds(30));
  }
  outbox_.stop(std::chrono::milliseconds(0));
}

void Session::register_handlers() {
  for (const std::string& method : McpRouter::request_methods()) {
    dispatcher_.on_deferred_request(method, [this](Request r, Responder responder) {
      route(std::move(r), std::move(responder));
    });
  }
  for (const std::string& method : McpRouter::notification_methods()) {
    dispatcher_.on_notification(method,
                                [this](const Notification& n) { McpRouter::notify(n, &calls_); });
  }
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
  if (!finishing) calls_.cancel_all();
  calls_.wait_idle();  // every call answers promptly: backends honour the cancel token
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
  if (!finishing_calls()) calls_.cancel_all();
  std::lock_guard lock(input_mutex_);
  input_ended_ = true;
  input_ended_cv_.notify_all();
}

bool Session::finishing_calls() const {
  return options_.finish_calls_on_eof && !stop_requested_.load() && !write_failed_.load();
}

void Session::request_stop() {
  stop_requested_.store(true);
  calls_.cancel_all();  // also reaches calls left to finish after the end of input
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

void Session::route(Request request, Responder responder) {
  McpRouter::Context context;
  {
    std::lock_guard lock(caller_mutex_);
    context.caller = caller_;
  }
  context.keep_session =
      [this, again = !context.caller.protocol_version.empty()](const CallerContext& negotiated) {
        if (again) spdlog::warn("mcp: initialize received twice");
        std::lock_guard lock(caller_mutex_);
        caller_ = negotiated;
        return true;
      };
  context.start_call = [this](const Request& r, const CallerContext&, const std::string&) {
    return start_call(r);
  };
  context.notify = [gate = notify_gate_](const json& n) {
    std::lock_guard lock(gate->mutex);
    if (gate->session != nullptr) gate->session->send_progress(n);
  };
  context.stream = context.notify;
  context.warned_before_initialize = &warned_no_initialize_;
  router_.handle(std::move(request), std::move(responder), std::move(context));
}

std::optional<CallHooks> Session::start_call(const Request& request) {
  auto state = std::make_shared<CallState>();
  const std::string key = request.id.dump();
  if (!calls_.add(key, state)) {
    // The dispatcher runs no two requests with one id at once, and the id is released before
    // its response goes out: never reached.
    send(make_error_response(nullptr, RpcError{rpc_error::kInvalidRequest,
                                               "Invalid request: id " + key.substr(0, 64) +
                                                   " is already in use by a call in progress"}));
    return std::nullopt;
  }
  return CallHooks{state, [this](const json& n) { send_progress(n); },
                   [this] {
                     if (!service_->submit_if_idle([this] { read_messages(); })) return false;
                     t_reader_handed_off = true;
                     return true;
                   },
                   [this, key, state] { calls_.release(key, *state); },
                   [this, key, state] { calls_.done(key, *state); }};
}

}  // namespace execmcp::host::mcp
