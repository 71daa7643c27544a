// The limits table of docs/architecture.md ("HTTP server") against the server: each documented
// limit, set small, does what the table says.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_support.hpp"
#include "transport/http/http_server.hpp"
#include "transport/http/http_server_fixture.hpp"
#include "transport/http/http_test_client.hpp"

namespace execmcp::host::http {
namespace {

using namespace std::chrono_literals;
using testing_support::echo_handler;
using testing_support::eventually;
using testing_support::HeldExchanges;
using tests::http::RawClient;
using tests::http::status_of;
using Probes = std::map<std::string, std::function<void()>>;

// A server with `options` for one probe, stopped when it ends.
struct Running {
  explicit Running(HttpServerOptions options, HttpHandler handler = echo_handler())
      : server(std::move(options), std::move(handler)) {
    server.start();
  }
  ~Running() { server.stop(0ms); }
  // Sends `request` on a new connection: the status of the answer and whether the server then
  // closed the connection (waited for only when `closes`, else false).
  std::pair<int, bool> ask(const std::string& request, bool closes = true) {
    RawClient client(server.port());
    client.send(request);
    const auto response = client.read_response(5s);
    return {response ? status_of(*response) : 0, closes && client.wait_closed(5s)};
  }
  HttpServer server;
};

HttpServerOptions options() {
  HttpServerOptions o;
  o.address = "127.0.0.1";
  return o;
}

const std::string kGet = "GET / HTTP/1.1\r\nHost: localhost\r\n";
const std::pair<int, bool> kRefusedAndClosed400{400, true};

// The limits of one request: its head, its body, its framing, its timing, where it comes from.
void add_request_probes(Probes& probes) {
  probes["max_header_bytes"] = [&] {
    auto o = options();
    o.max_header_bytes = 1024;
    Running run(o);
    std::string head = kGet;
    for (int i = 0; i < 200; ++i) head += "X-A: b\r\n";  // each line short, 1.6 KB in all
    EXPECT_EQ(run.ask(head + "\r\n"), std::make_pair(431, true));
  };
  probes["max_header_fields"] = [&] {
    auto o = options();
    o.max_header_fields = 5;
    Running run(o);
    EXPECT_EQ(run.ask(kGet + "A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", false).first, 200);
    EXPECT_EQ(run.ask(kGet + "A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n"),
              std::make_pair(431, true));
  };
  probes["max_body_bytes"] = [&] {
    auto o = options();
    o.max_body_bytes = 100;
    Running run(o);
    EXPECT_EQ(run.ask("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 101\r\n\r\n"),
              std::make_pair(413, true));
    const std::string chunk = "3c\r\n" + std::string(60, 'c') + "\r\n";
    EXPECT_EQ(run.ask("POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n" +
                      chunk + chunk),
              std::make_pair(413, true));
  };
  probes["max_total_body_bytes"] = [&] {
    auto o = options();
    o.max_body_bytes = 100;
    o.max_total_body_bytes = 150;
    Running run(o);
    RawClient reading(run.server.port());
    reading.send("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n");
    ASSERT_TRUE(eventually([&] { return run.server.stats().body_bytes_reading == 100; }));
    EXPECT_EQ(run.ask("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 51\r\n\r\n"),
              std::make_pair(503, true));
  };
  probes["malformed HTTP"] = [&] {
    Running run(options());
    EXPECT_EQ(run.ask("\x01\x02 not HTTP\r\n\r\n"), kRefusedAndClosed400);
  };
  probes["ambiguous body framing"] = [&] {
    Running run(options());
    EXPECT_EQ(run.ask("POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: xchunked\r\n\r\n"
                      "GET /smuggled HTTP/1.1\r\nHost: localhost\r\n\r\n"),
              kRefusedAndClosed400);
    EXPECT_EQ(run.server.stats().total_requests, 0u);
  };
  probes["read_timeout"] = [&] {
    auto o = options();
    o.read_timeout = 100ms;
    Running run(o);
    EXPECT_EQ(run.ask(kGet), std::make_pair(408, true));  // the head never ends
  };
  probes["idle_timeout"] = [&] {
    auto o = options();
    o.idle_timeout = 100ms;
    Running run(o);
    EXPECT_EQ(run.ask(kGet + "\r\n"), std::make_pair(200, true));  // kept alive, then closed
  };
  probes["write_timeout"] = [&] {
    auto o = options();
    o.write_timeout = 100ms;
    Running run(o, [](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
      exchange->respond(200, {}, std::string(16 * 1024 * 1024, 'x'));
    });
    RawClient reader_that_never_reads(run.server.port(), 4096);
    reader_that_never_reads.send(kGet + "\r\n");
    EXPECT_TRUE(eventually([&] { return run.server.stats().peers_gone == 1; }));
  };
}

// The limits of connections and of what a connection may leave unread.
void add_connection_probes(Probes& probes) {
  probes["max_connections"] = [&] {
    auto o = options();
    o.max_connections = 1;
    Running run(o);
    RawClient first(run.server.port());
    ASSERT_TRUE(eventually([&] { return run.server.stats().open_connections == 1; }));
    EXPECT_EQ(run.ask(kGet + "\r\n"), std::make_pair(503, true));
  };
  probes["max_rejecting_connections"] = [&] {
    auto o = options();
    o.max_connections = 1;
    o.max_rejecting_connections = 1;
    Running run(o);
    RawClient first(run.server.port());
    ASSERT_TRUE(eventually([&] { return run.server.stats().open_connections == 1; }));
    RawClient answered(run.server.port());  // gets its 503 and is kept open by not closing
    const auto response = answered.read_response(5s);
    ASSERT_TRUE(response);
    EXPECT_EQ(status_of(*response), 503);
    RawClient unanswered(run.server.port());
    EXPECT_TRUE(unanswered.wait_closed(5s));
    EXPECT_EQ(unanswered.pending(), "");
    EXPECT_EQ(run.server.stats().rejected.max_connections, 2u);
  };
  probes["max_queued_droppable_bytes / max_queued_bytes"] = [&] {
    auto o = options();
    o.max_queued_droppable_bytes = 64 * 1024;
    o.max_queued_bytes = 512 * 1024;
    HeldExchanges held;
    Running run(o, held.handler());
    RawClient stalled(run.server.port(), 4096);
    stalled.send(kGet + "\r\n");
    auto exchange = held.wait(0);
    ASSERT_TRUE(exchange);
    exchange->start_stream({});
    const std::string data = "\"" + std::string(64 * 1024, 'x') + "\"";
    for (int i = 0; i < 32; ++i) exchange->send_event(data, true);
    EXPECT_TRUE(eventually([&] { return run.server.stats().dropped_events > 0; }));
    EXPECT_FALSE(exchange->peer_gone());
    for (int i = 0; i < 32; ++i) exchange->send_event(data, false);
    EXPECT_TRUE(eventually([&] { return exchange->peer_gone(); }));
  };
  probes["allowed_origins"] = [&] {
    Running run(options());
    EXPECT_EQ(run.ask(kGet + "Origin: http://evil.example\r\n\r\n", false).first, 403);
  };
  probes["allowed_hosts"] = [&] {
    Running run(options());
    EXPECT_EQ(run.ask("GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n"), std::make_pair(403, true));
  };
}

// The limits table of docs/architecture.md ("HTTP server"), one row per limit, keyed by its
// option (or, for a row without one, its first column).
std::vector<std::string> documented_limits() {
  const auto doc =
      tests::read_text(std::filesystem::path(EXECMCP_SOURCE_DIR) / "docs" / "architecture.md");
  const auto section = doc.find("\n## HTTP server\n");
  const auto table = doc.find("\n| limit | option |", section);
  if (section == std::string::npos || table == std::string::npos) return {};
  std::vector<std::string> keys;
  std::istringstream lines(doc.substr(table + 1));
  std::string line;
  std::getline(lines, line);  // header
  std::getline(lines, line);  // |---|
  while (std::getline(lines, line) && line.starts_with("|")) {
    std::vector<std::string> cells;
    std::istringstream row(line.substr(1));
    std::string cell;
    while (std::getline(row, cell, '|')) {
      cell.erase(std::remove(cell.begin(), cell.end(), '`'), cell.end());
      while (!cell.empty() && cell.front() == ' ') cell.erase(0, 1);
      while (!cell.empty() && cell.back() == ' ') cell.pop_back();
      cells.push_back(cell);
    }
    if (cells.size() >= 2) keys.push_back(cells[1].empty() ? cells[0] : cells[1]);
  }
  return keys;
}

// Walks every documented limit with a small setting and checks what the table says happens. A
// row without a probe fails, so a limit cannot be documented without being shown to hold.
TEST(HttpServerLimits, EveryDocumentedLimitHolds) {
  Probes probes;
  add_request_probes(probes);
  add_connection_probes(probes);

  const auto documented = documented_limits();
  ASSERT_GE(documented.size(), 10u) << "the limits table of docs/architecture.md was not found";
  for (const auto& key : documented) {
    SCOPED_TRACE(key);
    const auto probe = probes.find(key);
    if (probe == probes.end()) {
      ADD_FAILURE() << "docs/architecture.md documents the HTTP limit '" << key
                    << "' but this test has no probe showing it holds; add one";
      continue;
    }
    probe->second();
  }
  for (const auto& [key, probe] : probes) {
    EXPECT_NE(std::find(documented.begin(), documented.end(), key), documented.end())
        << "the limit '" << key << "' is probed but not in the limits table";
  }
}

}  // namespace
}  // namespace execmcp::host::http
