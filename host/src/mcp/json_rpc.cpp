// JSON-RPC 2.0 message validation, responses and the method dispatch table (see json_rpc.hpp).
#include "mcp/json_rpc.hpp"

#include <exception>

#include <spdlog/spdlog.h>

namespace execmcp::host::mcp {

using nlohmann::json;

std::string serialize_message(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

json make_result_response(const json& id, json result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json make_error_response(const json& id, const RpcError& error) {
  return json{{"jsonrpc", "2.0"},
              {"id", id},
              {"error", json{{"code", error.code}, {"message", error.message}}}};
}

json make_notification(std::string_view method, json params) {
  return json{{"jsonrpc", "2.0"}, {"method", std::string(method)}, {"params", std::move(params)}};
}

Responder::Responder(json id, std::string method, Send send) : state_(std::make_shared<State>()) {
  state_->id = std::move(id);
  state_->method = std::move(method);
  state_->send = std::move(send);
  state_->started = std::chrono::steady_clock::now();
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
}

void Responder::drop(std::string_view why) const {
  if (state_->done.exchange(true)) return;
  const auto elapsed =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - state_->started)
          .count();
  spdlog::debug("mcp: {} id={} -> no response, {} ({:.1f} ms)", state_->method, state_->id.dump(),
                why, elapsed);
}

Dispatcher::Dispatcher(Send send) : send_(std::move(send)) {}

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
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;  // blank keep-alive
  json message = json::parse(line, nullptr, false);
  if (message.is_discarded()) {
    spdlog::warn("mcp: received a line that is not valid JSON ({} bytes)", line.size());
    send_(make_error_response(nullptr, {rpc_error::kParseError, "Parse error: invalid JSON"}));
    return;
  }
  try {
    handle_message(message);
  } catch (const std::exception& e) {  // e.g. bad_alloc; the stream itself stays usable
    spdlog::error("mcp: internal error while handling a message: {}", e.what());
    send_(
        make_error_response(message.is_object() && message.contains("id") ? message["id"] : json(),
                            {rpc_error::kInternalError, "Internal error"}));
  }
}

void Dispatcher::handle_message(const json& message) {
  auto invalid = [&](const json& id, std::string why) {
    spdlog::warn("mcp: invalid request: {}", why);
    send_(make_error_response(id, {rpc_error::kInvalidRequest, "Invalid Request: " + why}));
  };
  if (message.is_array()) {
    // JSON-RPC batches were removed from MCP in 2025-06-18; we answer them as one invalid request.
    invalid(nullptr, "batch arrays are not supported");
    return;
  }
  if (!message.is_object()) {
    invalid(nullptr, "a message must be a JSON object");
    return;
  }
  const bool has_id = message.contains("id");
  json id = nullptr;
  if (has_id) {
    const json& raw = message["id"];
    if (!raw.is_string() && !raw.is_number_integer()) {
      invalid(nullptr, "'id' must be a string or an integer");
      return;
    }
    id = raw;
  }
  const auto version = message.find("jsonrpc");
  if (version == message.end() || *version != "2.0") {
    invalid(id, "'jsonrpc' must be \"2.0\"");
    return;
  }
  const auto method_it = message.find("method");
  if (method_it == message.end()) {
    if (has_id && (message.contains("result") || message.contains("error"))) {
      spdlog::debug("mcp: ignoring a response from the client (id={})", id.dump());
      return;
    }
    invalid(id, "missing 'method'");
    return;
  }
  if (!method_it->is_string()) {
    invalid(id, "'method' must be a string");
    return;
  }
  const std::string method = method_it->get<std::string>();
  json params = json::object();
  if (const auto p = message.find("params"); p != message.end() && !p->is_null()) {
    params = *p;
  }

  if (!has_id) {
    const auto handler = notifications_.find(method);
    if (handler == notifications_.end()) {
      spdlog::debug("mcp: ignoring notification {}", method);
      return;
    }
    if (!params.is_object()) {
      spdlog::warn("mcp: ignoring notification {}: params is not an object", method);
      return;
    }
    try {
      handler->second(Notification{method, std::move(params)});
    } catch (const std::exception& e) {
      spdlog::error("mcp: notification {} failed: {}", method, e.what());
    }
    return;
  }

  Responder responder(id, method, send_);
  const auto route = requests_.find(method);
  if (route == requests_.end()) {
    responder.reply(RpcError{rpc_error::kMethodNotFound, "Method not found: " + method});
    return;
  }
  if (!params.is_object()) {
    responder.reply(
        RpcError{rpc_error::kInvalidParams, "Invalid params: 'params' must be an object"});
    return;
  }
  Request request{id, method, std::move(params)};
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
