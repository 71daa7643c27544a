// Internal to host/src/transport/http (included by its .cpp files only, never by other rooms): one
// HTTP connection's state machine, the exchange it hands to the handler, and what they share with
// the server.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "transport/http/http_server.hpp"
#include "transport/http/origin_policy.hpp"

namespace execmcp::host::http::detail {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Strand = asio::strand<asio::io_context::executor_type>;

class Connection;

struct Counters {
  std::atomic<std::uint64_t> open_connections{0};
  std::atomic<std::uint64_t> total_connections{0};
  std::atomic<std::uint64_t> total_requests{0};
  std::atomic<std::uint64_t> peers_gone{0};
  std::atomic<std::uint64_t> dropped_events{0};
  std::atomic<std::uint64_t> rejected_max_connections{0};
  std::atomic<std::uint64_t> rejected_header_too_large{0};
  std::atomic<std::uint64_t> rejected_body_too_large{0};
  std::atomic<std::uint64_t> rejected_body_budget{0};
  std::atomic<std::uint64_t> rejected_bad_request{0};
  std::atomic<std::uint64_t> rejected_timeout{0};
  std::atomic<std::uint64_t> rejected_origin{0};
  std::atomic<std::uint64_t> rejected_host{0};
  std::atomic<std::uint64_t> rejected_tls_handshake{0};
};

// Owned jointly by the server, its connections and every exchange a handler may still hold, so
// an exchange outliving the server finds `alive` false instead of a destroyed io_context.
struct ServerShared {
  ServerShared(HttpServerOptions options_in, HttpHandler handler_in)
      : options(std::move(options_in)),
        handler(std::move(handler_in)),
        origins(options.allowed_origins),
        hosts(options.allowed_hosts) {}

  const HttpServerOptions options;
  const HttpHandler handler;
  const OriginPolicy origins;
  const HostPolicy hosts;
  // Whether every request's Host is checked: the listener is on a loopback address, or
  // allowed_hosts is set. Written by start() before the I/O threads start.
  bool check_host = false;
  asio::ssl::context* tls = nullptr;       // owned by the server; null for plain HTTP
  asio::io_context* io_context = nullptr;  // owned by the server; valid while `alive`
  Counters counters;

  // Guards `alive`: posts to the io_context happen under it, and the server clears it (after
  // joining its threads) before the io_context is destroyed.
  std::mutex alive_mutex;
  bool alive = true;

  // Every open connection, for stop(); `changed` is notified when one closes.
  std::mutex connections_mutex;
  std::condition_variable connections_changed;
  std::unordered_map<const Connection*, std::weak_ptr<Connection>> connections;
  std::atomic<std::size_t> rejecting{0};  // connections being answered 503
  // Bytes of request bodies being read (reserved as their Content-Length, or as chunks arrive),
  // over all connections; at most options.max_total_body_bytes.
  std::atomic<std::size_t> body_bytes{0};
  std::atomic<bool> stopping{false};  // set by stop() before it tells each connection
};

// The HttpExchange of one request. Its own state (answered, ended, gone, callback) lives under
// its mutex; what goes on the wire is posted to the connection's strand.
class Exchange final : public HttpExchange, public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<ServerShared> shared, std::weak_ptr<Connection> connection)
      : shared_(std::move(shared)), connection_(std::move(connection)) {}

  void respond(int status, Headers headers, std::string body) override;
  void start_stream(Headers headers) override;
  void send_event(std::string data, bool droppable) override;
  void end_stream() override;
  void on_peer_gone(std::function<void()> callback) override;
  [[nodiscard]] bool peer_gone() const override;

  // Called by the connection (on its strand) when the peer left before the response ended.
  void mark_gone();

 private:
  // Runs `work(connection)` on the connection's strand, unless the server or connection is gone.
  void post(std::function<void(Connection&)> work);

  const std::shared_ptr<ServerShared> shared_;
  const std::weak_ptr<Connection> connection_;
  mutable std::mutex mutex_;
  bool answered_ = false;  // respond() or start_stream() called
  bool streaming_ = false;
  bool ended_ = false;  // respond() or end_stream() called
  bool gone_ = false;
  bool callback_set_ = false;
  std::function<void()> gone_callback_;
};

