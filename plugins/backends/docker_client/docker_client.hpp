// A small HTTP/1.1 client for the Docker Engine API over a unix socket or tcp (Boost.Beast inside).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "docker_client/docker_endpoint.hpp"

namespace execmcp::plugins::docker_client {

struct HttpResponse {
  int status = 0;  // 0 when the request did not complete
  std::string body;
  std::string error;  // transport failure (engine unreachable, timeout, ...), already phrased
  [[nodiscard]] bool ok() const { return error.empty() && status >= 200 && status < 300; }
};

// The hijacked connection of POST /exec/{id}/start: raw multiplexed bytes out, stdin bytes in.
class ExecConnection {
 public:
  virtual ~ExecConnection() = default;
  struct ReadResult {
    std::size_t bytes = 0;
    bool eof = false;
    bool timed_out = false;  // nothing arrived within the wait
    std::string error;
  };
  // Waits at most `wait` for some bytes.
  virtual ReadResult read_some(char* buffer, std::size_t size, std::chrono::milliseconds wait) = 0;
  // Writes everything (for stdin); returns "" or an error. A timeout closes the connection.
  virtual std::string write_all(std::string_view data, std::chrono::milliseconds timeout) = 0;
  struct WriteResult {
    std::size_t bytes = 0;  // 0 when nothing could be written within the wait
    std::string error;
  };
  // Writes some of `data`, waiting at most `wait` for room; the connection stays usable either
  // way, so stdin can be fed in turns with reading the output.
  virtual WriteResult write_some(std::string_view data, std::chrono::milliseconds wait) = 0;
  // Half-closes the connection so the command sees end of stdin.
  virtual void close_write() = 0;
  // True when the engine switched the connection to a raw stream (101): only then do bytes sent
  // after the request reach the command. A 200 is the same stream one way only, as a proxy that
  // refuses to upgrade a request with a body (HAProxy 2.4 to 3.0) leaves it.
  [[nodiscard]] virtual bool upgraded() const = 0;
  // Hands the connection over as a socket descriptor the caller then owns (close-on-exec,
  // non-blocking), with the bytes already read past the response headers; this object is closed.
  // Returns -1 when the connection is closed already.
  virtual int detach(std::string& leftover) = 0;
};

// The body of a response that goes on (GET /containers/{id}/logs?follow=1) as it comes, with the
// transfer encoding taken off.
class BodyStream {
 public:
  virtual ~BodyStream() = default;
  struct ReadResult {
    bool eof = false;  // the body ended (the engine closed it)
    std::string error;
  };
  // Waits at most `wait` for more of the body and appends it to `out`.
  virtual ReadResult read(std::chrono::milliseconds wait, std::string& out) = 0;
};

// One connection per request: simple, and safe to use from several threads at once.
class DockerClient {
 public:
  explicit DockerClient(DockerEndpoint endpoint);

  // `path` is used as given (no version prefix); `body` is JSON text or empty.
  HttpResponse request(std::string_view method, const std::string& path,
                       const std::string& body = {},
                       std::chrono::milliseconds timeout = std::chrono::seconds(60),
                       std::string_view content_type = "application/json");

  // Starts an exec with the connection hijacked. On failure returns null and sets `error`.
  std::unique_ptr<ExecConnection> start_exec(
      const std::string& path, std::string& error,
      std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // GET `path` whose body goes on. Null when the engine did not answer 200: then `response`
  // holds its status and body, or the transport error; `timeout` bounds the wait for the header.
  std::unique_ptr<BodyStream> open_stream(
      const std::string& path, HttpResponse& response,
      std::chrono::milliseconds timeout = std::chrono::seconds(30));

  [[nodiscard]] const DockerEndpoint& endpoint() const { return endpoint_; }

 private:
  DockerEndpoint endpoint_;
};

}  // namespace execmcp::plugins::docker_client
