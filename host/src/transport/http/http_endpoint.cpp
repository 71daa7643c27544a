// MCP over Streamable HTTP (see http_endpoint.hpp): routing, credentials, the two eras of the
// transport (2025-era sessions; 2026-07-28 stateless requests), JSON or SSE answers.
#include "transport/http/http_endpoint.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/utf8.hpp"
#include "execmcp/common/base64.hpp"
#include "mcp/protocol.hpp"

namespace execmcp::host::mcp {

using nlohmann::json;

namespace {

constexpr const char* kMcpPrefix = "/mcp/";
constexpr const char* kResourceMetadataPath = "/.well-known/oauth-protected-resource";
constexpr const char* kResourceMetadataPrefix = "/.well-known/oauth-protected-resource/";

http::Headers json_headers() {
  return {{"content-type", "application/json"}};
}

std::string json_body(const json& value) {
  return serialize_message(value);
}

// A short JSON body for an HTTP-level refusal: what went wrong and what to do.
std::string problem(const std::string& error, const std::string& description) {
  return json_body(json{{"error", error}, {"error_description", description}});
}

std::string trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return std::string(text.substr(first, last - first + 1));
}

std::string header_value(const http::HttpRequest& request, std::string_view name) {
  const std::string* value = request.header(name);
  return value == nullptr ? std::string() : trimmed(*value);
}

bool contains_token(const std::string& header, std::string_view token) {
  std::string lower = header;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find(token) != std::string::npos;
}

// 2026-07-28 lets a header value travel as `=?base64?...?=`: compare the decoded value.
std::string decoded_header(const std::string& value) {
  if (value.size() >= 12 && value.starts_with("=?base64?") && value.ends_with("?=")) {
    if (auto decoded = common::base64_decode(std::string_view(value).substr(9, value.size() - 11)))
      return *decoded;
  }
  return value;
}

std::string new_session_id() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n <= 0) throw std::runtime_error("getrandom failed");
    got += static_cast<std::size_t>(n);
  }
  std::string id;
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    id += hex;
  }
  return id;
}

// The HTTP status for an answer: 200, except what the transport page gives its own status (a
// refused revision or header 400, an unknown method 404 in 2026-07-28) and a full server.
int status_for(const json& message, bool stateless) {
  const auto error = message.find("error");
  if (error == message.end()) return 200;
  const int code = error->value("code", 0);
  if (code == kServerBusy) {
    // An agent's or a user's own bound is theirs to wait for (429); the server's is everyone's.
    const auto data = error->find("data");
    const std::string limit = data != error->end() && data->is_object()
                                  ? data->value("limit", std::string())
                                  : std::string();
    return limit == "agent" || limit == "user" || limit == "tasks" ? 429 : 503;
  }
  if (!stateless) return 200;
  if (code == protocol::kHeaderMismatch || code == protocol::kUnsupportedProtocolVersion ||
      code == protocol::kMissingRequiredClientCapability)
    return 400;
  if (code == rpc_error::kMethodNotFound) return 404;
  return 200;
}

std::string outcome_of(const json& message) {
  if (message.contains("error")) {
    return message["error"].value("code", 0) == kServerBusy ? "busy" : "rpc_error";
  }
  const auto result = message.find("result");
  if (result != message.end() && result->value("isError", false)) return "error";
  return "ok";
}

}  // namespace

// A 2025-era session: minted by initialize, bound to the credential and agent that opened it.
struct HttpEndpoint::LegacySession {
  std::string id;
  std::string principal;
  std::string agent_id;
  std::string protocol_version;
  std::string client;
  std::chrono::steady_clock::time_point last_used;  // guarded by the endpoint's mutex_
  CallTable calls;                                  // key: JSON-RPC id.dump()
};

