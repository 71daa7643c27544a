// MCP over Streamable HTTP for many agents: the routes /mcp/<agent> and the OAuth
// protected-resource metadata, on the HTTP server's route table, over the shared router. (The
// server's probes, /health, /ready and /metrics, are server/probes.*.)
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agent/agent.hpp"
#include "agent/agent_target.hpp"
#include "mcp/call_table.hpp"
#include "mcp/json_rpc.hpp"
#include "mcp/mcp_router.hpp"
#include "mcp/mcp_service.hpp"
#include "mcp/metrics.hpp"
#include "mcp/protocol.hpp"
#include "transport/http/http_exchange.hpp"
#include "transport/http/http_routes.hpp"

namespace execmcp::host::mcp {

// Who a request is, decided from its credentials for one agent (the one in its URL).
struct AccessDecision {
  bool allowed = false;
  std::string principal;  // the token's name or the JWT's subject; logged and audited
  std::string user_key;   // names the user's sandbox of a per-user agent
  int status = 401;       // when refused: 401 (who are you?) or 403 (not for this agent)
  http::Headers headers;  // e.g. WWW-Authenticate
  std::string body;       // says what to do
  // The agents these credentials may use ({"*"}: every agent), when they are valid (also on a
  // 403). Decides what /ready and /metrics show; empty: only the agent asked about.
  std::vector<std::string> agents;
};

// Who may call which agent: the server's authentication, handed down to the endpoint and the
// probes (which ask it only which agents a request's credentials may see). Asked on an HTTP I/O
// thread for every request; thread-safe.
class AccessCheck {
 public:
  virtual ~AccessCheck() = default;
  [[nodiscard]] virtual AccessDecision check(const http::HttpRequest& request,
                                             const std::string& agent_id) const = 0;
};

// The agents served, by id: what each id resolves to (AgentTarget). The targets outlive the
// endpoint and the probes.
using AgentTargets = std::map<std::string, AgentTarget*>;

struct HttpEndpointOptions {
  MessageLimits limits;
  std::size_t max_sessions = 1024;  // 2025-era sessions alive at once
  // One principal's sessions: past it, its own oldest idle session ends (or it gets 429 when all
  // are busy). When all max_sessions are taken, the principal holding the most loses its oldest
  // idle one, so no principal can lock the others out.
  std::size_t max_sessions_per_principal = 32;
  std::chrono::seconds session_idle{3600};
  // JSON for GET /.well-known/oauth-protected-resource (empty: 404).
  std::string protected_resource_metadata;
};

class HttpEndpoint {
 public:
  // `access`: null when the server has no authentication (every request is "anonymous").
  HttpEndpoint(McpService& service, AgentTargets agents, const AccessCheck* access,
               Metrics& metrics, HttpEndpointOptions options = {});
  ~HttpEndpoint();  // cancel_all()
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  // Adds /mcp/<agent> and the OAuth metadata to `routes`. Their handlers never block (tool calls
  // run on the service's workers). The endpoint must outlive the table's use.
  void add_routes(http::RouteTable& routes);
  // The body of the table's 404: where MCP is served.
  [[nodiscard]] static std::string not_found_body();

  // Cancels every call in flight and every task (shutdown) and refuses new ones with 503.
  void cancel_all();
  // Waits until no call is in flight and no task runs, or `timeout` passed; true when so.
  bool wait_idle(std::chrono::milliseconds timeout);

 private:
  struct LegacySession;
  class Reply;

  void serve_resource_metadata(const std::string& path, http::HttpRequest& request,
                               const std::shared_ptr<http::HttpExchange>& exchange);
  void serve_mcp(const std::string& path, http::HttpRequest& request,
                 const std::shared_ptr<http::HttpExchange>& exchange);
  // POST or DELETE /mcp/<agent>, in steps; each step that refuses answers the exchange itself.
  void handle_mcp(const std::string& agent_id, http::HttpRequest& request,
                  const std::shared_ptr<http::HttpExchange>& exchange);
  // Credentials good for the URL's agent, an agent by that name, a server not shutting down.
  std::optional<AccessDecision> admit(const std::string& agent_id, const http::HttpRequest& request,
                                      const std::shared_ptr<http::HttpExchange>& exchange);
  // POST goes on; DELETE ends a 2025-era session here; anything else is 405.
  bool accept_method(const AccessDecision& access, const http::HttpRequest& request,
                     const std::shared_ptr<http::HttpExchange>& exchange);
  bool accept_media_type(const http::HttpRequest& request,
                         const std::shared_ptr<http::HttpExchange>& exchange);
  // The body as a request; a notification is handled here (202).
  std::optional<Request> read_request(const AccessDecision& access,
                                      const http::HttpRequest& request,
                                      const std::shared_ptr<http::HttpExchange>& exchange);
  // The MCP-Protocol-Version, Mcp-Method and Mcp-Name headers agree with the body.
  bool headers_agree(const http::HttpRequest& request, const Request& rpc,
                     const protocol::MetaOutcome& meta,
                     const std::shared_ptr<http::HttpExchange>& exchange);
  // To the router: with the 2025-era session's revision, or as a 2026-07-28 request.
  void route(const std::string& agent_id, const AccessDecision& access, http::HttpRequest& request,
             Request rpc, bool stateless, const std::shared_ptr<http::HttpExchange>& exchange);
  // initialize answered: a new session for this principal and agent; false when refused (answered).
  bool open_session(const std::string& agent_id, const AccessDecision& access,
                    const CallerContext& negotiated, Reply& reply,
                    const std::shared_ptr<http::HttpExchange>& exchange);
  void handle_delete(const AccessDecision& access, const http::HttpRequest& request,
                     const std::shared_ptr<http::HttpExchange>& exchange);
  // tools/call: the call joins the session's table (nullopt when its id is in use: answered 400)
  // and the endpoint's, metrics follow it, and (2026-07-28) a closed stream cancels it.
  std::optional<CallHooks> start_call(const Request& rpc, const CallerContext& caller,
                                      const std::string& tool, const http::HttpRequest& request,
                                      const std::shared_ptr<http::HttpExchange>& exchange,
                                      const std::shared_ptr<LegacySession>& session,
                                      const std::shared_ptr<Reply>& reply, bool stateless);
  void refuse(const std::shared_ptr<http::HttpExchange>& exchange, int status,
              http::Headers headers, std::string body);
  // Makes room for one more session of `principal` (mutex_ held), ending an idle session if need
  // be. Returns 0, or the HTTP status to refuse with (429: this principal, 503: the server) and
  // why.
  int make_room_locked(const std::string& principal, std::string& why);
  // The session named by the request's Mcp-Session-Id for this principal and agent; else the
  // exchange was answered (400/403/404) and nullptr returned.
  std::shared_ptr<LegacySession> find_session(const AccessDecision& access,
                                              const std::string& agent_id,
                                              const http::HttpRequest& request,
                                              const std::shared_ptr<http::HttpExchange>& exchange);
  void expire_sessions_locked();

  McpService& service_;
  McpRouter router_;
  const AgentTargets agents_;
  const AccessCheck* const access_;
  Metrics& metrics_;
  const HttpEndpointOptions options_;

  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<LegacySession>> sessions_;
  // Every call in flight (legacy or stateless), for shutdown: keyed by its state's address.
  CallTable calls_;
};

}  // namespace execmcp::host::mcp
