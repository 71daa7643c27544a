// The shared HTTP server put together (see http_serve.hpp).
#include "server/http_serve.hpp"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <tuple>

#include <spdlog/spdlog.h>

#include "auth/authenticator.hpp"
#include "common/signal_service.hpp"
#include "mcp/mcp_service.hpp"
#include "mcp/metrics.hpp"
#include "server/probes.hpp"
#include "transport/http/http_endpoint.hpp"
#include "transport/http/http_server.hpp"
#include "transport/stdio/session.hpp"

namespace execmcp::host::server {
namespace {

using Gauge = std::vector<std::pair<std::string, double>>;

bool is_loopback(const std::string& address) {
  return address == "localhost" || address == "::1" || address.starts_with("127.");
}

std::string url_of(const http::ListenAddress& listen, std::uint16_t port, bool tls) {
  const std::string host =
      listen.address.find(':') != std::string::npos ? "[" + listen.address + "]" : listen.address;
  return std::string(tls ? "https" : "http") + "://" + host + ":" + std::to_string(port);
}

// No authentication is allowed on a loopback address, or anywhere with --insecure-no-auth.
void check_unauthenticated(const http::ListenAddress& listen, const ServeOptions& options) {
  if (!is_loopback(listen.address) && !options.insecure_no_auth) {
    throw std::runtime_error(
        "refusing to serve on " + options.http_address +
        " without authentication: anyone who reaches it could run commands as these agents. "
        "Add server.tokens (or server.oauth) to the config, serve on 127.0.0.1 behind an "
        "authenticating proxy, or pass --insecure-no-auth if the network is trusted");
  }
  if (options.insecure_no_auth && !is_loopback(listen.address)) {
    spdlog::warn(
        "execmcp: --insecure-no-auth: serving {} WITHOUT AUTHENTICATION; anyone who "
        "can reach it can run commands as every agent",
        options.http_address);
  }
}

// Each MCP request's credentials, checked by the authenticator for the agent it names.
class CredentialCheck final : public mcp::AccessCheck {
 public:
  explicit CredentialCheck(const auth::Authenticator& authenticator)
      : authenticator_(authenticator) {}

  mcp::AccessDecision check(const http::HttpRequest& http_request,
                            const std::string& agent_id) const override {
    mcp::AccessDecision access;
    std::size_t count = 0;
    std::string header;
    for (const auto& [name, value] : http_request.headers) {
      if (name == "authorization") {
        ++count;
        header = value;
      }
    }
    if (count > 1) {
      access.status = 400;
      access.body =
          R"({"error":"invalid_request","error_description":"send one Authorization header"})";
      return access;
    }
    auth::AuthDecision decision = authenticator_.authorize(header, agent_id);
    access.allowed = decision.allowed;
    access.principal = decision.principal.name;
    access.user_key = decision.principal.user_key;
    access.status = decision.status;
    access.headers = std::move(decision.headers);
    access.body = std::move(decision.body);
    access.agents = std::move(decision.principal.agents);
    return access;
  }

