// The shared HTTP server put together (see http_serve.hpp).
#include "server/http_serve.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "agent/lazy_agent.hpp"
#include "auth/authenticator.hpp"
#include "common/signal_service.hpp"
#include "http/http_server.hpp"
#include "mcp/http_endpoint.hpp"
#include "mcp/mcp_service.hpp"
#include "mcp/metrics.hpp"

namespace execmcp::host::server {
namespace {

bool is_loopback(const std::string& address) {
  return address == "localhost" || address == "::1" || address.starts_with("127.");
}

std::string url_of(const http::ListenAddress& listen, std::uint16_t port, bool tls) {
  const std::string host =
      listen.address.find(':') != std::string::npos ? "[" + listen.address + "]" : listen.address;
  return std::string(tls ? "https" : "http") + "://" + host + ":" + std::to_string(port);
}

}  // namespace

int serve_http(const Config& config, const std::vector<ConfiguredAgent*>& agents,
               const cli::ServeRequest& request) {
  const auto listen = http::parse_listen_address(request.http_address);
  if (!listen)
    throw std::runtime_error("--http needs ADDR:PORT, got '" + request.http_address + "'");
  const ServerConfig server_config = config.server.value_or(ServerConfig{});
  auth::Authenticator authenticator(server_config);
  if (!authenticator.enabled()) {
    if (!is_loopback(listen->address) && !request.insecure_no_auth) {
      throw std::runtime_error(
          "refusing to serve on " + request.http_address +
          " without authentication: anyone who reaches it could run commands as these agents. "
          "Add server.tokens (or server.oauth) to the config, serve on 127.0.0.1 behind an "
          "authenticating proxy, or pass --insecure-no-auth if the network is trusted");
    }
    if (request.insecure_no_auth && !is_loopback(listen->address)) {
      spdlog::warn(
          "execmcp: --insecure-no-auth: serving {} WITHOUT AUTHENTICATION; anyone who "
          "can reach it can run commands as every agent",
          request.http_address);
    }
  }

  mcp::ServiceOptions service_options;
  service_options.server_version = request.server_version;
  service_options.max_concurrent_calls = request.max_concurrent;
  if (request.max_queued_calls) service_options.max_queued_calls = *request.max_queued_calls;
  if (request.max_calls_per_agent)
    service_options.max_calls_per_agent = *request.max_calls_per_agent;
  mcp::McpService service(service_options);

  std::vector<std::unique_ptr<LazyAgent>> lazy;
  std::map<std::string, mcp::HttpEndpoint::AgentEntry> entries;
  for (ConfiguredAgent* agent : agents) {
    lazy.push_back(std::make_unique<LazyAgent>(*agent));
    LazyAgent* entry = lazy.back().get();
    // /ready reads the state and starts nothing: an agent starts on its first call.
    entries[agent->id()] = {entry, [entry] { return entry->state(); }};
  }

  mcp::Metrics metrics;
  metrics.add_gauge("execmcp_agent_started", "1 when the agent's backend is started.", "agent",
                    [&lazy] {
                      std::vector<std::pair<std::string, double>> out;
                      for (const auto& agent : lazy)
                        out.emplace_back(agent->id(), agent->started());
                      return out;
                    });
  metrics.add_gauge("execmcp_agents", "Agents by the state of their backend.", "state", [&lazy] {
    static constexpr const char* kNames[] = {"not_started", "starting", "started", "failed"};
    double counts[4] = {};
    for (const auto& agent : lazy) ++counts[static_cast<int>(agent->state())];
    std::vector<std::pair<std::string, double>> out;
    for (int i = 0; i < 4; ++i) out.emplace_back(kNames[i], counts[i]);
    return out;
  });
  metrics.add_gauge("execmcp_containers_owned",
                    "Containers this server owns (one per started Docker agent).", "agent",
                    [&lazy, &agents] {
                      std::vector<std::pair<std::string, double>> out;
                      for (std::size_t i = 0; i < lazy.size(); ++i) {
                        const bool docker = agents[i]->backend_name().starts_with("docker");
                        out.emplace_back(lazy[i]->id(), docker && lazy[i]->started() ? 1 : 0);
                      }
                      return out;
                    });

  mcp::HttpEndpointOptions endpoint_options;
  if (request.max_message_bytes) endpoint_options.limits.max_bytes = *request.max_message_bytes;
  if (request.max_message_values) endpoint_options.limits.max_values = *request.max_message_values;
  const bool tls = !request.tls_cert_file.empty();
  std::string public_url = server_config.public_url;
  if (!authenticator.resource_metadata_url().empty()) {
    endpoint_options.protected_resource_metadata =
        authenticator.protected_resource_metadata(public_url);
  }
  mcp::Authorize authorize;
  if (authenticator.enabled()) {
    authorize = [&authenticator](const http::HttpRequest& http_request,
                                 const std::string& agent_id) {
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
      auth::AuthDecision decision = authenticator.authorize(header, agent_id);
      access.allowed = decision.allowed;
      access.principal = decision.principal.name;
      access.status = decision.status;
      access.headers = std::move(decision.headers);
      access.body = std::move(decision.body);
      access.agents = std::move(decision.principal.agents);
      return access;
    };
  }
  mcp::HttpEndpoint endpoint(service, std::move(entries), authorize, metrics, endpoint_options);

  http::HttpServerOptions http_options;
  http_options.address = listen->address;
  http_options.port = listen->port;
  if (request.max_connections) http_options.max_connections = *request.max_connections;
  http_options.max_body_bytes = endpoint_options.limits.max_bytes;
  http_options.tls_cert_file = request.tls_cert_file;
  http_options.tls_key_file = request.tls_key_file;
  http_options.allowed_origins = server_config.allowed_origins;
  http_options.allowed_hosts = server_config.allowed_hosts;
  http::HttpServer http_server(http_options, [&endpoint](http::HttpRequest http_request,
                                                         std::shared_ptr<http::HttpExchange> ex) {
    endpoint.handle(std::move(http_request), std::move(ex));
  });
  metrics.add_gauge("execmcp_http_connections_open", "HTTP connections open.", "server",
                    [&http_server] {
                      return std::vector<std::pair<std::string, double>>{
                          {"http", static_cast<double>(http_server.stats().open_connections)}};
                    });

  SignalService signals(SignalService::Mode::kForward, SignalService::BrokenPipe::kFailWrite);
  http_server.start();
  spdlog::info("execmcp: listening on {}", url_of(*listen, http_server.port(), tls));
  for (ConfiguredAgent* agent : agents) {
    spdlog::info("execmcp: agent '{}' at {}/mcp/{}", agent->id(),
                 url_of(*listen, http_server.port(), tls), agent->id());
  }
  std::thread watcher([&] {
    signals.watch([&] {
      endpoint.cancel_all();  // new requests get 503; calls in flight are cancelled
      signals.wake();
    });
  });
  watcher.join();
  // Calls were cancelled: give their answers a moment to reach the clients, then close.
  endpoint.wait_idle(std::chrono::seconds(10));
  http_server.stop(std::chrono::seconds(2));
  service.shutdown();
  spdlog::info("execmcp: HTTP server stopped");
  return 0;
}

}  // namespace execmcp::host::server
