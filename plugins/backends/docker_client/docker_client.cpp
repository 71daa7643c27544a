// Beast/Asio implementation of the Docker client: every operation runs on a private io_context
// with a deadline, so a hung engine costs a timeout, never a stuck thread.
#include "docker_client/docker_client.hpp"

#include <fcntl.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

namespace execmcp::plugins::docker_client {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using Socket = asio::generic::stream_protocol::socket;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

constexpr std::size_t kMaxBody = 256u * 1024 * 1024;  // logs of a chatty container

// Runs the io_context until `done` or the deadline; on the deadline closes the socket so the
// pending operation completes with operation_aborted. Returns false on timeout.
bool run_until(asio::io_context& io, Socket& socket, const bool& done, Clock::time_point deadline) {
  io.restart();
  while (!done) {
    const auto now = Clock::now();
    if (now >= deadline) {
      error_code ignored;
      socket.close(ignored);
      io.restart();
      io.run();
      return false;
    }
    io.run_one_for(deadline - now);
    if (io.stopped() && !done) io.restart();
  }
  return true;
}

// Starts one asynchronous operation (`start` gets its completion handler) and runs it as
// run_until() does. Returns false on timeout, else true with `ec` the operation's result.
template <class Start>
bool run_op(asio::io_context& io, Socket& socket, Clock::time_point deadline, error_code& ec,
            Start&& start) {
  bool done = false;
  start([&](const error_code& e, auto&&...) {
    ec = e;
    done = true;
  });
  return run_until(io, socket, done, deadline);
}

std::string connect_error(const DockerEndpoint& ep, const error_code& ec) {
  if (ec == asio::error::access_denied || ec.value() == EACCES)
    return "no permission to use the Docker socket at " + ep.uri +
           ": add this user to the 'docker' group (then log in again) or run execmcp as a user "
           "that may use the socket (" +
           ec.message() + ")";
  return "cannot reach Docker at " + ep.uri + ": is dockerd running? (" + ec.message() + ")";
}

// Opens a connected socket or returns an error text.
std::string connect(asio::io_context& io, Socket& socket, const DockerEndpoint& ep,
                    Clock::time_point deadline) {
  error_code ec;
  if (ep.kind == DockerEndpoint::Kind::Unix) {
    asio::generic::stream_protocol::endpoint target{
        asio::local::stream_protocol::endpoint(ep.path)};
    if (!run_op(io, socket, deadline, ec,
                [&](auto handler) { socket.async_connect(target, std::move(handler)); }))
      return "cannot reach Docker at " + ep.uri + ": is dockerd running? (connect timed out)";
    if (ec) return connect_error(ep, ec);
    return {};
  }
  asio::ip::tcp::resolver resolver(io);
  auto results = resolver.resolve(ep.host, ep.port, ec);
  if (ec)
    return "cannot reach Docker at " + ep.uri + ": cannot resolve host (" + ec.message() + ")";
  for (const auto& r : results) {
    error_code ignored;
    socket.close(ignored);
    const asio::generic::stream_protocol::endpoint target(r.endpoint());
    if (!run_op(io, socket, deadline, ec,
                [&](auto handler) { socket.async_connect(target, std::move(handler)); }))
      return "cannot reach Docker at " + ep.uri + ": is dockerd running? (connect timed out)";
    if (!ec) return {};
  }
  return connect_error(ep, ec);
}

http::request<http::string_body> make_request(std::string_view method, const std::string& path,
                                              const std::string& body,
                                              std::string_view content_type = "application/json") {
  http::request<http::string_body> req{
      http::string_to_verb(boost::beast::string_view(method.data(), method.size())), path, 11};
  req.set(http::field::host, "docker");
  req.set(http::field::user_agent, "execmcp-docker-api");
  if (!body.empty()) {
    req.set(http::field::content_type,
            boost::beast::string_view(content_type.data(), content_type.size()));
    req.body() = body;
  }
  req.prepare_payload();
  return req;
}

class BeastExecConnection final : public ExecConnection {
 public:
  BeastExecConnection(std::unique_ptr<asio::io_context> io, std::unique_ptr<Socket> socket,
                      std::string leftover, bool upgraded)
      : io_(std::move(io)),
        socket_(std::move(socket)),
        leftover_(std::move(leftover)),
        upgraded_(upgraded) {}

  [[nodiscard]] bool upgraded() const override { return upgraded_; }

  ~BeastExecConnection() override {
    error_code ignored;
    socket_->close(ignored);
  }