// One POST's answer: a JSON body, or an SSE stream once progress flows. Progress (the ticker's
// thread) and the result (a worker) may race; the mutex keeps their order and the choice of form.
class HttpEndpoint::Reply {
 public:
  Reply(std::shared_ptr<http::HttpExchange> exchange, bool stateless, Metrics& metrics)
      : exchange_(std::move(exchange)), stateless_(stateless), metrics_(metrics) {}

  void progress(const json& notification) {
    std::lock_guard lock(mutex_);
    if (done_) return;
    if (!streaming_) {
      exchange_->start_stream({{"cache-control", "no-cache"}, {"x-accel-buffering", "no"}});
      streaming_ = true;
    }
    exchange_->send_event(serialize_message(notification), true);
  }

  void final(const json& message) {
    std::lock_guard lock(mutex_);
    if (done_) return;
    done_ = true;
    outcome_ = outcome_of(message);
    if (streaming_) {
      exchange_->send_event(serialize_message(message), false);
      exchange_->end_stream();
      metrics_.http_request(200);
      return;
    }
    const int status = status_for(message, stateless_);
    metrics_.http_request(status);
    http::Headers headers = json_headers();
    if (status == 429 || status == 503) headers.emplace_back("retry-after", "1");
    for (auto& header : extra_headers_) headers.push_back(std::move(header));
    exchange_->respond(status, std::move(headers), serialize_message(message));
  }

  // The call ended without a response (the client cancelled it, which MCP answers with nothing):
  // end the HTTP response all the same, as an event stream with no message in it, so a client
  // still waiting on this POST is not left hanging.
  void abandon() {
    std::lock_guard lock(mutex_);
    if (done_) return;
    done_ = true;
    if (exchange_->peer_gone()) return;  // 2026-07-28: the client closed the stream to cancel
    if (!streaming_) exchange_->start_stream({{"cache-control", "no-cache"}});
    exchange_->end_stream();
  }

  // Before the response: a header it carries (initialize's Mcp-Session-Id).
  void add_header(std::string name, std::string value) {
    std::lock_guard lock(mutex_);
    extra_headers_.emplace_back(std::move(name), std::move(value));
  }

  std::string outcome() {
    std::lock_guard lock(mutex_);
    return outcome_.empty() ? "cancelled" : outcome_;
  }

 private:
  std::shared_ptr<http::HttpExchange> exchange_;
  const bool stateless_;
  Metrics& metrics_;
  std::mutex mutex_;
  bool streaming_ = false;
  bool done_ = false;
  std::string outcome_;
  http::Headers extra_headers_;
};

HttpEndpoint::HttpEndpoint(McpService& service, AgentTargets agents, const AccessCheck* access,
                           Metrics& metrics, HttpEndpointOptions options)
    : service_(service),
      router_(service),
      agents_(std::move(agents)),
      access_(access),
      metrics_(metrics),
      options_(std::move(options)) {}

HttpEndpoint::~HttpEndpoint() {
  cancel_all();
  wait_idle(std::chrono::seconds(30));
}

void HttpEndpoint::cancel_all() {
  calls_.cancel_all();
  // Tasks outlive their requests but not the server: their trees end too.
  service_.tasks().cancel_all("cancelled: the server is shutting down");
}

bool HttpEndpoint::wait_idle(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const bool calls = calls_.wait_idle(timeout);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return service_.tasks().wait_idle(std::max(left, std::chrono::milliseconds(0))) && calls;
}

void HttpEndpoint::add_routes(http::RouteTable& routes) {
  auto metadata = [this](const std::string& path, http::HttpRequest& request,
                         const std::shared_ptr<http::HttpExchange>& exchange) {
    serve_resource_metadata(path, request, exchange);
  };
  routes.add({kResourceMetadataPath}, metadata);
  routes.add({kResourceMetadataPrefix, true}, metadata);
  routes.add({kMcpPrefix, true}, [this](const std::string& path, http::HttpRequest& request,
                                        const std::shared_ptr<http::HttpExchange>& exchange) {
    serve_mcp(path, request, exchange);
  });
}

