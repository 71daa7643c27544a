// The HTTP server's route table (see http_routes.hpp).
#include "transport/http/http_routes.hpp"

#include <exception>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "execmcp/sdk/log_text.hpp"

namespace execmcp::host::http {

RouteTable::RouteTable(std::string not_found_body, Count count)
    : not_found_body_(std::move(not_found_body)), count_(std::move(count)) {}

void RouteTable::add(Route route, Serve serve) {
  for (const auto& [existing, unused] : entries_) {
    if (existing.path == route.path && existing.prefix == route.prefix)
      throw std::logic_error("the HTTP route " + route.path + " is registered twice");
  }
  entries_.emplace_back(std::move(route), std::move(serve));
}

std::vector<Route> RouteTable::routes() const {
  std::vector<Route> out;
  for (const auto& [route, serve] : entries_) out.push_back(route);
  return out;
}

void RouteTable::answer(const std::shared_ptr<HttpExchange>& exchange, int status,
                        std::string body) const {
  if (count_) count_(status);
  exchange->respond(status, {{"content-type", "application/json"}}, std::move(body));
}

void RouteTable::handle(HttpRequest request, std::shared_ptr<HttpExchange> exchange) const {
  const std::string path = request.target.substr(0, request.target.find('?'));
  try {
    for (const auto& [route, serve] : entries_) {
      if (route.prefix ? path.starts_with(route.path) : path == route.path) {
        serve(path, request, exchange);
        return;
      }
    }
    answer(exchange, 404, not_found_body_);
  } catch (const std::exception& e) {
    spdlog::error("http: {} {} failed: {}", sdk::log_text(request.method, 16),
                  sdk::log_text(path, 200), e.what());
    answer(exchange, 500, R"({"error":"internal_error","error_description":"the server failed"})");
  }
}

}  // namespace execmcp::host::http