  ReadResult read_some(char* buffer, std::size_t size, std::chrono::milliseconds wait) override {
    ReadResult r;
    if (!leftover_.empty()) {
      r.bytes = std::min(size, leftover_.size());
      std::copy_n(leftover_.data(), r.bytes, buffer);
      leftover_.erase(0, r.bytes);
      return r;
    }
    if (!socket_->is_open()) {
      r.eof = true;
      return r;
    }
    bool done = false;
    error_code ec;
    socket_->async_read_some(asio::buffer(buffer, size), [&](const error_code& e, std::size_t n) {
      ec = e;
      r.bytes = n;
      done = true;
    });
    // Nothing arrived in time: abandon this read (no data is lost: a cancelled read took none).
    finish_within(wait, done);
    if (ec == asio::error::operation_aborted) {
      r.timed_out = r.bytes == 0;
    } else if (ec == asio::error::eof || ec == asio::error::connection_reset) {
      r.eof = true;
    } else if (ec) {
      r.error = "reading the exec stream failed: " + ec.message();
    }
    return r;
  }

  std::string write_all(std::string_view data, std::chrono::milliseconds timeout) override {
    error_code ec;
    if (!run_op(*io_, *socket_, Clock::now() + timeout, ec, [&](auto handler) {
          asio::async_write(*socket_, asio::buffer(data.data(), data.size()), std::move(handler));
        }))
      return "writing to the exec stream timed out";
    if (ec) return "writing to the exec stream failed: " + ec.message();
    return {};
  }

  WriteResult write_some(std::string_view data, std::chrono::milliseconds wait) override {
    WriteResult w;
    if (!socket_->is_open()) {
      w.error = "writing to the exec stream failed: the connection is closed";
      return w;
    }
    bool done = false;
    error_code ec;
    socket_->async_write_some(asio::buffer(data.data(), data.size()),
                              [&](const error_code& e, std::size_t n) {
                                ec = e;
                                w.bytes = n;
                                done = true;
                              });
    // No room in time: abandon this write (a cancelled write_some wrote nothing).
    finish_within(wait, done);
    if (ec && ec != asio::error::operation_aborted)
      w.error = "writing to the exec stream failed: " + ec.message();
    return w;
  }

  void close_write() override {
    error_code ignored;
    socket_->shutdown(asio::socket_base::shutdown_send, ignored);
  }

  int detach(std::string& leftover) override {
    if (!socket_->is_open()) return -1;
    const int fd = ::fcntl(socket_->native_handle(), F_DUPFD_CLOEXEC, 0);
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    leftover = std::move(leftover_);
    leftover_.clear();
    error_code ignored;
    socket_->close(ignored);
    return fd;
  }

 private:
  // Runs the socket operation just started for at most `wait`; one still pending then is
  // cancelled and run to its (aborted) completion, so its handler, which sets `done`, has run.
  void finish_within(std::chrono::milliseconds wait, const bool& done) {
    io_->restart();
    io_->run_one_for(wait);
    if (done) return;
    error_code ignored;
    socket_->cancel(ignored);
    io_->restart();
    while (!done) io_->run_one();
  }

  std::unique_ptr<asio::io_context> io_;
  std::unique_ptr<Socket> socket_;
  std::string leftover_;
  bool upgraded_;
};

// A streamed body: raw bytes from the connection, fed to the parser that read the header.
class BeastBodyStream final : public BodyStream {
 public:
  BeastBodyStream(std::unique_ptr<BeastExecConnection> conn,
                  std::unique_ptr<http::response_parser<http::string_body>> parser)
      : conn_(std::move(conn)), parser_(std::move(parser)), buf_(16 * 1024) {}

  ReadResult read(std::chrono::milliseconds wait, std::string& out) override {
    ReadResult r;
    if (parser_->is_done()) {
      r.eof = true;
      return r;
    }
    const auto got = conn_->read_some(buf_.data(), buf_.size(), wait);
    if (!got.error.empty()) {
      r.error = got.error;
      return r;
    }
    pending_.append(buf_.data(), got.bytes);
    while (!pending_.empty() && !parser_->is_done()) {
      error_code ec;
      const auto used = parser_->put(asio::buffer(pending_.data(), pending_.size()), ec);
      pending_.erase(0, used);
      if (ec == http::error::need_more) break;
      if (ec) {
        r.error = "reading the engine's stream failed: " + ec.message();
        return r;
      }
      if (used == 0) break;
    }
    out += parser_->get().body();
    parser_->get().body().clear();
    r.eof = parser_->is_done() || got.eof;
    return r;
  }

 private:
  std::unique_ptr<BeastExecConnection> conn_;
  std::unique_ptr<http::response_parser<http::string_body>> parser_;
  std::vector<char> buf_;
  std::string pending_;  // raw bytes the parser has not taken yet
};

}  // namespace

DockerClient::DockerClient(DockerEndpoint endpoint) : endpoint_(std::move(endpoint)) {}