std::string HttpEndpoint::not_found_body() {
  return problem("not_found", "no such path; MCP is served at /mcp/<agent id>");
}

void HttpEndpoint::serve_resource_metadata(const std::string& /*path*/,
                                           http::HttpRequest& /*request*/,
                                           const std::shared_ptr<http::HttpExchange>& exchange) {
  if (options_.protected_resource_metadata.empty()) {
    metrics_.http_request(404);
    exchange->respond(404, json_headers(), problem("not_found", "this server does not use OAuth"));
    return;
  }
  metrics_.http_request(200);
  exchange->respond(200, json_headers(), options_.protected_resource_metadata);
}

void HttpEndpoint::serve_mcp(const std::string& path, http::HttpRequest& request,
                             const std::shared_ptr<http::HttpExchange>& exchange) {
  handle_mcp(path.substr(std::string_view(kMcpPrefix).size()), request, exchange);
}

void HttpEndpoint::refuse(const std::shared_ptr<http::HttpExchange>& exchange, int status,
                          http::Headers headers, std::string body) {
  metrics_.http_request(status);
  exchange->respond(status, std::move(headers), std::move(body));
}

void HttpEndpoint::handle_mcp(const std::string& agent_id, http::HttpRequest& request,
                              const std::shared_ptr<http::HttpExchange>& exchange) {
  const std::optional<AccessDecision> access = admit(agent_id, request, exchange);
  if (!access || !accept_method(*access, request, exchange) ||
      !accept_media_type(request, exchange))
    return;
  std::optional<Request> rpc = read_request(*access, request, exchange);
  if (!rpc) return;
  const protocol::MetaOutcome meta = protocol::read_request_meta(rpc->params);
  if (!headers_agree(request, *rpc, meta, exchange)) return;
  route(agent_id, *access, request, std::move(*rpc),
        std::holds_alternative<protocol::StatelessMeta>(meta), exchange);
}

std::optional<AccessDecision> HttpEndpoint::admit(
    const std::string& agent_id, const http::HttpRequest& request,
    const std::shared_ptr<http::HttpExchange>& exchange) {
  // The agent is the URL's, and the credentials must be good for it.
  AccessDecision access;
  if (access_ != nullptr) {
    access = access_->check(request, agent_id);
  } else {
    access.allowed = true;
    access.principal = "anonymous";
  }
  if (!access.allowed) {
    http::Headers headers = access.headers;
    headers.emplace_back("content-type", "application/json");
    refuse(exchange, access.status, std::move(headers), access.body);
    return std::nullopt;
  }
  if (!agents_.contains(agent_id)) {
    refuse(exchange, 404, json_headers(),
           problem("unknown_agent", "this server has no agent '" +
                                        sanitize_utf8(agent_id.substr(0, 64)) +
                                        "'; MCP is served at /mcp/<agent id>"));
    return std::nullopt;
  }
  if (calls_.stopping()) {
    refuse(exchange, 503, {{"retry-after", "5"}, {"content-type", "application/json"}},
           problem("shutting_down", "the server is shutting down; retry shortly"));
    return std::nullopt;
  }
  return access;
}

bool HttpEndpoint::accept_method(const AccessDecision& access, const http::HttpRequest& request,
                                 const std::shared_ptr<http::HttpExchange>& exchange) {
  if (request.method == "POST") return true;
  if (request.method == "DELETE") {
    handle_delete(access, request, exchange);
    return false;
  }
  refuse(exchange, 405, {{"allow", "POST, DELETE"}, {"content-type", "application/json"}},
         problem("method_not_allowed",
                 "MCP takes POST (and DELETE to end a 2025-era session); this server "
                 "opens no GET stream"));
  return false;
}

bool HttpEndpoint::accept_media_type(const http::HttpRequest& request,
                                     const std::shared_ptr<http::HttpExchange>& exchange) {
  if (contains_token(header_value(request, "content-type"), "application/json")) return true;
  refuse(exchange, 415, json_headers(),
         problem("unsupported_media_type",
                 "send the JSON-RPC message with Content-Type: application/json"));
  return false;
}

