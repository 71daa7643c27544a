// A minimal HTTP/1.1 keep-alive client over POSIX sockets, and an `execmcp serve --http` child
// process: enough to time MCP 2026-07-28 stateless tools/call requests against the stdio transport.
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
  // SIGTERM, then waits (SIGKILL after 10 s); returns the exit status (-1: killed or unknown).
  int stop();
  [[nodiscard]] long peak_rss_kib() const;

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

struct HttpResponse {
  int status = 0;
  std::string body;
};

// One keep-alive connection to 127.0.0.1:port; requests are sent one at a time.
class HttpConnection {
 public:
  explicit HttpConnection(std::uint16_t port);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // POSTs `body` to `path` with `headers` (name, value) and reads the whole response
  // (Content-Length or chunked). Throws on a socket error or a closed connection.
  HttpResponse post(const std::string& path,
                    const std::vector<std::pair<std::string, std::string>>& headers,
                    const std::string& body, std::chrono::milliseconds timeout);

 private:
  void read_more(std::chrono::steady_clock::time_point deadline);
  std::string read_line(std::chrono::steady_clock::time_point deadline);
  std::string read_exact(std::size_t n, std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::string buffer_;
};

// The body and headers of an MCP 2026-07-28 stateless tools/call of execute_command.
std::string stateless_exec_body(long id, const std::string& command);
std::vector<std::pair<std::string, std::string>> stateless_exec_headers();

}  // namespace execmcp::bench
