// JSON-RPC 2.0 framing and a method -> handler dispatch table for one newline-delimited stream.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>

#include <nlohmann/json.hpp>

namespace execmcp::host::mcp {

namespace rpc_error {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
}  // namespace rpc_error

struct RpcError {
  int code = rpc_error::kInternalError;
  std::string message;
};

// What a request handler produces: a result object, or an error for the JSON-RPC error member.
using RpcOutcome = std::variant<nlohmann::json, RpcError>;

struct Request {
  nlohmann::json id;  // string or integer
  std::string method;
  nlohmann::json params;  // an object (empty when the request had none)
};

struct Notification {
  std::string method;
  nlohmann::json params;
};

// Serialises one message on one line. Invalid UTF-8 that slipped through is replaced, never thrown.
[[nodiscard]] std::string serialize_message(const nlohmann::json& message);
[[nodiscard]] nlohmann::json make_result_response(const nlohmann::json& id, nlohmann::json result);
[[nodiscard]] nlohmann::json make_error_response(const nlohmann::json& id, const RpcError& error);
[[nodiscard]] nlohmann::json make_notification(std::string_view method, nlohmann::json params);

// Sends the response to one request, at most once, and logs the request's method, id and
// duration. Copies share the same "already answered" state.
class Responder {
 public:
  using Send = std::function<void(const nlohmann::json&)>;

  Responder(nlohmann::json id, std::string method, Send send);

  void reply(RpcOutcome outcome) const;
  // Finishes without a response (a request the client cancelled).
  void drop(std::string_view why) const;

  [[nodiscard]] const nlohmann::json& id() const { return state_->id; }

 private:
  struct State {
    nlohmann::json id;
    std::string method;
    Send send;
    std::chrono::steady_clock::time_point started;
    std::atomic<bool> done{false};
  };
  std::shared_ptr<State> state_;
};

class Dispatcher {
 public:
  using Send = Responder::Send;
  // Runs on the reader thread and answers at once.
  using RequestHandler = std::function<RpcOutcome(const Request&)>;
  // Takes over the request (e.g. queues it on a worker) and answers later through the Responder.
  using DeferredHandler = std::function<void(Request, Responder)>;
  using NotificationHandler = std::function<void(const Notification&)>;

  explicit Dispatcher(Send send);

  void on_request(std::string method, RequestHandler handler);
  void on_deferred_request(std::string method, DeferredHandler handler);
  void on_notification(std::string method, NotificationHandler handler);

  // Handles one incoming line: parse errors, invalid requests and unknown methods are answered
  // here; notifications are never answered. Never throws.
  void handle_line(std::string_view line);

 private:
  void handle_message(const nlohmann::json& message);

  Send send_;
  std::unordered_map<std::string, std::variant<RequestHandler, DeferredHandler>> requests_;
  std::unordered_map<std::string, NotificationHandler> notifications_;
};

}  // namespace execmcp::host::mcp