std::optional<Request> HttpEndpoint::read_request(
    const AccessDecision& access, const http::HttpRequest& request,
    const std::shared_ptr<http::HttpExchange>& exchange) {
  DecodedMessage decoded = decode_message(request.body, options_.limits);
  if (auto* error = std::get_if<ErrorReply>(&decoded)) {
    refuse(exchange, 400, json_headers(), json_body(make_error_response(error->id, error->error)));
    return std::nullopt;
  }
  if (auto* ignored = std::get_if<Ignored>(&decoded)) {
    if (request.body.find_first_not_of(" \t\r\n") == std::string::npos) {
      refuse(exchange, 400, json_headers(),
             problem("empty_body", "POST one JSON-RPC request or notification"));
      return std::nullopt;
    }
    spdlog::debug("http: {}", ignored->why);
    refuse(exchange, 202, {}, {});
    return std::nullopt;
  }
  if (auto* notification = std::get_if<Notification>(&decoded)) {
    // 2026-07-28 defines no notification a client posts over HTTP (closing the stream cancels);
    // a 2025-era session's notifications reach its own calls only.
    std::shared_ptr<LegacySession> session;
    if (request.header("mcp-session-id")) {
      std::lock_guard lock(mutex_);
      const auto it = sessions_.find(header_value(request, "mcp-session-id"));
      if (it != sessions_.end() && it->second->principal == access.principal) session = it->second;
    }
    McpRouter::notify(*notification, session ? &session->calls : nullptr);
    refuse(exchange, 202, {}, {});
    return std::nullopt;
  }
  return std::move(std::get<Request>(decoded));
}

bool HttpEndpoint::headers_agree(const http::HttpRequest& request, const Request& rpc,
                                 const protocol::MetaOutcome& meta,
                                 const std::shared_ptr<http::HttpExchange>& exchange) {
  const std::string header_version = header_value(request, "mcp-protocol-version");
  auto mismatch = [&](const RpcError& error) {
    refuse(exchange, 400, json_headers(), json_body(make_error_response(rpc.id, error)));
    return false;
  };
  // The header must agree with the body before the body's revision is judged: a mismatch is
  // -32020 even when the body names a revision we do not speak.
  if (rpc.params.is_object() && !header_version.empty()) {
    const auto raw = rpc.params.find("_meta");
    if (raw != rpc.params.end() && raw->is_object()) {
      const auto version = raw->find(protocol::kMetaProtocolVersion);
      if (version != raw->end() && version->is_string() &&
          version->get_ref<const std::string&>() != header_version) {
        return mismatch(RpcError{
            protocol::kHeaderMismatch,
            "Header mismatch: MCP-Protocol-Version header '" +
                sanitize_utf8(header_version.substr(0, 64)) + "' does not match _meta's '" +
                sanitize_utf8(version->get<std::string>().substr(0, 64)) + "'"});
      }
    }
  }
  if (const auto* error = std::get_if<protocol::MetaError>(&meta)) return mismatch(error->error);
  if (std::holds_alternative<protocol::NoMeta>(meta)) {
    if (header_version != protocol::kStateless) return true;
    return mismatch(RpcError{rpc_error::kInvalidParams,
                             std::string("Invalid params: the MCP-Protocol-Version "
                                         "header says 2026-07-28 but params._meta has no '") +
                                 protocol::kMetaProtocolVersion + "'"});
  }
  // 2026-07-28: the request says everything; the headers must agree with the body.
  const auto& stateless = std::get<protocol::StatelessMeta>(meta);
  if (header_version != stateless.version) {
    return mismatch(RpcError{protocol::kHeaderMismatch,
                             header_version.empty()
                                 ? "Header mismatch: the MCP-Protocol-Version header is "
                                   "missing (expected '" +
                                       stateless.version + "')"
                                 : "Header mismatch: MCP-Protocol-Version header '" +
                                       sanitize_utf8(header_version.substr(0, 64)) +
                                       "' does not match _meta's '" + stateless.version + "'"});
  }
  const std::string method_header = header_value(request, "mcp-method");
  if (method_header != rpc.method) {
    return mismatch(RpcError{protocol::kHeaderMismatch,
                             "Header mismatch: Mcp-Method header '" +
                                 sanitize_utf8(method_header.substr(0, 64)) +
                                 "' does not match the body's method '" + rpc.method + "'"});
  }
  if (rpc.method == "tasks/get" || rpc.method == "tasks/update" || rpc.method == "tasks/cancel") {
    // The tasks extension routes by task: Mcp-Name carries params.taskId.
    const auto task = rpc.params.find("taskId");
    const std::string task_id =
        task != rpc.params.end() && task->is_string() ? task->get<std::string>() : std::string();
    const std::string name_header = decoded_header(header_value(request, "mcp-name"));
    if (name_header == task_id) return true;
    return mismatch(RpcError{
        protocol::kHeaderMismatch,
        "Header mismatch: Mcp-Name header '" + sanitize_utf8(name_header.substr(0, 128)) +
            "' does not match params.taskId '" + sanitize_utf8(task_id.substr(0, 128)) + "'"});
  }
  if (rpc.method != "tools/call") return true;
  const auto name = rpc.params.find("name");
  const std::string body_name =
      name != rpc.params.end() && name->is_string() ? name->get<std::string>() : std::string();
  const std::string name_header = decoded_header(header_value(request, "mcp-name"));
  if (name_header == body_name) return true;
  return mismatch(RpcError{
      protocol::kHeaderMismatch,
      "Header mismatch: Mcp-Name header '" + sanitize_utf8(name_header.substr(0, 128)) +
          "' does not match the tool name '" + sanitize_utf8(body_name.substr(0, 128)) + "'"});
}

