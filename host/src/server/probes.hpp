// The server's probes, /health, /ready and /metrics, registered on the HTTP server's route table
// beside the MCP endpoint. They run on an I/O thread and stay side-effect free and bounded: each
// agent's state is read from an atomic (never a start, never a wait on a backend), and without
// credentials they say only a fixed vocabulary (counts, no agent ids, no error text).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "mcp/metrics.hpp"
#include "transport/http/http_endpoint.hpp"
#include "transport/http/http_routes.hpp"

namespace execmcp::host::server {

class Probes {
 public:
  // `agents`: the endpoint's agents (only their states are read); `access`: the endpoint's
  // check, asked only which agents a request's credentials may see (null: no authentication).
  Probes(mcp::AgentTargets agents, const mcp::AccessCheck* access, mcp::Metrics& metrics);

  // Adds /health, /ready and /metrics to `routes`. The probes must outlive the table's use.
  void add_routes(http::RouteTable& routes);

 private:
  // GET or HEAD; anything else is answered 405 here (the probes take nothing else).
  bool is_get(const http::HttpRequest& request,
              const std::shared_ptr<http::HttpExchange>& exchange);
  void serve_health(http::HttpRequest& request,
                    const std::shared_ptr<http::HttpExchange>& exchange);
  void serve_ready(http::HttpRequest& request, const std::shared_ptr<http::HttpExchange>& exchange);
  void serve_metrics(http::HttpRequest& request,
                     const std::shared_ptr<http::HttpExchange>& exchange);
  // The agents whose details (ids, states, principals) this request may see: those its valid
  // credentials may use, every agent when the server has no authentication, else none (nullopt:
  // the fixed vocabulary only).
  std::optional<std::set<std::string>> visible_agents(const http::HttpRequest& request) const;

  const mcp::AgentTargets agents_;
  const mcp::AccessCheck* const access_;
  mcp::Metrics& metrics_;
};

// The HTTP server's route table as serve --http has it: the MCP endpoint's routes and the probes'
// side by side, 404 elsewhere (each answer the table gives itself counted in `metrics`).
[[nodiscard]] http::RouteTable server_routes(mcp::HttpEndpoint& endpoint, Probes& probes,
                                             mcp::Metrics& metrics);

}  // namespace execmcp::host::server
