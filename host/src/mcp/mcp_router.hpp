// The one MCP router every transport hands its requests to: the method table (which methods each
// revision has, and their handlers), the revision a request is served in, and the cancel path.
// Transports keep framing, credentials, sessions and how an answer travels (line, JSON or SSE).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcp/call_table.hpp"
#include "mcp/json_rpc.hpp"
#include "mcp/mcp_service.hpp"

namespace execmcp::host::mcp {

// What a transport adds to a tools/call once it has registered the call (see McpService::ToolCall).
struct CallHooks {
  std::shared_ptr<CallState> state;
  McpService::SendProgress send_progress;  // empty: progress is not sent
  std::function<bool()> run_here;
  std::function<void()> finished;
  std::function<void()> answered;
};

class McpRouter {
 public:
  // The handshake: the one method a 2025-era transport serves before it has a session.
  static constexpr std::string_view kInitialize = "initialize";

  // What the transport knows about one request besides the request itself.
  struct Context {
    // The agent and principal (from the operator and the credentials, never the message); the
    // revision and client this client's initialize negotiated ("" before it).
    CallerContext caller;
    // initialize answered with a result: this client speaks `negotiated` from now on. false: the
    // transport refused to keep it and answered the client itself (nothing more is sent).
    std::function<bool(const CallerContext& negotiated)> keep_session;
    // tools/call: registers the call in the transport's tables and says how to run it; nullopt
    // when the transport refused it and answered the client itself. `tool` is the tool the call
    // resolves to ("unknown" when none: a client's made-up name), what the transport's metrics
    // label it by.
    std::function<std::optional<CallHooks>(const Request& request, const CallerContext& caller,
                                           const std::string& tool)>
        start_call;
    // Sends a notification to this client outside any request's answer (stdio: always; HTTP:
    // none, as no stream stays open); empty: none. Tasks' status and progress use it.
    McpService::SendProgress notify;
    // Sends a notification on this request's own answer, before the answer (HTTP: an event
    // stream, when the client accepts one; stdio: as notify); empty: none. tasks/result relays
    // its task's status and progress there.
    McpService::SendProgress stream;
    // Set when a request without any revision was served before initialize (warned once).
    std::atomic<bool>* warned_before_initialize = nullptr;
  };

  explicit McpRouter(McpService& service) : service_(service) {}

  // Every request method in the table (stdio's dispatcher registers each by name).
  [[nodiscard]] static std::vector<std::string> request_methods();

  // Serves one request: the revision it is served in (its _meta's, else the session's), whether
  // that revision has the method, then the method's handler. Answers through `responder` now, or
  // (tools/call) when the call ends. An unknown method is -32601.
  void handle(Request request, Responder responder, Context context);

  // Every notification method in the table.
  [[nodiscard]] static std::vector<std::string> notification_methods();
  // A client's notification: notifications/cancelled reaches `calls`, the client's own calls
  // (nullptr: it has none). Others are logged and ignored.
  static void notify(const Notification& notification, CallTable* calls);

  // The revision `request` is served in: the one its params._meta names (2026-07-28: the request
  // says everything and nothing carries over), else `caller`'s. An error when _meta names a
  // revision we do not speak, or lacks what it requires.
  [[nodiscard]] static std::optional<RpcError> resolve_revision(const Request& request,
                                                                CallerContext& caller);

 private:
  struct Method;
  static const std::vector<Method>& table();

  void initialize(Request& request, Responder& responder, Context& context);
  void ping(Request& request, Responder& responder, Context& context);
  void discover(Request& request, Responder& responder, Context& context);
  void tools_list(Request& request, Responder& responder, Context& context);
  void call_tool(Request& request, Responder& responder, Context& context);
  // tasks/* (MCP 2025-11-25, and 2026-07-28's extension; tasks/task_methods.cpp).
  void tasks_get(Request& request, Responder& responder, Context& context);
  void tasks_result(Request& request, Responder& responder, Context& context);
  void tasks_list(Request& request, Responder& responder, Context& context);
  void tasks_cancel(Request& request, Responder& responder, Context& context);
  void tasks_update(Request& request, Responder& responder, Context& context);

  McpService& service_;
};

}  // namespace execmcp::host::mcp