void HttpEndpoint::route(const std::string& agent_id, const AccessDecision& access,
                         http::HttpRequest& request, Request rpc, bool stateless,
                         const std::shared_ptr<http::HttpExchange>& exchange) {
  // The agent for this call: the agent's own, or (per-user) the credentials' user's sandbox.
  Resolution resolved = agents_.at(agent_id)->resolve(access.user_key);
  if (!resolved.agent) {
    const bool limit = resolved.at_limit;
    return refuse(exchange, limit ? 429 : 503,
                  {{"retry-after", limit ? "60" : "5"}, {"content-type", "application/json"}},
                  problem(limit ? "too_many_users" : "unavailable", resolved.refusal));
  }
  McpRouter::Context context;
  context.caller = CallerContext{resolved.agent.get(), access.principal, {}, {}, nullptr};
  context.caller.hold = std::move(resolved.agent);
  context.caller.endpoint = agent_id;
  context.caller.user_key = access.user_key;
  context.caller.identified = access_ != nullptr;
  std::shared_ptr<LegacySession> session;
  if (!stateless && rpc.method != McpRouter::kInitialize) {
    session = find_session(access, agent_id, request, exchange);
    if (!session) return;
    const std::string header_version = header_value(request, "mcp-protocol-version");
    if (!header_version.empty() &&
        (header_version == protocol::kStateless || !protocol::is_supported(header_version))) {
      return refuse(exchange, 400, json_headers(),
                    json_body(make_error_response(
                        rpc.id, RpcError{rpc_error::kInvalidRequest,
                                         "Unsupported MCP-Protocol-Version header '" +
                                             sanitize_utf8(header_version.substr(0, 64)) +
                                             "' for this session (negotiated " +
                                             session->protocol_version + ")"})));
    }
    context.caller.protocol_version = session->protocol_version;
    context.caller.client = session->client;
  }
  auto reply = std::make_shared<Reply>(exchange, stateless, metrics_);
  Responder responder(rpc.id, rpc.method, [reply](const json& message) { reply->final(message); });
  context.keep_session = [&](const CallerContext& negotiated) {
    return open_session(agent_id, access, negotiated, *reply, exchange);
  };
  context.start_call = [&](const Request& call, const CallerContext& caller,
                           const std::string& tool) {
    return start_call(call, caller, tool, request, exchange, session, reply, stateless);
  };
  if (contains_token(header_value(request, "accept"), "text/event-stream"))
    context.stream = [reply](const json& n) { reply->progress(n); };
  router_.handle(std::move(rpc), std::move(responder), std::move(context));
}