 private:
  const auth::Authenticator& authenticator_;
};

// What each agent id resolves to, for the endpoint and the probes (which read only states).
mcp::AgentTargets endpoint_agents(const AgentRegistry& agents) {
  mcp::AgentTargets targets;
  for (std::size_t i = 0; i < agents.size(); ++i)
    targets[agents.target(i).id()] = &agents.target(i);
  return targets;
}

// One gauge per agent from each target's report (read when /metrics is served).
template <typename Value>
mcp::Metrics::Gauge per_target(const AgentRegistry& agents,
                               std::function<std::optional<Value>(const TargetReport&)> read) {
  return [&agents, read = std::move(read)] {
    Gauge out;
    for (std::size_t i = 0; i < agents.size(); ++i) {
      const AgentTarget& target = agents.target(i);
      if (const std::optional<Value> value = read(target.report()))
        out.emplace_back(target.id(), static_cast<double>(*value));
    }
    return out;
  };
}

// Per-user agents: sandboxes by state, and what their timers and users did since the start.
void add_sandbox_gauges(mcp::Metrics& metrics, const AgentRegistry& agents) {
  bool any = false;
  for (std::size_t i = 0; i < agents.size(); ++i) any = any || agents.target(i).traits().per_user;
  if (!any) return;
  using Count = std::size_t SandboxCounts::*;
  for (const auto& [name, help, field] :
       {std::tuple{"execmcp_sandboxes_warm", "Warm sandboxes ready for new users.",
                   Count{&SandboxCounts::warm}},
        std::tuple{"execmcp_sandboxes_running", "Users' sandboxes running (or being made).",
                   Count{&SandboxCounts::running}},
        std::tuple{"execmcp_sandboxes_stopped", "Users' sandboxes stopped when idle.",
                   Count{&SandboxCounts::stopped}}}) {
    metrics.add_gauge(
        name, help, "agent", per_target<std::size_t>(agents, [field](const TargetReport& report) {
          return report.sandboxes ? std::optional((*report.sandboxes).*field) : std::nullopt;
        }));
  }
  using Event = std::uint64_t SandboxEvents::*;
  for (const auto& [name, help, field] :
       {std::tuple{"execmcp_sandbox_claims_total", "Warm sandboxes claimed by new users.",
                   Event{&SandboxEvents::claims}},
        std::tuple{"execmcp_sandbox_creates_total",
                   "Sandboxes made for a user's call (no warm one was ready, or a returning user).",
                   Event{&SandboxEvents::creates}},
        std::tuple{"execmcp_sandbox_starts_total", "Stopped sandboxes started again by a call.",
                   Event{&SandboxEvents::starts}},
        std::tuple{"execmcp_sandbox_stops_total", "Sandboxes stopped after idle_stop.",
                   Event{&SandboxEvents::stops}},
        std::tuple{"execmcp_sandbox_removals_total", "Sandboxes removed after idle_remove.",
                   Event{&SandboxEvents::removals}},
        std::tuple{"execmcp_sandbox_refusals_total", "New users refused at max_users.",
                   Event{&SandboxEvents::refusals}}}) {
    metrics.add_counter(
        name, help, "agent", per_target<std::uint64_t>(agents, [field](const TargetReport& report) {
          return report.sandbox_events ? std::optional((*report.sandbox_events).*field)
                                       : std::nullopt;
        }));
  }
}

void add_agent_gauges(mcp::Metrics& metrics, const AgentRegistry& agents) {
  // An agent with one backend; each user of a per-user agent has their own (not counted here).
  metrics.add_gauge("execmcp_agent_started", "1 when the agent's backend is started.", "agent",
                    per_target<bool>(agents, [](const TargetReport& report) {
                      return report.backend ? std::optional(*report.backend == AgentState::kStarted)
                                            : std::nullopt;
                    }));
  metrics.add_gauge("execmcp_agents", "Agents by the state of their backend.", "state", [&agents] {
    static constexpr const char* kNames[] = {"not_started", "starting", "started", "failed"};
    double counts[4] = {};
    for (std::size_t i = 0; i < agents.size(); ++i)
      if (const auto backend = agents.target(i).report().backend)
        ++counts[static_cast<int>(*backend)];
    Gauge out;
    for (int i = 0; i < 4; ++i) out.emplace_back(kNames[i], counts[i]);
    return out;
  });
  metrics.add_gauge("execmcp_containers_owned",
                    "Containers this server owns (one per started Docker agent).", "agent",
                    per_target<std::size_t>(agents, [](const TargetReport& report) {
                      return std::optional(report.containers_owned);
                    }));
}

mcp::ServiceOptions service_options(const ServeOptions& options) {
  mcp::ServiceOptions service = mcp::service_options(options.session);
  service.max_calls_per_agent = options.max_calls_per_agent;
  return service;
}

http::HttpServerOptions http_options(const http::ListenAddress& listen,
                                     const ServerConfig& server_config,
                                     const ServeOptions& options) {
  http::HttpServerOptions http_options;
  http_options.address = listen.address;
  http_options.port = listen.port;
  if (options.max_connections) http_options.max_connections = *options.max_connections;
  http_options.max_body_bytes = options.session.limits.max_bytes;
  http_options.tls_cert_file = options.tls_cert_file;
  http_options.tls_key_file = options.tls_key_file;
  http_options.allowed_origins = server_config.allowed_origins;
  http_options.allowed_hosts = server_config.allowed_hosts;
  return http_options;
}

// Until SIGINT/SIGTERM: then new requests get 503 and the calls in flight are cancelled.
void wait_for_signal(const SignalService& signals, mcp::HttpEndpoint& endpoint) {
  std::thread watcher([&] {
    signals.watch([&] {
      endpoint.cancel_all();
      signals.wake();
    });
  });
  watcher.join();
}

}  // namespace

int serve_http(const Config& config, AgentRegistry& agents, const ServeOptions& options) {
  const auto listen = http::parse_listen_address(options.http_address);
  if (!listen)
    throw std::runtime_error("--http needs ADDR:PORT, got '" + options.http_address + "'");
  const ServerConfig server_config = config.server.value_or(ServerConfig{});
  const auth::Authenticator authenticator(server_config);
  if (!authenticator.enabled()) check_unauthenticated(*listen, options);

  mcp::McpService service(service_options(options));
  mcp::Metrics metrics;
  add_agent_gauges(metrics, agents);
  add_sandbox_gauges(metrics, agents);
  mcp::HttpEndpointOptions endpoint_options;
  endpoint_options.limits = options.session.limits;
  if (!authenticator.resource_metadata_url().empty()) {
    endpoint_options.protected_resource_metadata =
        authenticator.protected_resource_metadata(server_config.public_url);
  }
  const CredentialCheck credentials(authenticator);
  const mcp::AccessCheck* access = authenticator.enabled() ? &credentials : nullptr;
  const mcp::AgentTargets targets = endpoint_agents(agents);
  mcp::HttpEndpoint endpoint(service, targets, access, metrics, endpoint_options);
  // /health, /ready and /metrics are the server's, beside the endpoint's /mcp/ routes.
  Probes probes(targets, access, metrics);
  const http::RouteTable routes = server_routes(endpoint, probes, metrics);
  http::HttpServer http_server(
      http_options(*listen, server_config, options),
      [&routes](http::HttpRequest request, std::shared_ptr<http::HttpExchange> exchange) {
        routes.handle(std::move(request), std::move(exchange));
      });
  metrics.add_gauge(
      "execmcp_http_connections_open", "HTTP connections open.", "server", [&http_server] {
        return Gauge{{"http", static_cast<double>(http_server.stats().open_connections)}};
      });

  const SignalService signals(SignalService::Mode::kForward, SignalService::BrokenPipe::kFailWrite);
  http_server.start();
  agents.start_background();
  const bool tls = !options.tls_cert_file.empty();
  const std::string url = url_of(*listen, http_server.port(), tls);
  spdlog::info("execmcp: listening on {}", url);
  for (const std::string& id : agents.ids())
    spdlog::info("execmcp: agent '{}' at {}/mcp/{}", id, url, id);
  wait_for_signal(signals, endpoint);
  // Calls were cancelled: give their answers a moment to reach the clients, then close.
  endpoint.wait_idle(std::chrono::seconds(10));
  http_server.stop(std::chrono::seconds(2));
  service.shutdown();
  spdlog::info("execmcp: HTTP server stopped");
  return 0;
}

}  // namespace execmcp::host::server
