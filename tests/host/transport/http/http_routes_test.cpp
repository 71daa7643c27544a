// The HTTP server's route table: first match wins, a route registered twice is refused, and what
// no route serves (or a handler that throws) is answered by the table itself and counted.
#include "transport/http/http_routes.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace execmcp::host::http {
namespace {

// Records the one response a handler gives.
class RecordingExchange final : public HttpExchange {
 public:
  void respond(int status, Headers headers, std::string body) override {
    this->status = status;
    this->headers = std::move(headers);
    this->body = std::move(body);
  }
  void start_stream(Headers) override {}
  void send_event(std::string, bool) override {}
  void end_stream() override {}
  void on_peer_gone(std::function<void()>) override {}
  [[nodiscard]] bool peer_gone() const override { return false; }

  int status = 0;
  Headers headers;
  std::string body;
};

std::shared_ptr<RecordingExchange> get(const RouteTable& routes, const std::string& target) {
  HttpRequest request;
  request.method = "GET";
  request.target = target;
  auto exchange = std::make_shared<RecordingExchange>();
  routes.handle(request, exchange);
  return exchange;
}

RouteTable::Serve answer_with(int status, std::vector<std::string>* paths = nullptr) {
  return [status, paths](const std::string& path, HttpRequest&,
                         const std::shared_ptr<HttpExchange>& exchange) {
    if (paths != nullptr) paths->push_back(path);
    exchange->respond(status, {}, {});
  };
}

TEST(RouteTable, ExactAndPrefixRoutesMatchInOrderWithoutTheQuery) {
  std::vector<int> counted;
  RouteTable routes(R"({"error":"not_found"})", [&](int status) { counted.push_back(status); });
  std::vector<std::string> paths;
  routes.add({"/health"}, answer_with(200, &paths));
  routes.add({"/mcp/", true}, answer_with(202, &paths));
  routes.add({"/mcp/special"}, answer_with(299));  // after the prefix: never reached
  EXPECT_EQ(get(routes, "/health?verbose=1")->status, 200);
  EXPECT_EQ(get(routes, "/mcp/agent_a?x=/health")->status, 202);
  EXPECT_EQ(get(routes, "/mcp/special")->status, 202);
  EXPECT_EQ(paths, (std::vector<std::string>{"/health", "/mcp/agent_a", "/mcp/special"}));
  const auto missing = get(routes, "/healthz");
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body, R"({"error":"not_found"})");
  EXPECT_EQ(counted, std::vector<int>{404}) << "the table counts only what it answers itself";
  ASSERT_EQ(routes.routes().size(), 3u);
  EXPECT_EQ(routes.routes()[1].path, "/mcp/");
  EXPECT_TRUE(routes.routes()[1].prefix);
}

TEST(RouteTable, ARouteRegisteredTwiceIsRefused) {
  RouteTable routes("{}");
  routes.add({"/ready"}, answer_with(200));
  EXPECT_THROW(routes.add({"/ready"}, answer_with(200)), std::logic_error);
  routes.add({"/ready", true}, answer_with(200));  // the prefix route is another route
  EXPECT_EQ(routes.routes().size(), 2u);
}

TEST(RouteTable, AHandlerThatThrowsIs500) {
  std::vector<int> counted;
  RouteTable routes("{}", [&](int status) { counted.push_back(status); });
  routes.add({"/boom"}, [](const std::string&, HttpRequest&, const std::shared_ptr<HttpExchange>&) {
    throw std::runtime_error("failed");
  });
  const auto exchange = get(routes, "/boom");
  EXPECT_EQ(exchange->status, 500);
  EXPECT_NE(exchange->body.find("internal_error"), std::string::npos);
  EXPECT_EQ(counted, std::vector<int>{500});
}

}  // namespace
}  // namespace execmcp::host::http
