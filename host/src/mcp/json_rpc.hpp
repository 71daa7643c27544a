// JSON-RPC 2.0 framing and a method -> handler dispatch table for one newline-delimited stream.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include <nlohmann/json.hpp>

#include "common/bounded_json.hpp"

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
  nlohmann::json data = nullptr;  // the error's "data" member; left out when null
};

// What one incoming message may cost (its bytes, values and depth; see JsonLimits).
using MessageLimits = JsonLimits;

// Longest string id (and method name) we accept: ids are echoed in every response and log line.
inline constexpr std::size_t kMaxIdBytes = 256;

// Whether `id` can be a request id (or a progress token): an integer, or a string of at most
// kMaxIdBytes.
[[nodiscard]] bool is_request_id(const nlohmann::json& id);

// An object's string member, or `fallback` when it is absent or not a string (never throws).
[[nodiscard]] std::string string_member(const nlohmann::json& object, const char* key,
                                        std::string fallback = {});

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

// A line that must be answered with an error and nothing else: not JSON, past a limit, or not a
// valid request. `id` is the request's id when it could be read, else null.
struct ErrorReply {
  nlohmann::json id;
  RpcError error;
};

// A line that needs no answer: blank, or a response from the client. `why` is for the log.
struct Ignored {
  std::string why;
};

using DecodedMessage = std::variant<Request, Notification, ErrorReply, Ignored>;

// Parses one line into a JSON value without recursion, refusing (as soon as the parser gets
// there) a line longer than limits.max_bytes, nesting deeper than limits.max_depth or more than
// limits.max_values values. On refusal, `id` is the top-level "id" if it was read before the
// parser stopped. Pure: no I/O, no threads, no global state.
struct ParseRefusal {
  RpcError error;
  nlohmann::json id;
};
[[nodiscard]] std::variant<nlohmann::json, ParseRefusal> parse_message(std::string_view line,
                                                                       const MessageLimits& limits);

// parse_message, then JSON-RPC 2.0 validation: what one incoming line asks for. A request's
// params are an object or anything the client sent instead (the dispatcher answers -32602 for a
// known method); absent or null params become {}. Pure, never throws: the entry point for fuzzing
// the protocol input.
[[nodiscard]] DecodedMessage decode_message(std::string_view line, const MessageLimits& limits);

// Serialises one message on one line. Invalid UTF-8 that slipped through is replaced, never thrown.
[[nodiscard]] std::string serialize_message(const nlohmann::json& message);
[[nodiscard]] nlohmann::json make_result_response(const nlohmann::json& id, nlohmann::json result);
[[nodiscard]] nlohmann::json make_error_response(const nlohmann::json& id, const RpcError& error);
[[nodiscard]] nlohmann::json make_notification(std::string_view method, nlohmann::json params);

// Sends the response to one request, at most once, and logs the request's method, id and
// duration. Copies share the same "already answered" state. `done` runs once, after the response
// was sent (or dropped): the dispatcher frees the request's id then.
class Responder {
 public:
  using Send = std::function<void(const nlohmann::json&)>;

  Responder(nlohmann::json id, std::string method, Send send, std::function<void()> done = {});

  void reply(RpcOutcome outcome) const;
  // Finishes without a response (a request the client cancelled).
  void drop(std::string_view why) const;

  [[nodiscard]] const nlohmann::json& id() const { return state_->id; }

 private:
  struct State {
    ~State();
    nlohmann::json id;
    std::string method;
    Send send;
    std::function<void()> done_callback;
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

  explicit Dispatcher(Send send, MessageLimits limits = {});

  void on_request(std::string method, RequestHandler handler);
  void on_deferred_request(std::string method, DeferredHandler handler);
  void on_notification(std::string method, NotificationHandler handler);

  // Handles one incoming line: parse errors, invalid requests and unknown methods are answered
  // here; notifications are never answered. A request whose id is still in progress is not run:
  // its error carries a null id, so the only response with that id stays the first request's.
  // Never throws.
  void handle_line(std::string_view line);

 private:
  // Ids of the requests not answered yet (key: id.dump()); shared with their Responders.
  struct InFlight {
    std::mutex mutex;
    std::unordered_set<std::string> ids;
  };

  void handle_request(Request request);
  void handle_notification(Notification notification);
  void send_error(ErrorReply reply);

  Send send_;
  const MessageLimits limits_;
  std::shared_ptr<InFlight> in_flight_ = std::make_shared<InFlight>();
  std::unordered_map<std::string, std::variant<RequestHandler, DeferredHandler>> requests_;
  std::unordered_map<std::string, NotificationHandler> notifications_;
};

}  // namespace execmcp::host::mcp
