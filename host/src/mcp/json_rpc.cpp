// JSON-RPC 2.0 message validation, responses and the method dispatch table (see json_rpc.hpp).
#include "mcp/json_rpc.hpp"

#include <exception>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

namespace execmcp::host::mcp {

using nlohmann::json;

namespace {

ErrorReply invalid_request(json id, const std::string& why) {
  return ErrorReply{std::move(id), {rpc_error::kInvalidRequest, "Invalid Request: " + why}};
}

}  // namespace

std::variant<json, ParseRefusal> parse_message(std::string_view line, const MessageLimits& limits) {
  auto parsed = parse_bounded_json(line, limits, "id");
  if (auto* value = std::get_if<json>(&parsed)) return std::move(*value);
  const JsonRefusal& refusal = std::get<JsonRefusal>(parsed);
  std::string why;
  switch (refusal.kind) {
    case JsonRefusal::Kind::kSyntax:
      return ParseRefusal{{rpc_error::kParseError,
                           "Parse error: invalid JSON at byte " + std::to_string(refusal.position)},
                          nullptr};
    case JsonRefusal::Kind::kTooLong:
      why = "message longer than " + std::to_string(limits.max_bytes) +
            " bytes (the server's --max-message-bytes)";
      break;
    case JsonRefusal::Kind::kTooDeep:
      why = "JSON nested deeper than " + std::to_string(limits.max_depth) + " levels";
      break;
    case JsonRefusal::Kind::kTooManyValues:
      why = "message has more than " + std::to_string(limits.max_values) +
            " JSON values (the server's --max-message-values)";
      break;
  }
  // The top-level "id" read so far, if it is a usable request id.
  const json& id = refusal.watched;
  return ParseRefusal{{rpc_error::kInvalidRequest, "Invalid Request: " + why},
                      is_request_id(id) ? id : json(nullptr)};
}

DecodedMessage decode_message(std::string_view line, const MessageLimits& limits) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return Ignored{"blank line"};
  auto parsed = parse_message(line, limits);
  if (auto* refusal = std::get_if<ParseRefusal>(&parsed)) {
    return ErrorReply{std::move(refusal->id), std::move(refusal->error)};
  }
  json& message = std::get<json>(parsed);
  if (message.is_array()) {
    // JSON-RPC batches were removed from MCP in 2025-06-18; we answer them as one invalid request.
    return invalid_request(nullptr, "batch arrays are not supported");
  }
  if (!message.is_object()) return invalid_request(nullptr, "a message must be a JSON object");
  const auto id_it = message.find("id");
  const bool has_id = id_it != message.end();
  json id = nullptr;
  if (has_id) {
    if (!id_it->is_string() && !id_it->is_number_integer()) {
      return invalid_request(nullptr, "'id' must be a string or an integer");
    }
    if (id_it->is_string() && id_it->get_ref<const std::string&>().size() > kMaxIdBytes) {
      return invalid_request(nullptr,
                             "'id' is longer than " + std::to_string(kMaxIdBytes) + " bytes");
    }
    id = std::move(*id_it);
  }
  const auto version = message.find("jsonrpc");
  if (version == message.end() || *version != "2.0") {
    return invalid_request(std::move(id), "'jsonrpc' must be \"2.0\"");
  }
  const auto method_it = message.find("method");
  if (method_it == message.end()) {
    if (has_id && (message.contains("result") || message.contains("error"))) {
      return Ignored{"a response from the client (id=" + id.dump() + ")"};
    }
    return invalid_request(std::move(id), "missing 'method'");
  }
  if (!method_it->is_string()) return invalid_request(std::move(id), "'method' must be a string");
  if (method_it->get_ref<const std::string&>().size() > kMaxIdBytes) {
    // No method is that long; refusing here keeps client strings out of logs and error texts.
    return invalid_request(std::move(id),
                           "'method' is longer than " + std::to_string(kMaxIdBytes) + " bytes");
  }
  std::string method = std::move(method_it->get_ref<std::string&>());
  json params = json::object();
  if (const auto p = message.find("params"); p != message.end() && !p->is_null()) {
    params = std::move(*p);  // moved, never copied: a message costs its size once
  }
  if (!has_id) return Notification{std::move(method), std::move(params)};
  return Request{std::move(id), std::move(method), std::move(params)};
}

std::string serialize_message(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

json make_result_response(const json& id, json result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

bool is_request_id(const json& id) {
  return id.is_number_integer() ||
         (id.is_string() && id.get_ref<const std::string&>().size() <= kMaxIdBytes);
}

std::string string_member(const json& object, const char* key, std::string fallback) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

json make_error_response(const json& id, const RpcError& error) {
  json body{{"code", error.code}, {"message", error.message}};
  if (!error.data.is_null()) body["data"] = error.data;
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(body)}};
}

json make_notification(std::string_view method, json params) {
  return json{{"jsonrpc", "2.0"}, {"method", std::string(method)}, {"params", std::move(params)}};
}

Responder::Responder(json id, std::string method, Send send, std::function<void()> done)
    : state_(std::make_shared<State>()) {
  state_->id = std::move(id);
  state_->method = std::move(method);
  state_->send = std::move(send);
  state_->done_callback = std::move(done);
  state_->started = std::chrono::steady_clock::now();
}

Responder::State::~State() {
  // A handler that never answered still frees its id.
  if (!done.load() && done_callback) done_callback();
}

