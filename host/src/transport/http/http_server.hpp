// The HTTP/1.1 server (plain or TLS) that hands each request to an HttpHandler and carries its
// answer back: limits, timeouts, Origin check, SSE framing and peer-gone detection live here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "transport/http/http_exchange.hpp"

namespace execmcp::host::http {

struct HttpServerOptions {
  std::string address = "127.0.0.1";  // an IPv4/IPv6 literal or a name ("localhost")
  std::uint16_t port = 0;             // 0: the system picks one; see HttpServer::port()
  std::size_t io_threads = 2;
  std::size_t max_connections = 256;  // one more is answered 503 with Retry-After: 1 and closed
  // Connections being answered that 503 at once; past it a connection is closed unanswered.
  std::size_t max_rejecting_connections = 64;
  std::size_t max_header_bytes = 16 * 1024;      // request line + headers; past it: 431
  std::size_t max_header_fields = 100;           // header fields (lines); past it: 431
  std::size_t max_body_bytes = 8 * 1024 * 1024;  // past it: 413
  // Request bodies being read, summed over all connections (they are read before any handler
  // checks credentials); past it: 503 with Retry-After: 1. Never less than max_body_bytes.
  std::size_t max_total_body_bytes = 64 * 1024 * 1024;
  std::chrono::milliseconds read_timeout{30'000};   // whole request (and TLS handshake); then 408
  std::chrono::milliseconds idle_timeout{60'000};   // keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{30'000};  // each queued write; then the peer is gone
  // Per exchange: droppable SSE events are dropped while more than this waits to be written ...
  std::size_t max_queued_droppable_bytes = 1024 * 1024;
  // ... and a peer that leaves more than this unread is treated as gone.
  std::size_t max_queued_bytes = 64 * 1024 * 1024;
  // Both set: every connection is TLS (1.2 or later) with this PEM certificate chain and key.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Browser origins allowed besides loopback ones (http(s)://localhost|127.0.0.1|[::1], any
  // port), e.g. "https://app.example.com". A request without Origin is always allowed.
  std::vector<std::string> allowed_origins;
  // Host names allowed besides loopback ones (localhost, 127.x.x.x, [::1], any port), e.g.
  // "mcp.example.com" (any port) or "mcp.example.com:8443". On a loopback listener every request's
  // Host is checked (against DNS rebinding); on another one only when this list is not empty.
  std::vector<std::string> allowed_hosts;
};

// "ADDR:PORT", "[v6]:PORT" or "name:PORT" split into address and port; nullopt when malformed.
struct ListenAddress {
  std::string address;
  std::uint16_t port = 0;
};
[[nodiscard]] std::optional<ListenAddress> parse_listen_address(std::string_view text);

// Counters for /metrics; each is monotonic except open_connections.
struct HttpServerStats {
  std::uint64_t open_connections = 0;
  std::uint64_t total_connections = 0;
  std::uint64_t total_requests = 0;      // requests handed to the handler
  std::uint64_t peers_gone = 0;          // exchanges whose peer left before the response ended
  std::uint64_t dropped_events = 0;      // droppable SSE events dropped for a lagging peer
  std::uint64_t body_bytes_reading = 0;  // bodies being read now (see max_total_body_bytes)
  struct Rejected {
    std::uint64_t max_connections = 0;   // 503
    std::uint64_t header_too_large = 0;  // 431
    std::uint64_t body_too_large = 0;    // 413
    std::uint64_t body_budget = 0;       // 503: max_total_body_bytes being read
    std::uint64_t bad_request = 0;       // 400
    std::uint64_t timeout = 0;           // 408
    std::uint64_t origin = 0;            // 403 (Origin)
    std::uint64_t host = 0;              // 403 (Host)
    std::uint64_t tls_handshake = 0;     // handshake failed or timed out (no HTTP answer)
  } rejected;

  // The rejection counters as (reason, count), reasons as above, for a labelled metric.
  [[nodiscard]] std::vector<std::pair<std::string, std::uint64_t>> rejected_by_reason() const;
};

// Threads: io_threads I/O threads, owned and joined by the server. The handler runs on one of
// them and must not block; each connection's work is serialised on its own strand.
class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();  // stop(0)
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Loads the TLS files, binds, listens and starts the I/O threads. Throws std::runtime_error
  // with a plain message naming the address or file on failure. Call once.
  void start();
  // The bound port (after start()).
  [[nodiscard]] std::uint16_t port() const;

  // Stops accepting, lets responses in progress finish for up to `grace` (idle connections are
  // closed at once), then closes every connection (their exchanges see on_peer_gone) and joins
  // the threads. Idempotent; safe from any thread but an I/O thread.
  void stop(std::chrono::milliseconds grace);

  [[nodiscard]] HttpServerStats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace execmcp::host::http
