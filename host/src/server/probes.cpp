// The server's probes (see probes.hpp).
#include "server/probes.hpp"

#include <utility>

#include <nlohmann/json.hpp>

#include "mcp/json_rpc.hpp"

namespace execmcp::host::server {

using nlohmann::json;

Probes::Probes(mcp::AgentTargets agents, const mcp::AccessCheck* access, mcp::Metrics& metrics)
    : agents_(std::move(agents)), access_(access), metrics_(metrics) {}

void Probes::add_routes(http::RouteTable& routes) {
  routes.add({"/health"}, [this](const std::string&, http::HttpRequest& request,
                                 const std::shared_ptr<http::HttpExchange>& exchange) {
    serve_health(request, exchange);
  });
  routes.add({"/ready"}, [this](const std::string&, http::HttpRequest& request,
                                const std::shared_ptr<http::HttpExchange>& exchange) {
    serve_ready(request, exchange);
  });
  routes.add({"/metrics"}, [this](const std::string&, http::HttpRequest& request,
                                  const std::shared_ptr<http::HttpExchange>& exchange) {
    serve_metrics(request, exchange);
  });
}

bool Probes::is_get(const http::HttpRequest& request,
                    const std::shared_ptr<http::HttpExchange>& exchange) {
  if (request.method == "GET" || request.method == "HEAD") return true;
  metrics_.http_request(405);
  exchange->respond(405, {{"allow", "GET"}}, {});
  return false;
}

void Probes::serve_health(http::HttpRequest& request,
                          const std::shared_ptr<http::HttpExchange>& exchange) {
  if (!is_get(request, exchange)) return;
  metrics_.http_request(200);
  exchange->respond(200, {{"content-type", "application/json"}},
                    mcp::serialize_message(json{{"status", "ok"}}));
}

std::optional<std::set<std::string>> Probes::visible_agents(
    const http::HttpRequest& request) const {
  std::set<std::string> all;
  for (const auto& [id, target] : agents_) all.insert(id);
  if (access_ == nullptr) return all;  // no authentication: /mcp lets anyone use every agent too
  if (request.header("authorization") == nullptr || agents_.empty()) return std::nullopt;
  // One verification, whatever the number of agents: the decision lists what the credential may
  // use (a 403 for this agent still says who it is).
  const mcp::AccessDecision access = access_->check(request, agents_.begin()->first);
  if (!access.allowed && access.status != 403) return std::nullopt;
  std::set<std::string> out;
  for (const auto& id : access.agents) {
    if (id == "*") return all;
    if (all.contains(id)) out.insert(id);
  }
  if (access.allowed) out.insert(agents_.begin()->first);
  if (out.empty()) return std::nullopt;
  return out;
}

void Probes::serve_ready(http::HttpRequest& request,
                         const std::shared_ptr<http::HttpExchange>& exchange) {
  if (!is_get(request, exchange)) return;
  // Side-effect free: each agent's last known state (an atomic), never a start. An agent starts
  // on its first call (or with serve --start-all), not because someone asked whether it could.
  static constexpr const char* kNames[] = {"not started", "starting", "started", "failed"};
  std::size_t counts[4] = {};
  const auto visible = visible_agents(request);
  json states = json::object();
  for (const auto& [id, target] : agents_) {
    const AgentState state = target->state();
    ++counts[static_cast<int>(state)];
    if (visible && visible->contains(id)) states[id] = kNames[static_cast<int>(state)];
  }
  const bool ready = counts[static_cast<int>(AgentState::kFailed)] == 0;
  // Without credentials a fixed vocabulary: no agent id, no path, no error text (the log has it).
  json body{{"status", ready ? "ready" : "not ready"},
            {"agents",
             {{"started", counts[static_cast<int>(AgentState::kStarted)]},
              {"starting", counts[static_cast<int>(AgentState::kStarting)]},
              {"not_started", counts[static_cast<int>(AgentState::kNotStarted)]},
              {"failed", counts[static_cast<int>(AgentState::kFailed)]}}}};
  if (visible) body["agent_states"] = std::move(states);
  const int status = ready ? 200 : 503;
  metrics_.http_request(status);
  exchange->respond(status, {{"content-type", "application/json"}}, mcp::serialize_message(body));
}

void Probes::serve_metrics(http::HttpRequest& request,
                           const std::shared_ptr<http::HttpExchange>& exchange) {
  if (!is_get(request, exchange)) return;
  const auto visible = visible_agents(request);
  std::string text;
  if (!visible) {
    text = metrics_.render_public();
  } else {
    const bool all = visible->size() == agents_.size();
    text =
        metrics_.render([&](const std::string& agent) { return all || visible->contains(agent); });
  }
  metrics_.http_request(200);
  exchange->respond(200, {{"content-type", "text/plain; version=0.0.4; charset=utf-8"}},
                    std::move(text));
}

http::RouteTable server_routes(mcp::HttpEndpoint& endpoint, Probes& probes, mcp::Metrics& metrics) {
  http::RouteTable routes(mcp::HttpEndpoint::not_found_body(),
                          [&metrics](int status) { metrics.http_request(status); });
  probes.add_routes(routes);
  endpoint.add_routes(routes);
  return routes;
}

}  // namespace execmcp::host::server
