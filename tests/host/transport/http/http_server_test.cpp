// HttpServer over real sockets on 127.0.0.1: requests, limits, timeouts, Origin, SSE, peer gone,
// TLS and stop(), driven by a raw TCP client and by curl (the documented limits table is walked
// in http_server_limits_test.cpp).
#include "transport/http/http_server.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <tuple>

#include "test_support.hpp"
#include "transport/http/http_server_fixture.hpp"
#include "transport/http/http_test_client.hpp"

namespace execmcp::host::http {
namespace {

using namespace std::chrono_literals;
using testing_support::echo_handler;
using testing_support::eventually;
using testing_support::HeldExchanges;
using testing_support::Signal;
using tests::http::body_of;
using tests::http::ChildProcess;
using tests::http::RawClient;
using tests::http::run_command;
using tests::http::status_of;

class HttpServerTest : public ::testing::Test {
 protected:
  static HttpServerOptions loopback() {
    HttpServerOptions options;
    options.address = "127.0.0.1";
    options.port = 0;
    return options;
  }
  void start(HttpServerOptions options, HttpHandler handler) {
    server_ = std::make_unique<HttpServer>(std::move(options), std::move(handler));
    server_->start();
    port_ = server_->port();
  }
  void TearDown() override {
    if (server_) server_->stop(0ms);
  }
  std::string url(const std::string& path, const char* scheme = "http") const {
    return std::string(scheme) + "://127.0.0.1:" + std::to_string(port_) + path;
  }