bool HttpEndpoint::open_session(const std::string& agent_id, const AccessDecision& access,
                                const CallerContext& negotiated, Reply& reply,
                                const std::shared_ptr<http::HttpExchange>& exchange) {
  auto session = std::make_shared<LegacySession>();
  session->id = new_session_id();
  session->principal = access.principal;
  session->agent_id = agent_id;
  session->protocol_version = negotiated.protocol_version;
  session->client = negotiated.client;
  session->last_used = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mutex_);
    expire_sessions_locked();
    std::string why;
    if (const int status = make_room_locked(access.principal, why); status != 0) {
      refuse(exchange, status, {{"retry-after", "60"}, {"content-type", "application/json"}},
             problem("too_many_sessions", why));
      return false;
    }
    sessions_[session->id] = session;
  }
  reply.add_header("mcp-session-id", session->id);
  return true;
}

void HttpEndpoint::handle_delete(const AccessDecision& access, const http::HttpRequest& request,
                                 const std::shared_ptr<http::HttpExchange>& exchange) {
  const std::string id = header_value(request, "mcp-session-id");
  std::shared_ptr<LegacySession> session;
  {
    std::lock_guard lock(mutex_);
    const auto it = sessions_.find(id);
    if (it != sessions_.end() && it->second->principal == access.principal) {
      session = it->second;
      sessions_.erase(it);
    }
  }
  if (!session) {
    metrics_.http_request(404);
    exchange->respond(404, json_headers(),
                      problem("unknown_session", "no such session (it may have ended already)"));
    return;
  }
  session->calls.cancel_all();
  metrics_.http_request(204);
  exchange->respond(204, {}, {});
}

std::shared_ptr<HttpEndpoint::LegacySession> HttpEndpoint::find_session(
    const AccessDecision& access, const std::string& agent_id, const http::HttpRequest& request,
    const std::shared_ptr<http::HttpExchange>& exchange) {
  const std::string id = header_value(request, "mcp-session-id");
  auto answer = [&](int status, const std::string& error, const std::string& description) {
    metrics_.http_request(status);
    exchange->respond(status, json_headers(), problem(error, description));
  };
  if (id.empty()) {
    answer(400, "missing_session",
           "send the Mcp-Session-Id header that initialize returned, or use MCP 2026-07-28 "
           "(params._meta carries the protocol version; no session needed)");
    return nullptr;
  }
  std::lock_guard lock(mutex_);
  expire_sessions_locked();
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    answer(404, "unknown_session", "no such session (it ended or expired): initialize again");
    return nullptr;
  }
  if (it->second->principal != access.principal || it->second->agent_id != agent_id) {
    answer(403, "forbidden", "this session was opened with other credentials or for another agent");
    return nullptr;
  }
  it->second->last_used = std::chrono::steady_clock::now();
  return it->second;
}

