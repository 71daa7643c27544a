// The HTTP server's route table: which handler serves a path. The MCP endpoint and the server's
// probes register their routes here side by side; a path nobody registered is 404.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "transport/http/http_exchange.hpp"

namespace execmcp::host::http {

// A path a handler serves: `path` itself, or (prefix) every path that starts with it.
struct Route {
  std::string path;
  bool prefix = false;
};

// Filled once while the server is put together, then only read (from every I/O thread).
class RouteTable {
 public:
  // `path` is the request's target without its query.
  using Serve = std::function<void(const std::string& path, HttpRequest& request,
                                   const std::shared_ptr<HttpExchange>& exchange)>;
  // Told every status the table answers itself (404, 500), e.g. for /metrics.
  using Count = std::function<void(int status)>;

  // `not_found_body`: the JSON body of a 404 (it says where things are).
  explicit RouteTable(std::string not_found_body, Count count = {});

  // Adds a route, matched after those added before it. Throws std::logic_error when the same
  // route is there already.
  void add(Route route, Serve serve);
  // Every route, in match order: a test walks them all without credentials, because whatever a
  // route does for a stranger must stay cheap, bounded and away from the backends.
  [[nodiscard]] std::vector<Route> routes() const;

  // The HttpHandler: the first route that matches, else 404; a handler that throws is 500.
  // Never blocks beyond what the handler does (handlers must not block).
  void handle(HttpRequest request, std::shared_ptr<HttpExchange> exchange) const;

 private:
  void answer(const std::shared_ptr<HttpExchange>& exchange, int status, std::string body) const;

  const std::string not_found_body_;
  const Count count_;
  std::vector<std::pair<Route, Serve>> entries_;
};

}  // namespace execmcp::host::http