  std::unique_ptr<HttpServer> server_;
  std::uint16_t port_ = 0;
};

TEST_F(HttpServerTest, GetAndPostReachTheHandlerWithLowerCaseHeaders) {
  HeldExchanges held;
  start(loopback(), held.handler());
  std::thread answer([&] {
    for (std::size_t i = 0; i < 2; ++i) {
      auto exchange = held.wait(i);
      if (!exchange) return;
      const auto request = held.request(i);
      const std::string* custom = request.header("x-custom");
      exchange->respond(200, {{"Content-Type", "text/plain"}},
                        request.method + " " + request.target + " " + (custom ? *custom : "-") +
                            " " + request.body);
    }
  });
  const auto get = run_command({"curl", "-sS", "-H", "X-Custom: Yes", url("/mcp/a?x=1")});
  // Over 1 KiB, so curl asks for 100-continue first.
  const std::string big(3000, 'b');
  const auto post = run_command({"curl", "-sS", "-d", big, url("/mcp/b")});
  answer.join();
  EXPECT_EQ(get.exit_code, 0);
  EXPECT_EQ(get.out, "GET /mcp/a?x=1 Yes ");
  EXPECT_EQ(post.exit_code, 0);
  EXPECT_EQ(post.out, "POST /mcp/b - " + big);
  EXPECT_TRUE(held.request(0).remote.starts_with("127.0.0.1:"));
  EXPECT_EQ(server_->stats().total_requests, 2u);
}

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  start(loopback(), echo_handler());
  RawClient client(port_);
  for (int i = 0; i < 3; ++i) {
    const std::string body = "n" + std::to_string(i);
    ASSERT_TRUE(client.send("POST /k HTTP/1.1\r\nHost: localhost\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body));
    const auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(status_of(*response), 200);
    EXPECT_EQ(body_of(*response), "POST /k " + body);
  }
  EXPECT_EQ(server_->stats().total_connections, 1u);
  EXPECT_EQ(server_->stats().total_requests, 3u);
}

TEST_F(HttpServerTest, HeadersAreReadOncePerRequestAndHttp10Closes) {
  start(loopback(), echo_handler());
  RawClient client(port_);
  ASSERT_TRUE(client.send("GET /old HTTP/1.0\r\n\r\n"));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(body_of(*response), "GET /old ");
  EXPECT_TRUE(client.wait_closed());
}

TEST_F(HttpServerTest, BodyOverTheLimitByContentLengthGets413BeforeTheBodyIsSent) {
  auto options = loopback();
  options.max_body_bytes = 1000;
  HeldExchanges held;
  start(options, held.handler());
  RawClient client(port_);
  ASSERT_TRUE(client.send("POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1001\r\n\r\n"));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(status_of(*response), 413);
  EXPECT_NE(body_of(*response).find("1000 bytes"), std::string::npos) << *response;
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(held.count(), 0u);
  EXPECT_EQ(server_->stats().rejected.body_too_large, 1u);
}

TEST_F(HttpServerTest, ChunkedBodyOverTheLimitGets413) {
  auto options = loopback();
  options.max_body_bytes = 1000;
  HeldExchanges held;
  start(options, held.handler());
  RawClient client(port_);
  ASSERT_TRUE(
      client.send("POST /x HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk = "258\r\n" + std::string(600, 'c') + "\r\n";  // 600 bytes
  client.send(chunk);
  client.send(chunk);
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(status_of(*response), 413);
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(held.count(), 0u);
}

// Bodies are read before any handler can check credentials, so their sum over all connections
// is bounded too (else 256 connections x 8 MiB each).
TEST_F(HttpServerTest, BodiesBeyondTheServerWideBudgetGet503UntilOneIsDone) {
  auto options = loopback();
  options.max_body_bytes = 1000;
  options.max_total_body_bytes = 1500;
  HeldExchanges held;
  start(options, held.handler());
  const std::string post = "POST /x HTTP/1.1\r\nHost: localhost\r\n";
  RawClient first(port_);
  first.send(post + "Content-Length: 1000\r\n\r\n" + std::string(500, 'a'));
  ASSERT_TRUE(eventually([&] { return server_->stats().body_bytes_reading == 1000; }));
  for (const std::string& second :
       {post + "Content-Length: 1000\r\n\r\n",
        post + "Transfer-Encoding: chunked\r\n\r\n258\r\n" + std::string(600, 'c') + "\r\n"}) {
    RawClient client(port_);
    client.send(second);
    const auto response = client.read_response();
    ASSERT_TRUE(response) << second;
    EXPECT_EQ(status_of(*response), 503) << *response;
    EXPECT_NE(response->find("Retry-After: 1\r\n"), std::string::npos) << *response;
    EXPECT_NE(body_of(*response).find("1500 bytes"), std::string::npos) << *response;
    EXPECT_TRUE(client.wait_closed());
  }
  EXPECT_EQ(server_->stats().rejected.body_budget, 2u);
  // Within the budget a small body is still read; a finished body frees its share.
  EXPECT_EQ(server_->stats().body_bytes_reading, 1000u);
  RawClient small(port_);
  small.send(post + "Content-Length: 400\r\n\r\n" + std::string(400, 's'));
  ASSERT_TRUE(held.wait(0));
  first.send(std::string(500, 'a'));
  ASSERT_TRUE(held.wait(1));
  RawClient third(port_);
  third.send(post + "Content-Length: 1000\r\n\r\n" + std::string(1000, 'b'));
  ASSERT_TRUE(held.wait(2));
  EXPECT_EQ(held.request(2).body, std::string(1000, 'b'));
  EXPECT_EQ(server_->stats().body_bytes_reading, 0u);
}

TEST_F(HttpServerTest, ChunkedBodyWithinTheLimitIsServed) {
  start(loopback(), echo_handler());
  RawClient client(port_);
  ASSERT_TRUE(
      client.send("POST /c HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: "
                  "chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(body_of(*response), "POST /c abcde");
}

TEST_F(HttpServerTest, HeadersOverTheLimitGet431) {
  auto options = loopback();
  options.max_header_bytes = 2048;
  HeldExchanges held;
  start(options, held.handler());
  RawClient client(port_);
  client.send("GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: " + std::string(4096, 'h') + "\r\n\r\n");
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(status_of(*response), 431);
  EXPECT_NE(body_of(*response).find("2048 bytes"), std::string::npos) << *response;
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(held.count(), 0u);
  EXPECT_EQ(server_->stats().rejected.header_too_large, 1u);
}

// RFC 9112 6.1 and 6.3: a request whose framing two parsers could read differently (a front
// proxy and this server) is refused 400 and the connection closed, so what follows the head can
// never be read as a second (smuggled) request.
TEST_F(HttpServerTest, AmbiguousBodyFramingGets400AndWhatFollowsIsNeverServed) {
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: localhost\r\n\r\n";
  struct Case {
    std::string head;  // after the request line, before the empty line
    std::string body;
  };
  const std::vector<Case> cases = {
      {"Transfer-Encoding: xchunked\r\n", smuggled},
      {"Transfer-Encoding: chunked, identity\r\n", smuggled},
      {"Transfer-Encoding: identity\r\n", smuggled},
      {"Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n" + smuggled},
      {"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n" + smuggled},
      {"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n" + smuggled},
      {"Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n", "hello" + smuggled},
      {"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n" + smuggled},
      {"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "0\r\n\r\n" + smuggled},
      {"Content-Length: 5\r\nContent-Length: 5\r\n", "hello" + smuggled},
      {"Content-Length: 5, 5\r\n", "hello" + smuggled},
      {"Content-Length: 5\r\nContent-Length: 6\r\n", "hello!" + smuggled},
      {"Content-Length: +5\r\n", "hello" + smuggled},
  };
  start(loopback(), echo_handler());
  for (const auto& c : cases) {
    RawClient client(port_);
    client.send("POST /x HTTP/1.1\r\nHost: localhost\r\n" + c.head + "\r\n" + c.body);
    const auto response = client.read_response();
    ASSERT_TRUE(response) << c.head;
    EXPECT_EQ(status_of(*response), 400) << c.head << *response;
    EXPECT_NE(response->find("Connection: close"), std::string::npos) << c.head;
    EXPECT_TRUE(client.wait_closed()) << c.head;
    EXPECT_EQ(client.pending(), "") << c.head;  // no second response
  }
  // An HTTP/1.0 message with Transfer-Encoding has faulty framing (RFC 9112 6.1).
  RawClient old(port_);
  old.send("POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled);
  const auto response = old.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(status_of(*response), 400) << *response;
  EXPECT_TRUE(old.wait_closed());
  EXPECT_EQ(server_->stats().total_requests, 0u);
  EXPECT_EQ(server_->stats().rejected.bad_request, cases.size() + 1);
}

TEST_F(HttpServerTest, ChunkedInAnyCaseWithWhitespaceIsServed) {
  start(loopback(), echo_handler());
  RawClient client(port_);
  for (const char* value : {"chunked", "Chunked", "CHUNKED", " chunked \t"}) {
    client.send(std::string("POST /c HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding:") + value +
                "\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
    const auto response = client.read_response();
    ASSERT_TRUE(response) << value;
    EXPECT_EQ(body_of(*response), "POST /c abc") << value;
  }
}

// The limit is on the whole head: many short lines add up (each is far below the limit).
TEST_F(HttpServerTest, ManyShortHeaderLinesOverTheLimitGet431) {
  start(loopback(), echo_handler());
  std::string head = "GET / HTTP/1.1\r\nHost: localhost\r\n";
  for (int i = 0; i < 4000; ++i) head += "X-" + std::to_string(i % 10) + ": y\r\n";
  ASSERT_GT(head.size(), 16u * 1024);
  RawClient client(port_);
  client.send(head + "\r\n");
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(status_of(*response), 431) << *response;
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(server_->stats().total_requests, 0u);
}

TEST_F(HttpServerTest, ALongRequestLineCountsTowardsTheHeadLimit) {
  auto options = loopback();
  options.max_header_bytes = 4096;
  start(options, echo_handler());
  // Neither part alone reaches the limit; together they pass it.
  RawClient client(port_);
  client.send("GET /" + std::string(3000, 'p') +
              " HTTP/1.1\r\nHost: localhost\r\nX-A: " + std::string(3000, 'h') + "\r\n\r\n");
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(status_of(*response), 431) << *response;
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(server_->stats().total_requests, 0u);
}

TEST_F(HttpServerTest, AHeadSentInPiecesCountsAsAWhole) {
  auto options = loopback();
  options.max_header_bytes = 2048;
  HeldExchanges held;
  start(options, held.handler());
  RawClient client(port_);
  client.send("GET / HTTP/1.1\r\nHost: localhost\r\n");
  std::optional<std::string> response;
  for (int i = 0; i < 400 && !response; ++i) {
    client.send("X-" + std::to_string(i) + ": " + std::string(20, 'v') + "\r\n");
    response = client.read_response(5ms);
  }
  ASSERT_TRUE(response);
  EXPECT_EQ(status_of(*response), 431) << *response;
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(held.count(), 0u);
}

TEST_F(HttpServerTest, MoreHeaderFieldsThanTheLimitGet431) {
  auto options = loopback();
  options.max_header_fields = 10;
  HeldExchanges held;
  start(options, held.handler());
  auto request = [](int fields) {  // Host and fields - 1 more
    std::string head = "GET / HTTP/1.1\r\nHost: localhost\r\n";
    for (int i = 1; i < fields; ++i) head += "X-" + std::to_string(i) + ": y\r\n";
    return head + "\r\n";
  };
  RawClient client(port_);
  client.send(request(10));
  auto exchange = held.wait(0);
  ASSERT_TRUE(exchange);
  exchange->respond(200, {}, "ok");
  const auto served = client.read_response();
  ASSERT_TRUE(served);
  EXPECT_EQ(status_of(*served), 200);
  client.send(request(11));
  const auto refused = client.read_response();
  ASSERT_TRUE(refused);
  EXPECT_EQ(status_of(*refused), 431) << *refused;
  EXPECT_NE(body_of(*refused).find("10 header fields"), std::string::npos) << *refused;
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(held.count(), 1u);
  EXPECT_EQ(server_->stats().rejected.header_too_large, 1u);
}

TEST_F(HttpServerTest, GarbageGets400AndTheConnectionIsClosed) {
  HeldExchanges held;
  start(loopback(), held.handler());
  RawClient client(port_);
  ASSERT_TRUE(client.send("\x01\x02 this is not HTTP\r\n\r\n"));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(status_of(*response), 400);
  EXPECT_NE(response->find("Connection: close"), std::string::npos);
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(held.count(), 0u);
  EXPECT_EQ(server_->stats().rejected.bad_request, 1u);
}

TEST_F(HttpServerTest, SlowlorisClientGets408AndIsClosed) {
  auto options = loopback();
  options.read_timeout = 300ms;
  HeldExchanges held;
  start(options, held.handler());
  RawClient client(port_);
  ASSERT_TRUE(client.send("GET / HTTP/1.1\r\nHost: localhost\r\n"));
  // Keep trickling header bytes: the deadline is for the whole request, not between bytes.
  std::optional<std::string> response;
  for (int i = 0; i < 100 && !response; ++i) {
    client.send("X-" + std::to_string(i) + ": y\r\n");
    response = client.read_response(100ms);
  }
  ASSERT_TRUE(response);
  EXPECT_EQ(status_of(*response), 408);
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(held.count(), 0u);
  EXPECT_EQ(server_->stats().rejected.timeout, 1u);
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionIsClosedAfterTheIdleTimeout) {
  auto options = loopback();
  options.idle_timeout = 200ms;
  start(options, echo_handler());
  RawClient client(port_);
  ASSERT_TRUE(client.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  ASSERT_TRUE(client.read_response());
  EXPECT_TRUE(client.wait_closed());
  EXPECT_TRUE(eventually([&] { return server_->stats().open_connections == 0; }));
}

TEST_F(HttpServerTest, OneConnectionPastTheLimitGets503WithRetryAfterAndIsClosed) {
  auto options = loopback();
  options.max_connections = 2;
  start(options, echo_handler());
  RawClient first(port_);
  RawClient second(port_);
  ASSERT_TRUE(eventually([&] { return server_->stats().open_connections == 2; }));
  RawClient third(port_);
  third.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
  const auto response = third.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(status_of(*response), 503);
  EXPECT_NE(response->find("Retry-After: 1\r\n"), std::string::npos) << *response;
  EXPECT_TRUE(third.wait_closed());
  EXPECT_EQ(server_->stats().rejected.max_connections, 1u);
  // The two within the limit are still served, and a slot freed is usable again.
  first.send("GET /1 HTTP/1.1\r\nHost: localhost\r\n\r\n");
  const auto served = first.read_response();
  ASSERT_TRUE(served);
  EXPECT_EQ(status_of(*served), 200);
  second.close();
  ASSERT_TRUE(eventually([&] { return server_->stats().open_connections == 1; }));
  RawClient fourth(port_);
  fourth.send("GET /4 HTTP/1.1\r\nHost: localhost\r\n\r\n");
  const auto later = fourth.read_response();
  ASSERT_TRUE(later);
  EXPECT_EQ(status_of(*later), 200);
}

TEST_F(HttpServerTest, ForeignOriginGets403NamingItAndTheConfigKey) {
  auto options = loopback();
  options.allowed_origins = {"https://app.example.com"};
  start(options, echo_handler());
  RawClient client(port_);
  client.send("GET / HTTP/1.1\r\nHost: localhost\r\nOrigin: http://evil.example\r\n\r\n");
  const auto refused = client.read_response();
  ASSERT_TRUE(refused);
  EXPECT_EQ(status_of(*refused), 403);
  EXPECT_NE(body_of(*refused).find("http://evil.example"), std::string::npos);
  EXPECT_NE(body_of(*refused).find("server.allowed_origins"), std::string::npos);
  EXPECT_EQ(server_->stats().rejected.origin, 1u);
  // The connection stays usable; loopback, listed and absent origins are served.
  for (const char* origin :
       {"Origin: http://localhost:5173\r\n", "Origin: http://127.0.0.1\r\n",
        "Origin: https://[::1]:8443\r\n", "Origin: https://APP.example.com\r\n", ""}) {
    client.send(std::string("GET / HTTP/1.1\r\nHost: localhost\r\n") + origin + "\r\n");
    const auto served = client.read_response();
    ASSERT_TRUE(served) << origin;
    EXPECT_EQ(status_of(*served), 200) << origin;
  }
}

// DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 reaches a loopback
// listener with same-origin requests that carry no Origin, but its Host says evil.example. The
// check is the server's, before any handler, so no route can forget it.
TEST_F(HttpServerTest, AForeignHostOnALoopbackListenerGets403OnEveryRoute) {
  HeldExchanges held;
  start(loopback(), held.handler());
  const std::string port = std::to_string(port_);
  for (const char* target : {"/health", "/ready", "/metrics", "/mcp/x", "/"}) {
    for (const std::string& host :
         std::vector<std::string>{"evil.example", "evil.example:" + port, "127.0.0.1.nip.io"}) {
      RawClient client(port_);
      client.send(std::string("GET ") + target + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
      const auto response = client.read_response();
      ASSERT_TRUE(response) << target << " " << host;
      EXPECT_EQ(status_of(*response), 403) << target << " " << host << *response;
      EXPECT_NE(body_of(*response).find("'" + host + "'"), std::string::npos) << *response;
      EXPECT_NE(body_of(*response).find("server.allowed_hosts"), std::string::npos) << *response;
      EXPECT_TRUE(client.wait_closed()) << target << " " << host;
    }
  }
  EXPECT_EQ(held.count(), 0u);
  EXPECT_EQ(server_->stats().rejected.host, 15u);
}

// A header value quoted back in an error answer is bounded and escaped: obs-text bytes (which
// HTTP allows in a value) come back as \xNN, never raw.
TEST_F(HttpServerTest, AHeaderValueQuotedInARefusalIsBoundedAndEscaped) {
  HeldExchanges held;
  start(loopback(), held.handler());
  RawClient client(port_);
  client.send("GET / HTTP/1.1\r\nHost: evil\xff\xfe" + std::string(1000, 'x') + "\r\n\r\n");
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(status_of(*response), 403) << *response;
  const std::string body = body_of(*response);
  EXPECT_NE(body.find("'evil\\xff\\xfe"), std::string::npos) << body;
  EXPECT_EQ(body.find('\xff'), std::string::npos) << body;
  EXPECT_LT(body.size(), 512u) << body;
  EXPECT_EQ(held.count(), 0u);
}

TEST_F(HttpServerTest, LoopbackHostsAreServedOnALoopbackListener) {
  start(loopback(), echo_handler());
  const std::string port = std::to_string(port_);
  RawClient client(port_);
  for (const std::string& host :
       std::vector<std::string>{"localhost:" + port, "127.0.0.1:" + port, "localhost", "LocalHost",
                                "127.0.0.53", "[::1]:" + port, "[::1]"}) {
    client.send("GET /ready HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
    const auto response = client.read_response();
    ASSERT_TRUE(response) << host;
    EXPECT_EQ(status_of(*response), 200) << host << *response;
  }
  // curl sends Host: 127.0.0.1:PORT.
  EXPECT_EQ(run_command({"curl", "-sS", url("/ready")}).out, "GET /ready ");
}

TEST_F(HttpServerTest, AnHttp11RequestWithoutOneHostGets400) {
  HeldExchanges held;
  start(loopback(), held.handler());
  for (const char* head :
       {"GET / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nHost: localhost\r\nHost: localhost\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n"}) {
    RawClient client(port_);
    client.send(head);
    const auto response = client.read_response();
    ASSERT_TRUE(response) << head;
    EXPECT_EQ(status_of(*response), 400) << head << *response;
    EXPECT_NE(body_of(*response).find("Host"), std::string::npos) << *response;
    EXPECT_TRUE(client.wait_closed()) << head;
  }
  EXPECT_EQ(held.count(), 0u);
}

TEST_F(HttpServerTest, AllowedHostsAreServedOnAnyListenerAndOthersRefusedWhenListed) {
  auto check = [&](HttpServerOptions options, const std::string& host, int status) {
    start(std::move(options), echo_handler());
    RawClient client(port_);
    client.send("GET / HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
    const auto response = client.read_response();
    server_->stop(0ms);
    ASSERT_TRUE(response) << host;
    EXPECT_EQ(status_of(*response), status) << host << *response;
  };
  auto listed = loopback();
  listed.allowed_hosts = {"MCP.example.com", "other.example:8443"};
  check(listed, "mcp.example.com", 200);
  check(listed, "mcp.example.com:1234", 200);
  check(listed, "other.example:8443", 200);
  check(listed, "other.example:9999", 403);
  check(listed, "other.example", 403);
  check(listed, "evil.example", 403);
  check(listed, "localhost:1", 200);
  // A listener on every address (behind a proxy, say) checks Host only when told to.
  auto any = loopback();
  any.address = "0.0.0.0";
  check(any, "evil.example", 200);
  any.allowed_hosts = {"mcp.example.com"};
  check(any, "evil.example", 403);
  check(any, "mcp.example.com:443", 200);
  check(any, "127.0.0.1", 200);
}

TEST_F(HttpServerTest, SseEventsReachCurlInOrderEachBeforeTheNext) {
  HeldExchanges held;
  start(loopback(), held.handler());
  // curl writes its -i header lines through stdio buffering, so the head is checked at the end
  // (-w) and with the raw client below; -N makes the body unbuffered.
  ChildProcess curl({"curl", "-sS", "-N", "-d", "{}", "-w", "%{content_type}\\n", url("/mcp/a")});
  auto exchange = held.wait(0);
  ASSERT_TRUE(exchange);
  exchange->start_stream({{"Mcp-Session-Id", "s1"}});
  for (int i = 0; i < 5; ++i) {
    // Each event must arrive while the stream is still open: flushed, not buffered to the end.
    const std::string data = "{\"n\":" + std::to_string(i) + "}";
    exchange->send_event(data, i % 2 == 0);
    EXPECT_EQ(curl.read_line(), "event: message");
    EXPECT_EQ(curl.read_line(), "data: " + data);
    EXPECT_EQ(curl.read_line(), "");
  }
  exchange->end_stream();
  EXPECT_EQ(curl.read_all(), "text/event-stream\n");
  EXPECT_EQ(curl.wait(), 0);
  EXPECT_FALSE(exchange->peer_gone());
}

TEST_F(HttpServerTest, SseStreamKeepsTheConnectionForTheNextRequest) {
  HeldExchanges held;
  start(loopback(), held.handler());
  RawClient client(port_);
  client.send("POST /mcp/a HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}");
  auto exchange = held.wait(0);
  ASSERT_TRUE(exchange);
  exchange->start_stream({{"Mcp-Session-Id", "s1"}, {"Content-Type", "text/html"}});
  exchange->send_event("{\"a\":1}", false);
  exchange->end_stream();
  const auto stream = client.read_response();
  ASSERT_TRUE(stream);
  EXPECT_NE(stream->find("Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n"),
            std::string::npos);
  EXPECT_NE(stream->find("Mcp-Session-Id: s1\r\n"), std::string::npos);
  EXPECT_EQ(stream->find("text/html"), std::string::npos);
  EXPECT_NE(stream->find("\r\n\r\n1e\r\nevent: message\ndata: {\"a\":1}\n\n\r\n0\r\n\r\n"),
            std::string::npos)
      << *stream;
  client.send("GET /next HTTP/1.1\r\nHost: localhost\r\n\r\n");
  auto second = held.wait(1);
  ASSERT_TRUE(second);
  second->respond(204, {}, "");
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(status_of(*response), 204);
}

TEST_F(HttpServerTest, PeerGoneFiresWithinASecondWhenTheClientClosesMidHandler) {
  HeldExchanges held;
  start(loopback(), held.handler());
  RawClient client(port_);
  client.send("POST /mcp/a HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}");
  auto exchange = held.wait(0);
  ASSERT_TRUE(exchange);
  Signal gone;
  exchange->on_peer_gone([&] { gone.set(); });
  EXPECT_FALSE(exchange->peer_gone());
  const auto closed_at = std::chrono::steady_clock::now();
  client.close();  // no byte of the response was written yet
  EXPECT_TRUE(gone.wait_for(1s));
  RecordProperty("peer_gone_us",
                 std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::steady_clock::now() - closed_at)
                                    .count()));
  EXPECT_TRUE(exchange->peer_gone());
  // Answering now is harmless, and a callback set late runs at once.
  exchange->respond(200, {}, "late");
  Signal late;
  exchange->on_peer_gone([&] { late.set(); });  // ignored: set at most once
  EXPECT_FALSE(late.wait_for(200ms));
  EXPECT_EQ(server_->stats().peers_gone, 1u);
}

TEST_F(HttpServerTest, PeerGoneCallbackSetAfterTheFactRunsAtOnce) {
  HeldExchanges held;
  start(loopback(), held.handler());
  RawClient client(port_);
  client.send("GET /a HTTP/1.1\r\nHost: localhost\r\n\r\n");
  auto exchange = held.wait(0);
  ASSERT_TRUE(exchange);
  client.close();
  ASSERT_TRUE(eventually([&] { return exchange->peer_gone(); }));
  Signal gone;
  exchange->on_peer_gone([&] { gone.set(); });
  EXPECT_TRUE(gone.wait_for(10s));
}

TEST_F(HttpServerTest, PeerGoneDoesNotFireForAResponseThatEnded) {
  HeldExchanges held;
  start(loopback(), held.handler());
  RawClient client(port_);
  client.send("GET /a HTTP/1.1\r\nHost: localhost\r\n\r\n");
  auto exchange = held.wait(0);
  ASSERT_TRUE(exchange);
  Signal gone;
  exchange->on_peer_gone([&] { gone.set(); });
  exchange->respond(200, {}, "ok");
  ASSERT_TRUE(client.read_response());
  client.close();
  ASSERT_TRUE(eventually([&] { return server_->stats().open_connections == 0; }));
  EXPECT_FALSE(gone.is_set());
  EXPECT_FALSE(exchange->peer_gone());
}

TEST_F(HttpServerTest, AClientThatDoesNotReadItsStreamIsDroppedAndBlocksNoOne) {
  auto options = loopback();
  options.write_timeout = 300ms;
  HeldExchanges held;
  start(options, held.handler());
  RawClient stalled(port_, 4096);
  stalled.send("POST /mcp/a HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}");
  auto exchange = held.wait(0);
  ASSERT_TRUE(exchange);
  Signal gone;
  exchange->on_peer_gone([&] { gone.set(); });
  exchange->start_stream({});
  // 16 MiB of events that may not be dropped: far more than the socket buffers hold, far less
  // than the queue limit, so only the write deadline can end this.
  const std::string data = "\"" + std::string(64 * 1024, 'x') + "\"";
  for (int i = 0; i < 256 && !exchange->peer_gone(); ++i) exchange->send_event(data, false);
  // Meanwhile another client is served.
  RawClient other(port_);
  other.send("GET /other HTTP/1.1\r\nHost: localhost\r\n\r\n");
  auto second = held.wait(1);
  ASSERT_TRUE(second);
  second->respond(200, {}, "ok");
  const auto response = other.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(body_of(*response), "ok");
  EXPECT_TRUE(gone.wait_for(10s));
  EXPECT_TRUE(exchange->peer_gone());
}

TEST_F(HttpServerTest, DroppableEventsAreDroppedForALaggingPeer) {
  auto options = loopback();
  options.max_queued_droppable_bytes = 64 * 1024;
  HeldExchanges held;
  start(options, held.handler());
  RawClient stalled(port_, 4096);
  stalled.send("POST /mcp/a HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}");
  auto exchange = held.wait(0);
  ASSERT_TRUE(exchange);
  exchange->start_stream({});
  const std::string data = "\"" + std::string(64 * 1024, 'x') + "\"";
  for (int i = 0; i < 256; ++i) exchange->send_event(data, true);
  EXPECT_TRUE(eventually([&] { return server_->stats().dropped_events > 0; }));
  EXPECT_FALSE(exchange->peer_gone());
}

TEST_F(HttpServerTest, APeerLeavingTooMuchUnreadIsTreatedAsGone) {
  auto options = loopback();
  options.max_queued_bytes = 1024 * 1024;
  HeldExchanges held;
  start(options, held.handler());
  RawClient stalled(port_, 4096);
  stalled.send("POST /mcp/a HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}");
  auto exchange = held.wait(0);
  ASSERT_TRUE(exchange);
  Signal gone;
  exchange->on_peer_gone([&] { gone.set(); });
  exchange->start_stream({});
  const std::string data = "\"" + std::string(64 * 1024, 'x') + "\"";
  for (int i = 0; i < 256; ++i) exchange->send_event(data, false);
  EXPECT_TRUE(gone.wait_for(10s));
}

TEST_F(HttpServerTest, StopWithAStreamOpenReturnsWithinTheGraceAndTellsTheExchange) {
  HeldExchanges held;
  start(loopback(), held.handler());
  RawClient client(port_);
  client.send("POST /mcp/a HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}");
  auto exchange = held.wait(0);
  ASSERT_TRUE(exchange);
  Signal gone;
  exchange->on_peer_gone([&] { gone.set(); });
  exchange->start_stream({});
  exchange->send_event("{}", false);
  client.read_until("data: {}");
  const auto before = std::chrono::steady_clock::now();
  server_->stop(300ms);
  const auto took = std::chrono::steady_clock::now() - before;
  EXPECT_GE(took, 300ms);  // it waited for the stream ...
  EXPECT_LT(took, 10s);    // ... and not for ever
  EXPECT_TRUE(gone.is_set());
  EXPECT_TRUE(client.wait_closed());
  // After stop() the exchange is inert and stop() is idempotent.
  exchange->send_event("{}", false);
  exchange->end_stream();
  server_->stop(0ms);
}

TEST_F(HttpServerTest, StopLetsAResponseInProgressFinish) {
  HeldExchanges held;
  start(loopback(), held.handler());
  RawClient client(port_);
  RawClient idle(port_);
  client.send("GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n");
  auto exchange = held.wait(0);
  ASSERT_TRUE(exchange);
  std::thread stopper([&] { server_->stop(10s); });
  EXPECT_TRUE(idle.wait_closed());  // an idle connection is closed at once
  exchange->respond(200, {}, "done");
  const auto response = client.read_response();
  stopper.join();
  ASSERT_TRUE(response);
  EXPECT_EQ(body_of(*response), "done");
  EXPECT_NE(response->find("Connection: close"), std::string::npos);
}

TEST_F(HttpServerTest, ConcurrentKeepAliveRequestsAreEachAnsweredExactlyOnce) {
  // Answers from other threads, as the MCP layer does.
  std::mutex mutex;
  std::vector<std::thread> workers;
  start(loopback(), [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    std::lock_guard lock(mutex);
    workers.emplace_back(
        [request = std::move(request), exchange] { exchange->respond(200, {}, request.body); });
  });
  constexpr int kThreads = 8;
  constexpr int kPerThread = 25;
  std::atomic<int> answered{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < kThreads; ++t) {
    clients.emplace_back([&, t] {
      RawClient client(port_);
      for (int i = 0; i < kPerThread; ++i) {
        const std::string id = std::to_string(t) + "-" + std::to_string(i);
        client.send("POST /mcp/a HTTP/1.1\r\nHost: localhost\r\nContent-Length: " +
                    std::to_string(id.size()) + "\r\n\r\n" + id);
        const auto response = client.read_response();
        if (response && body_of(*response) == id) {
          ++answered;
        } else {
          ++wrong;
          ADD_FAILURE() << id << ": " << (response ? *response : "no response");
        }
      }
      // Nothing more arrives: each request got exactly one response.
      if (auto extra = client.read_response(100ms)) {
        ++wrong;
        ADD_FAILURE() << "extra: " << *extra;
      }
    });
  }
  for (auto& client : clients) client.join();
  {
    std::lock_guard lock(mutex);
    for (auto& worker : workers) worker.join();
  }
  EXPECT_EQ(answered, kThreads * kPerThread);
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(server_->stats().total_requests, static_cast<std::uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(server_->stats().total_connections, static_cast<std::uint64_t>(kThreads));
}

TEST_F(HttpServerTest, AThrowingHandlerGets500AndTheServerKeepsServing) {
  start(loopback(), [](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    if (request.target == "/throw") throw std::runtime_error("boom");
    exchange->respond(200, {}, "fine");
  });
  RawClient client(port_);
  client.send("GET /throw HTTP/1.1\r\nHost: localhost\r\n\r\n");
  const auto failed = client.read_response();
  ASSERT_TRUE(failed);
  EXPECT_EQ(status_of(*failed), 500);
  client.send("GET /ok HTTP/1.1\r\nHost: localhost\r\n\r\n");
  const auto served = client.read_response();
  ASSERT_TRUE(served);
  EXPECT_EQ(body_of(*served), "fine");
}

TEST_F(HttpServerTest, HandlerHeadersThatWouldSplitTheResponseAreLeftOut) {
  start(loopback(), [](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
    exchange->respond(200,
                      {{"X-Good", "1"},
                       {"X-Bad", "a\r\nSet-Cookie: x=1"},
                       {"Content-Length", "999"},
                       {"Bad Name", "v"}},
                      "abc");
  });
  RawClient client(port_);
  client.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_NE(response->find("X-Good: 1\r\n"), std::string::npos);
  EXPECT_EQ(response->find("Set-Cookie"), std::string::npos);
  EXPECT_EQ(response->find("999"), std::string::npos);
  EXPECT_EQ(response->find("Bad Name"), std::string::npos);
  EXPECT_EQ(body_of(*response), "abc");
}

TEST_F(HttpServerTest, OneDebugLinePerRequestWithoutSecrets) {
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  auto capture = std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  capture->set_level(spdlog::level::debug);
  spdlog::set_default_logger(capture);
  start(loopback(), echo_handler());
  {
    RawClient client(port_);
    client.send(
        "POST /mcp/a?token=qsecret HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer hsecret\r\n"
        "Content-Length: 7\r\n\r\nbsecret");
    ASSERT_TRUE(client.read_response());
  }
  server_->stop(0ms);
  spdlog::set_default_logger(previous);
  const std::string text = log.str();
  EXPECT_NE(text.find("http POST /mcp/a?... 200 "), std::string::npos) << text;
  EXPECT_NE(text.find("127.0.0.1:"), std::string::npos) << text;
  EXPECT_EQ(text.find("secret"), std::string::npos) << text;
}

TEST_F(HttpServerTest, ABindErrorNamesTheAddress) {
  start(loopback(), echo_handler());
  auto options = loopback();
  options.port = port_;
  HttpServer second(options, echo_handler());
  try {
    second.start();
    FAIL() << "a second bind to the same port succeeded";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("127.0.0.1:" + std::to_string(port_)),
              std::string::npos)
        << error.what();
  }
}

class HttpServerTlsTest : public HttpServerTest {
 protected:
  void SetUp() override {
    cert_ = (dir_.path() / "cert.pem").string();
    key_ = (dir_.path() / "key.pem").string();
    const auto made =
        run_command({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key_,
                     "-out", cert_, "-days", "1", "-subj", "/CN=localhost", "-addext",
                     "subjectAltName=DNS:localhost,IP:127.0.0.1"});
    ASSERT_EQ(made.exit_code, 0);
  }
  tests::TempDir dir_;
  std::string cert_;
  std::string key_;
};

TEST_F(HttpServerTlsTest, CurlRoundTripWithTheServersCertificate) {
  auto options = loopback();
  options.tls_cert_file = cert_;
  options.tls_key_file = key_;
  start(options, echo_handler());
  const auto result =
      run_command({"curl", "-sS", "--cacert", cert_, "-d", "hello", url("/mcp/a", "https")});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "POST /mcp/a hello");
  // Plain HTTP to the TLS port is not served.
  const auto plain = run_command({"curl", "-sS", "-m", "5", url("/mcp/a")});
  EXPECT_NE(plain.exit_code, 0);
  // TLS 1.1 is refused.
  const auto old = run_command(
      {"curl", "-sS", "--cacert", cert_, "--tls-max", "1.1", "-m", "5", url("/", "https")});
  EXPECT_NE(old.exit_code, 0);
}

TEST_F(HttpServerTlsTest, SseOverTls) {
  auto options = loopback();
  options.tls_cert_file = cert_;
  options.tls_key_file = key_;
  HeldExchanges held;
  start(options, held.handler());
  ChildProcess curl({"curl", "-sS", "-N", "--cacert", cert_, url("/mcp/a", "https")});
  auto exchange = held.wait(0);
  ASSERT_TRUE(exchange);
  exchange->start_stream({});
  exchange->send_event("{\"x\":1}", false);
  EXPECT_EQ(curl.read_line(), "event: message");
  EXPECT_EQ(curl.read_line(), "data: {\"x\":1}");
  exchange->end_stream();
  EXPECT_EQ(curl.wait(), 0);
}

TEST_F(HttpServerTlsTest, ABadCertificateOrKeyFileIsNamedAtStart) {
  tests::write_text(dir_.path() / "junk.pem", "not a certificate\n");
  const std::string junk = (dir_.path() / "junk.pem").string();
  const std::string missing = (dir_.path() / "missing.pem").string();
  for (const auto& [cert, key, named] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {junk, key_, junk}, {cert_, junk, junk}, {missing, key_, missing}}) {
    auto options = loopback();
    options.tls_cert_file = cert;
    options.tls_key_file = key;
    HttpServer server(options, echo_handler());
    try {
      server.start();
      ADD_FAILURE() << "started with " << cert << " and " << key;
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find(named), std::string::npos) << error.what();
    }
  }
}

TEST(ParseListenAddress, AcceptsHostPortAndBracketedV6) {
  auto plain = parse_listen_address("0.0.0.0:8000");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->address, "0.0.0.0");
  EXPECT_EQ(plain->port, 8000);
  auto v6 = parse_listen_address("[::1]:0");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->address, "::1");
  EXPECT_EQ(v6->port, 0);
  auto name = parse_listen_address("localhost:65535");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->address, "localhost");
  for (const char* bad : {"8000", ":8000", "host:", "host:65536", "host:8x", "::1:80", "[::1]80"}) {
    EXPECT_FALSE(parse_listen_address(bad)) << bad;
  }
}

}  // namespace
}  // namespace execmcp::host::http