int HttpEndpoint::make_room_locked(const std::string& principal, std::string& why) {
  // Each principal's sessions, and its oldest one with no call in flight.
  struct Holder {
    std::size_t count = 0;
    std::shared_ptr<LegacySession> oldest_idle;
  };
  std::unordered_map<std::string, Holder> holders;
  for (const auto& [id, session] : sessions_) {
    Holder& holder = holders[session->principal];
    ++holder.count;
    const bool idle = session->calls.empty();
    if (idle && (!holder.oldest_idle || session->last_used < holder.oldest_idle->last_used))
      holder.oldest_idle = session;
  }
  auto end_session = [&](const std::shared_ptr<LegacySession>& session, const char* reason) {
    spdlog::debug("mcp: session {} of '{}' ended: {}", session->id.substr(0, 8), session->principal,
                  reason);
    sessions_.erase(session->id);
  };
  Holder& mine = holders[principal];
  if (mine.count >= options_.max_sessions_per_principal) {
    if (!mine.oldest_idle) {
      why = "these credentials have " + std::to_string(mine.count) +
            " open sessions, each with a call in progress; end one with DELETE, wait for a call "
            "to finish, or use MCP 2026-07-28, which needs none";
      return 429;
    }
    end_session(mine.oldest_idle, "its principal opened one more than its share");
    return 0;
  }
  if (sessions_.size() < options_.max_sessions) return 0;
  // The server is full: whoever holds the most sessions (this principal on a tie) gives up its
  // oldest idle one, so one principal cannot keep the others out.
  const Holder* victim = nullptr;
  std::size_t victim_rank = 0;
  for (const auto& [name, holder] : holders) {
    if (!holder.oldest_idle) continue;
    const std::size_t rank = 2 * holder.count + (name == principal ? 1 : 0);
    if (victim == nullptr || rank > victim_rank) {
      victim = &holder;
      victim_rank = rank;
    }
  }
  if (victim == nullptr) {
    why = "this server has " + std::to_string(sessions_.size()) +
          " open sessions, each with a call in progress; end one with DELETE or use MCP "
          "2026-07-28, which needs none";
    return 503;
  }
  end_session(victim->oldest_idle, "the server was full and its principal held the most");
  return 0;
}

void HttpEndpoint::expire_sessions_locked() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    const bool idle =
        now - it->second->last_used > options_.session_idle && it->second->calls.empty();
    it = idle ? sessions_.erase(it) : std::next(it);
  }
}

std::optional<CallHooks> HttpEndpoint::start_call(
    const Request& rpc, const CallerContext& caller, const std::string& tool,
    const http::HttpRequest& request, const std::shared_ptr<http::HttpExchange>& exchange,
    const std::shared_ptr<LegacySession>& session, const std::shared_ptr<Reply>& reply,
    bool stateless) {
  auto state = std::make_shared<CallState>();
  const std::string key = rpc.id.dump();
  if (session && !session->calls.add(key, state)) {
    refuse(exchange, 400, json_headers(),
           json_body(make_error_response(
               nullptr, RpcError{rpc_error::kInvalidRequest,
                                 "Invalid request: id " + key.substr(0, 64) +
                                     " is already in use by a call in progress"})));
    return std::nullopt;
  }
  // The endpoint's table is for shutdown only: keyed by the state, unique while it lives.
  const std::string own_key = std::to_string(reinterpret_cast<std::uintptr_t>(state.get()));
  calls_.add(own_key, state);
  const bool sse = contains_token(header_value(request, "accept"), "text/event-stream");
  const auto started = std::chrono::steady_clock::now();
  const std::string agent_id = caller.agent->id();
  const std::string principal = caller.principal;
  // Labelled by the tool it resolves to (the router's word): a made-up name adds no series.
  metrics_.call_started();
  if (stateless) {
    // 2026-07-28: closing the response stream cancels the request (and kills its process tree).
    exchange->on_peer_gone([state] { state->cancel_by_client(); });
  }
  return CallHooks{
      state,
      sse ? McpService::SendProgress([reply](const json& n) { reply->progress(n); })
          : McpService::SendProgress(),
      {},
      [session, key, state] {
        if (session) session->calls.done(key, *state);
      },
      [this, state, own_key, reply, started, agent_id, principal, tool] {
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        reply->abandon();  // no-op unless the call ended without a response (cancelled)
        metrics_.call_finished(agent_id, principal, tool, reply->outcome(), seconds);
        calls_.done(own_key, *state);
      }};
}

}  // namespace execmcp::host::mcp