void Responder::reply(RpcOutcome outcome) const {
  if (state_->done.exchange(true)) return;
  const auto elapsed =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - state_->started)
          .count();
  if (auto* error = std::get_if<RpcError>(&outcome)) {
    spdlog::debug("mcp: {} id={} -> error {} ({:.1f} ms)", state_->method, state_->id.dump(),
                  error->code, elapsed);
    state_->send(make_error_response(state_->id, *error));
  } else {
    spdlog::debug("mcp: {} id={} -> ok ({:.1f} ms)", state_->method, state_->id.dump(), elapsed);
    state_->send(make_result_response(state_->id, std::move(std::get<json>(outcome))));
  }
  // After the response was handed on, so a later response with this id cannot overtake it.
  if (state_->done_callback) state_->done_callback();
}

void Responder::drop(std::string_view why) const {
  if (state_->done.exchange(true)) return;
  const auto elapsed =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - state_->started)
          .count();
  spdlog::debug("mcp: {} id={} -> no response, {} ({:.1f} ms)", state_->method, state_->id.dump(),
                why, elapsed);
  if (state_->done_callback) state_->done_callback();
}

Dispatcher::Dispatcher(Send send, MessageLimits limits) : send_(std::move(send)), limits_(limits) {}

void Dispatcher::on_request(std::string method, RequestHandler handler) {
  requests_.insert_or_assign(std::move(method), std::move(handler));
}

void Dispatcher::on_deferred_request(std::string method, DeferredHandler handler) {
  requests_.insert_or_assign(std::move(method), std::move(handler));
}

void Dispatcher::on_notification(std::string method, NotificationHandler handler) {
  notifications_.insert_or_assign(std::move(method), std::move(handler));
}

void Dispatcher::handle_line(std::string_view line) {
  try {
    DecodedMessage decoded = decode_message(line, limits_);
    if (auto* request = std::get_if<Request>(&decoded)) {
      handle_request(std::move(*request));
    } else if (auto* notification = std::get_if<Notification>(&decoded)) {
      handle_notification(std::move(*notification));
    } else if (auto* error = std::get_if<ErrorReply>(&decoded)) {
      spdlog::warn("mcp: refused a message of {} bytes: {}", line.size(), error->error.message);
      send_error(std::move(*error));
    } else {
      spdlog::debug("mcp: ignoring {}", std::get<Ignored>(decoded).why);
    }
  } catch (const std::exception& e) {  // e.g. bad_alloc; the stream itself stays usable
    spdlog::error("mcp: internal error while handling a message: {}", e.what());
    send_(make_error_response(nullptr, {rpc_error::kInternalError, "Internal error"}));
  }
}

void Dispatcher::send_error(ErrorReply reply) {
  if (!reply.id.is_null()) {
    std::lock_guard lock(in_flight_->mutex);
    if (in_flight_->ids.contains(reply.id.dump())) {
      // Answering with that id would look like the answer to the request still in progress.
      reply.error.message += " (id " + reply.id.dump() + " belongs to a request in progress)";
      reply.id = nullptr;
    }
  }
  send_(make_error_response(reply.id, reply.error));
}

void Dispatcher::handle_notification(Notification notification) {
  const auto handler = notifications_.find(notification.method);
  if (handler == notifications_.end()) {
    spdlog::debug("mcp: ignoring notification {}", notification.method);
    return;
  }
  if (!notification.params.is_object()) {
    spdlog::warn("mcp: ignoring notification {}: params is not an object", notification.method);
    return;
  }
  try {
    handler->second(notification);
  } catch (const std::exception& e) {
    spdlog::error("mcp: notification {} failed: {}", notification.method, e.what());
  }
}

void Dispatcher::handle_request(Request request) {
  const std::string key = request.id.dump();
  bool duplicate = false;
  {
    std::lock_guard lock(in_flight_->mutex);
    duplicate = !in_flight_->ids.insert(key).second;
  }
  if (duplicate) {
    spdlog::warn("mcp: {} with id {} while a request with that id is in progress; not run",
                 request.method, key);
    send_(make_error_response(
        nullptr, {rpc_error::kInvalidRequest, "Invalid Request: id " + key +
                                                  " is already used by a request in progress; "
                                                  "this request was not run"}));
    return;
  }
  Responder responder(request.id, request.method, send_, [in_flight = in_flight_, key] {
    std::lock_guard lock(in_flight->mutex);
    in_flight->ids.erase(key);
  });
  const auto route = requests_.find(request.method);
  if (route == requests_.end()) {
    responder.reply(RpcError{rpc_error::kMethodNotFound, "Method not found: " + request.method});
    return;
  }
  if (!request.params.is_object()) {
    responder.reply(
        RpcError{rpc_error::kInvalidParams, "Invalid params: 'params' must be an object"});
    return;
  }
  const std::string method = request.method;
  try {
    if (auto* inline_handler = std::get_if<RequestHandler>(&route->second)) {
      responder.reply((*inline_handler)(request));
    } else {
      std::get<DeferredHandler>(route->second)(std::move(request), responder);
    }
  } catch (const std::exception& e) {
    spdlog::error("mcp: {} failed: {}", method, e.what());
    responder.reply(
        RpcError{rpc_error::kInternalError, std::string("Internal error: ") + e.what()});
  }
}

}  // namespace execmcp::host::mcp