HttpResponse DockerClient::request(std::string_view method, const std::string& path,
                                   const std::string& body, std::chrono::milliseconds timeout,
                                   std::string_view content_type) {
  HttpResponse out;
  const auto deadline = Clock::now() + timeout;
  asio::io_context io;
  Socket socket(io);
  if (out.error = connect(io, socket, endpoint_, deadline); !out.error.empty()) return out;

  auto req = make_request(method, path, body, content_type);
  req.keep_alive(false);
  error_code ec;
  if (!run_op(io, socket, deadline, ec,
              [&](auto handler) { http::async_write(socket, req, std::move(handler)); })) {
    out.error = "Docker did not answer " + std::string(method) + " " + path + " in time";
    return out;
  }
  if (ec) {
    out.error =
        "sending " + std::string(method) + " " + path + " to Docker failed: " + ec.message();
    return out;
  }
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBody);
  if (!run_op(io, socket, deadline, ec, [&](auto handler) {
        http::async_read(socket, buffer, parser, std::move(handler));
      })) {
    out.error = "Docker did not answer " + std::string(method) + " " + path + " in time";
    return out;
  }
  if (ec) {
    out.error = "reading Docker's answer to " + std::string(method) + " " + path +
                " failed: " + ec.message();
    return out;
  }
  out.status = static_cast<int>(parser.get().result_int());
  out.body = std::move(parser.get().body());
  return out;
}

std::unique_ptr<ExecConnection> DockerClient::start_exec(const std::string& path,
                                                         std::string& error,
                                                         std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto io = std::make_unique<asio::io_context>();
  auto socket = std::make_unique<Socket>(*io);
  if (error = connect(*io, *socket, endpoint_, deadline); !error.empty()) return nullptr;

  auto req = make_request("POST", path, R"({"Detach":false,"Tty":false})");
  req.set(http::field::connection, "Upgrade");
  req.set(http::field::upgrade, "tcp");
  error_code ec;
  if (!run_op(*io, *socket, deadline, ec,
              [&](auto handler) { http::async_write(*socket, req, std::move(handler)); }) ||
      ec) {
    error = "starting the exec failed: " + (ec ? ec.message() : std::string("timed out"));
    return nullptr;
  }
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBody);
  if (!run_op(*io, *socket, deadline, ec,
              [&](auto handler) {
                http::async_read_header(*socket, buffer, parser, std::move(handler));
              }) ||
      ec) {
    error = "starting the exec failed: " + (ec ? ec.message() : std::string("timed out"));
    return nullptr;
  }
  const int status = static_cast<int>(parser.get().result_int());
  if (status != 101 && status != 200) {
    run_op(*io, *socket, deadline, ec,
           [&](auto handler) { http::async_read(*socket, buffer, parser, std::move(handler)); });
    error = "starting the exec failed: " + engine_message(status, parser.get().body());
    return nullptr;
  }
  // Bytes after the header belong to the raw stream.
  const auto data = buffer.data();
  std::string leftover(static_cast<const char*>(data.data()), data.size());
  return std::make_unique<BeastExecConnection>(std::move(io), std::move(socket),
                                               std::move(leftover), status == 101);
}

std::unique_ptr<BodyStream> DockerClient::open_stream(const std::string& path,
                                                      HttpResponse& response,
                                                      std::chrono::milliseconds timeout) {
  response = {};
  const auto deadline = Clock::now() + timeout;
  auto io = std::make_unique<asio::io_context>();
  auto socket = std::make_unique<Socket>(*io);
  if (response.error = connect(*io, *socket, endpoint_, deadline); !response.error.empty())
    return nullptr;
  auto req = make_request("GET", path, {});
  req.keep_alive(false);
  error_code ec;
  if (!run_op(*io, *socket, deadline, ec,
              [&](auto handler) { http::async_write(*socket, req, std::move(handler)); }) ||
      ec) {
    response.error = "sending GET " + path +
                     " to Docker failed: " + (ec ? ec.message() : std::string("timed out"));
    return nullptr;
  }
  boost::beast::flat_buffer buffer;
  auto parser = std::make_unique<http::response_parser<http::string_body>>();
  // It goes on for as long as the container runs. Not boost::none: Boost 1.74's parser compares
  // a Content-Length with the optional limit, and a none is less than any length, so every
  // answer that has one (an archive) would fail with "body limit exceeded".
  parser->body_limit(std::numeric_limits<std::uint64_t>::max());
  parser->eager(true);
  if (!run_op(*io, *socket, deadline, ec,
              [&](auto handler) {
                http::async_read_header(*socket, buffer, *parser, std::move(handler));
              }) ||
      ec) {
    response.error = "reading Docker's answer to GET " + path +
                     " failed: " + (ec ? ec.message() : std::string("timed out"));
    return nullptr;
  }
  response.status = static_cast<int>(parser->get().result_int());
  if (response.status != 200) {
    parser->body_limit(kMaxBody);
    run_op(*io, *socket, deadline, ec,
           [&](auto handler) { http::async_read(*socket, buffer, *parser, std::move(handler)); });
    response.body = std::move(parser->get().body());
    return nullptr;
  }
  // Bytes after the header are the body's first, fed to the parser at the first read.
  const auto data = buffer.data();
  std::string leftover(static_cast<const char*>(data.data()), data.size());
  auto conn = std::make_unique<BeastExecConnection>(std::move(io), std::move(socket),
                                                    std::move(leftover), false);
  return std::make_unique<BeastBodyStream>(std::move(conn), std::move(parser));
}

}  // namespace execmcp::plugins::docker_client