// Reads with one read always outstanding (so a peer that leaves while the handler works is seen
// at once), parses with Beast's parser under the limits, queues writes, runs the deadlines.
// Every member function runs on the connection's strand.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `reject`: the server is at max_connections; answer 503 and close without reading a request.
  Connection(std::shared_ptr<ServerShared> shared, Strand strand, tcp::socket socket, bool reject);
  ~Connection();

  void start();
  // The server stops: close if no response is in progress, else close after it.
  void begin_stop();
  // Closes now; an exchange in progress sees its peer gone.
  void force_close();
  [[nodiscard]] Strand& strand() { return strand_; }

  // From the current exchange (ignored when `exchange` is not the current one).
  void exchange_respond(const Exchange* exchange, int status, Headers headers, std::string body);
  void exchange_start_stream(const Exchange* exchange, Headers headers);
  void exchange_send_event(const Exchange* exchange, std::string data, bool droppable);
  void exchange_end_stream(const Exchange* exchange);

 private:
  enum class State {
    kHandshake,   // TLS handshake
    kIdle,        // keep-alive, no byte of the next request yet
    kReading,     // part of a request read
    kHandling,    // request handed over, no response byte queued
    kResponding,  // response (or stream) queued or being written
    kLingering,   // last response written, our side shut down, draining until the peer closes
    kClosed,
  };
  enum class Deadline { kNone, kHandshake, kIdle, kRequest, kLinger };

  struct Outgoing {
    std::string bytes;
    bool ends_response = false;
  };

  void start_reading_requests();
  void read_more();
  void on_read(boost::system::error_code ec, std::size_t n);
  void parse_buffered();
  // Checks a head that has just been parsed, before its body is read: the number of fields, body
  // framing only one way can read (RFC 9112 6) and Host. False when it answered the request.
  bool check_head();
  void on_request_complete();
  // Answers `status` with a plain-text body; `close`: then close (the request was not read whole).
  void reject_request(int status, std::string_view body, std::atomic<std::uint64_t>& counter,
                      bool close, const Headers& extra = {});
  // Takes the current body's share of max_total_body_bytes up to `total` bytes; false (and
  // answered 503) when that would pass the limit.
  bool reserve_body(std::size_t total);
  void release_body();
  void queue(std::string bytes, bool ends_response);
  void write_next();
  void on_written(boost::system::error_code ec);
  void on_response_done();
  void linger();
  // A fresh parser with the limits, idle state: ready for the next request on this connection.
  void await_next_request();
  void close_now();
  void peer_left();
  void arm_deadline(Deadline kind, std::chrono::milliseconds after);
  void on_deadline(Deadline kind);
  void arm_write_deadline();
  void log_request(int status, const char* note);
  void unregister();
  [[nodiscard]] bool stopping() const { return shared_->stopping.load(); }

  // Stream operations over plain TCP or TLS.
  void async_read_some(asio::mutable_buffer buffer,
                       std::function<void(boost::system::error_code, std::size_t)> done);
  void async_write(asio::const_buffer buffer,
                   std::function<void(boost::system::error_code, std::size_t)> done);
  tcp::socket& socket();

  const std::shared_ptr<ServerShared> shared_;
  const HttpServerOptions& options_;
  Strand strand_;
  tcp::socket socket_;  // moved into tls_ when TLS
  std::optional<asio::ssl::stream<tcp::socket>> tls_;
  const bool reject_;
  std::string remote_;
  bool registered_ = true;

  State state_ = State::kIdle;
  bool reading_ = false;   // an async read is outstanding
  bool peer_eof_ = false;  // the peer closed its side while a write was in progress
  // Reads land in read_chunk_ and are then appended to in_: in_ is consumed while a read is
  // outstanding, and a flat_buffer may move its storage then, so it cannot be the read target.
  std::array<char, 16 * 1024> read_chunk_{};
  boost::beast::flat_buffer in_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  bool sent_continue_ = false;
  // Bytes of the current request's head the parser consumed so far. Beast's header_limit bounds
  // only what it has not consumed yet, so the limit on the whole head is kept here.
  std::size_t head_bytes_ = 0;
  std::size_t body_reserved_ = 0;  // this connection's share of ServerShared::body_bytes

  // The request being answered.
  std::shared_ptr<Exchange> exchange_;
  std::string method_;
  std::string target_;
  bool keep_alive_ = false;
  bool head_request_ = false;
  bool http10_ = false;
  bool streaming_ = false;
  bool chunked_stream_ = false;
  int status_ = 0;
  std::chrono::steady_clock::time_point request_start_;

  std::deque<Outgoing> out_;
  std::size_t queued_bytes_ = 0;
  bool writing_ = false;

  asio::steady_timer deadline_timer_;
  Deadline deadline_ = Deadline::kNone;
  std::uint64_t deadline_generation_ = 0;
  asio::steady_timer write_timer_;
  std::uint64_t write_generation_ = 0;
};

}  // namespace execmcp::host::http::detail
