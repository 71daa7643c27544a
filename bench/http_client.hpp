// A minimal HTTP/1.1 keep-alive client over POSIX sockets, and an `execmcp serve --http` child
// process: enough to time MCP 2026-07-28 stateless tools/call requests (execmcp_bench) and to
// flood the server with plain GETs and malformed requests (execmcp_load_bench).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace execmcp::bench {

// `execmcp serve --config F --http 127.0.0.1:0 [extra]`; stderr goes to a file, from which the
// port is read off the "execmcp: listening on http://127.0.0.1:PORT" line.
class HttpServerProcess {
 public:
  HttpServerProcess(const std::string& bin, const std::string& config,
                    const std::vector<std::string>& extra_args, const std::string& stderr_file);
  ~HttpServerProcess();
  HttpServerProcess(const HttpServerProcess&) = delete;
  HttpServerProcess& operator=(const HttpServerProcess&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] std::uint16_t port() const { return port_; }
  // SIGTERM, then waits (SIGKILL after `grace`); returns the exit status (-1: killed or unknown).
  int stop(std::chrono::seconds grace = std::chrono::seconds(10));
  [[nodiscard]] long peak_rss_kib() const;  // VmHWM
  [[nodiscard]] long rss_kib() const;       // VmRSS

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpResponse {
  int status = 0;
  std::string body;
  bool close = false;   // the server said `Connection: close`: the next request needs a new one
  HttpHeaders headers;  // as received, names in lower case
  // The first header named `name` (lower case), or "".
  [[nodiscard]] std::string header(const std::string& name) const;
};

// One keep-alive connection to 127.0.0.1:port; requests are sent one at a time, each with
// `Host: 127.0.0.1:<port>` as a browser or an SDK client sends it.
class HttpConnection {
 public:
  explicit HttpConnection(std::uint16_t port);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // POSTs `body` to `path` with `headers` (name, value) and reads the whole response
  // (Content-Length or chunked). Throws on a socket error or a closed connection.
  HttpResponse post(const std::string& path, const HttpHeaders& headers, const std::string& body,
                    std::chrono::milliseconds timeout);
  // GET `path`, read as post() reads.
  HttpResponse get(const std::string& path, const HttpHeaders& headers,
                   std::chrono::milliseconds timeout);
  // Sends `bytes` as they are (a malformed request, say) and reads one response as post() does;
  // throws when the server closes the connection without answering.
  HttpResponse send_raw(const std::string& bytes, std::chrono::milliseconds timeout);
  // From another thread: shuts the socket down, so a request waiting on it fails at once.
  void abort();

 private:
  HttpResponse exchange(const std::string& request, std::chrono::milliseconds timeout);
  void read_more(std::chrono::steady_clock::time_point deadline);
  std::string read_line(std::chrono::steady_clock::time_point deadline);
  std::string read_exact(std::size_t n, std::chrono::steady_clock::time_point deadline);

  std::uint16_t port_ = 0;
  int fd_ = -1;
  std::string buffer_;
};

// The body and headers of an MCP 2026-07-28 stateless tools/call of `tool` with `arguments` (a
// JSON object's text), and of execute_command with `command` (no quotes or backslashes in it).
std::string stateless_call_body(long id, const std::string& tool, const std::string& arguments);
HttpHeaders stateless_call_headers(const std::string& tool);
std::string stateless_exec_body(long id, const std::string& command);
HttpHeaders stateless_exec_headers();

// The JSON-RPC message of an HTTP response body: the body itself, or an SSE stream's last event.
std::string rpc_of_body(const std::string& body);

}  // namespace execmcp::bench
