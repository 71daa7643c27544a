// The seam between the HTTP server (host/src/transport/http) and what serves its routes (MCP,
// health, metrics): one request in, one response or one event stream out, from any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace execmcp::host::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// One HTTP request as the server hands it over: the body is complete and within the server's
// limits; header names are lower-case.
struct HttpRequest {
  std::string method;  // "GET", "POST", "DELETE", ...
  std::string target;  // path and query as sent, e.g. "/mcp/agent_a"
  Headers headers;     // lower-case names, in order
  std::string body;
  std::string remote;  // "ip:port" of the peer, for logs

  // The first header with this (lower-case) name, or nullptr.
  [[nodiscard]] const std::string* header(std::string_view name) const {
    for (const auto& [key, value] : headers) {
      if (key == name) return &value;
    }
    return nullptr;
  }
};

// The answer to one request. Implemented by the HTTP server; every method is thread safe and
// never blocks on the peer (writes are queued on the connection). Exactly one of respond() or
// start_stream()...end_stream() is used; later calls are ignored.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;

  // A whole response: status, extra headers (content-type included when there is a body), body.
  virtual void respond(int status, Headers headers, std::string body) = 0;

  // Starts a 200 text/event-stream response with these extra headers.
  virtual void start_stream(Headers headers) = 0;
  // One SSE event: "event: message\ndata: <data>\n\n" (data is one JSON line, no newline in it).
  // May be dropped when the peer lags (droppable = true), never otherwise.
  virtual void send_event(std::string data, bool droppable) = 0;
  // Ends the stream (and the response).
  virtual void end_stream() = 0;

  // Runs `callback` once, on a server thread, if the peer goes away (connection closed or reset,
  // a write deadline missed) before the response ended; at once if it already has. Set at most
  // once. The callback must not block.
  virtual void on_peer_gone(std::function<void()> callback) = 0;

  // Whether the peer is gone already.
  [[nodiscard]] virtual bool peer_gone() const = 0;
};

// What serves requests. Called on a server I/O thread: must not block (hand long work to other
// threads and answer through the exchange later).
using HttpHandler = std::function<void(HttpRequest request, std::shared_ptr<HttpExchange>)>;

}  // namespace execmcp::host::http
