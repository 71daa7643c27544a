// One HTTP connection (plain or TLS) and its exchanges: reading under limits and deadlines,
// handing requests over, writing responses and SSE streams, noticing a peer that left.
#include "transport/http/http_connection.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <cctype>
#include <exception>

#include "execmcp/sdk/log_text.hpp"
#include "transport/http/http_wire.hpp"

namespace execmcp::host::http::detail {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using boost::system::error_code;

constexpr std::chrono::milliseconds kMaxLinger{2'000};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// A header value as quoted back in an error body: at most 200 bytes, escaped (HTTP allows
// obs-text bytes in a value, which are not UTF-8).
std::string shown(std::string_view value) {
  return sdk::log_text(value, 200);
}

std::string endpoint_text(const tcp::socket& socket) {
  error_code ec;
  const auto endpoint = socket.remote_endpoint(ec);
  if (ec) return "?";
  const auto address = endpoint.address();
  if (address.is_v6()) return "[" + address.to_string() + "]:" + std::to_string(endpoint.port());
  return address.to_string() + ":" + std::to_string(endpoint.port());
}

// The target as logged: the path only (a query string might carry something secret), cut at 200.
std::string logged_path(const std::string& target) {
  const std::size_t query = target.find('?');
  std::string path = target.substr(0, std::min<std::size_t>(query, 200));
  if (query != std::string::npos) path += "?...";
  return path;
}

std::string seconds_text(std::chrono::milliseconds duration) {
  const auto ms = duration.count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  return std::to_string(ms) + " ms";
}

}  // namespace

// --- Exchange -----------------------------------------------------------------------------------

void Exchange::post(std::function<void(Connection&)> work) {
  std::lock_guard alive_lock(shared_->alive_mutex);
  if (!shared_->alive) return;
  auto connection = connection_.lock();
  if (!connection) return;
  asio::post(connection->strand(),
             [connection, work = std::move(work)]() mutable { work(*connection); });
}

void Exchange::respond(int status, Headers headers, std::string body) {
  {
    std::lock_guard lock(mutex_);
    if (answered_) return;
    answered_ = true;
    ended_ = true;
  }
  post([self = shared_from_this(), status, headers = std::move(headers),
        body = std::move(body)](Connection& connection) mutable {
    connection.exchange_respond(self.get(), status, std::move(headers), std::move(body));
  });
}

void Exchange::start_stream(Headers headers) {
  {
    std::lock_guard lock(mutex_);
    if (answered_) return;
    answered_ = true;
    streaming_ = true;
  }
  post([self = shared_from_this(), headers = std::move(headers)](Connection& connection) mutable {
    connection.exchange_start_stream(self.get(), std::move(headers));
  });
}

void Exchange::send_event(std::string data, bool droppable) {
  {
    std::lock_guard lock(mutex_);
    if (!streaming_ || ended_ || gone_) return;
  }
  post([self = shared_from_this(), data = std::move(data),
        droppable](Connection& connection) mutable {
    connection.exchange_send_event(self.get(), std::move(data), droppable);
  });
}

void Exchange::end_stream() {
  {
    std::lock_guard lock(mutex_);
    if (!streaming_ || ended_) return;
    ended_ = true;
  }
  post([self = shared_from_this()](Connection& connection) {
    connection.exchange_end_stream(self.get());
  });
}

void Exchange::on_peer_gone(std::function<void()> callback) {
  {
    std::lock_guard lock(mutex_);
    if (callback_set_ || !callback) return;
    callback_set_ = true;
    if (!gone_) {
      gone_callback_ = std::move(callback);
      return;
    }
  }
  // Already gone: run it on a server thread while there is one, else here.
  {
    std::lock_guard alive_lock(shared_->alive_mutex);
    if (shared_->alive && shared_->io_context != nullptr) {
      asio::post(*shared_->io_context, std::move(callback));
      return;
    }
  }
  callback();
}

bool Exchange::peer_gone() const {
  std::lock_guard lock(mutex_);
  return gone_;
}

void Exchange::mark_gone() {
  std::function<void()> callback;
  {
    std::lock_guard lock(mutex_);
    if (gone_) return;
    gone_ = true;
    callback = std::move(gone_callback_);
  }
  if (callback) callback();
}

// --- Connection ---------------------------------------------------------------------------------

Connection::Connection(std::shared_ptr<ServerShared> shared, Strand strand, tcp::socket socket,
                       bool reject)
    : shared_(std::move(shared)),
      options_(shared_->options),
      strand_(std::move(strand)),
      socket_(std::move(socket)),
      reject_(reject),
      deadline_timer_(strand_),
      write_timer_(strand_) {
  remote_ = endpoint_text(socket_);
  if (shared_->tls != nullptr) tls_.emplace(std::move(socket_), *shared_->tls);
}

Connection::~Connection() {
  release_body();
  unregister();
}

tcp::socket& Connection::socket() {
  return tls_ ? tls_->next_layer() : socket_;
}

void Connection::async_read_some(asio::mutable_buffer buffer,
                                 std::function<void(error_code, std::size_t)> done) {
  if (tls_) {
    tls_->async_read_some(buffer, std::move(done));
  } else {
    socket_.async_read_some(buffer, std::move(done));
  }
}

void Connection::async_write(asio::const_buffer buffer,
                             std::function<void(error_code, std::size_t)> done) {
  if (tls_) {
    asio::async_write(*tls_, buffer, std::move(done));
  } else {
    asio::async_write(socket_, buffer, std::move(done));
  }
}

void Connection::unregister() {
  if (!registered_) return;
  registered_ = false;
  if (reject_) {
    shared_->rejecting.fetch_sub(1);
  } else {
    shared_->counters.open_connections.fetch_sub(1);
  }
  {
    std::lock_guard lock(shared_->connections_mutex);
    shared_->connections.erase(this);
  }
  shared_->connections_changed.notify_all();
}

void Connection::start() {
  if (state_ == State::kClosed) return;
  if (stopping()) {  // accepted while stop() began: stop() may not have seen it
    close_now();
    return;
  }
  if (!tls_) {
    start_reading_requests();
    return;
  }
  state_ = State::kHandshake;
  arm_deadline(Deadline::kHandshake, options_.read_timeout);
  tls_->async_handshake(asio::ssl::stream_base::server, [self = shared_from_this()](error_code ec) {
    if (self->state_ == State::kClosed) return;
    if (ec) {
      self->shared_->counters.rejected_tls_handshake.fetch_add(1);
      spdlog::debug("http TLS handshake with {} failed: {}", self->remote_, ec.message());
      self->close_now();
      return;
    }
    self->start_reading_requests();
  });
}

void Connection::start_reading_requests() {
  if (reject_) {
    // At max_connections: answer without reading the request, then drain and close.
    shared_->counters.rejected_max_connections.fetch_add(1);
    state_ = State::kResponding;
    keep_alive_ = false;
    method_ = "-";
    target_ = "-";
    status_ = 503;
    request_start_ = std::chrono::steady_clock::now();
    arm_deadline(Deadline::kNone, {});
    queue(
        error_response(503,
                       "The server is at its limit of " + std::to_string(options_.max_connections) +
                           " connections; retry in a second.\n",
                       true, {{"Retry-After", "1"}}),
        true);
    read_more();
    return;
  }
  await_next_request();
  request_start_ = std::chrono::steady_clock::now();
  // A new connection must send its request within the read timeout.
  arm_deadline(Deadline::kRequest, options_.read_timeout);
  read_more();
}

void Connection::read_more() {
  if (reading_ || state_ == State::kClosed || state_ == State::kHandshake) return;
  // While a request is handled, bytes the peer sends next wait here (bounded); reading goes on
  // so that a peer that closes is noticed at once.
  const std::size_t max_buffered = std::max<std::size_t>(options_.max_header_bytes, 64 * 1024);
  if (state_ != State::kLingering && in_.size() >= max_buffered) return;
  reading_ = true;
  async_read_some(
      asio::buffer(read_chunk_),
      [self = shared_from_this()](error_code ec, std::size_t n) { self->on_read(ec, n); });
}

void Connection::on_read(error_code ec, std::size_t n) {
  reading_ = false;
  if (state_ == State::kClosed) return;
  if (ec) {
    if (writing_ && ec == asio::error::eof) {
      // The peer may have read all we wrote and closed before our write completion ran: let the
      // write finish and decide then whether the response ended (or the write deadline does).
      peer_eof_ = true;
      return;
    }
    // Reset or our own close, or end of stream with nothing being written: whatever was in
    // progress is over.
    close_now();
    return;
  }
  if (state_ == State::kLingering || reject_) {
    in_.consume(in_.size());
  } else {
    in_.commit(asio::buffer_copy(in_.prepare(n), asio::buffer(read_chunk_.data(), n)));
    parse_buffered();
  }
  read_more();
}

void Connection::parse_buffered() {
  while (in_.size() > 0 && (state_ == State::kIdle || state_ == State::kReading)) {
    if (state_ == State::kIdle) {
      state_ = State::kReading;
      if (deadline_ != Deadline::kRequest) {
        request_start_ = std::chrono::steady_clock::now();
        arm_deadline(Deadline::kRequest, options_.read_timeout);
      }
    }
    const bool in_head = !parser_->is_header_done();
    const auto buffered = in_.data();
    std::size_t offered = buffered.size();
    if (in_head) offered = std::min(offered, options_.max_header_bytes - head_bytes_);
    error_code ec;
    const std::size_t used = parser_->put(asio::const_buffer(buffered.data(), offered), ec);
    in_.consume(used);
    if (in_head && !parser_->is_header_done()) {
      head_bytes_ += used;
      // What was offered reached the limit and the head has not ended: it is longer.
      if ((!ec || ec == bhttp::error::need_more) &&
          head_bytes_ + in_.size() >= options_.max_header_bytes) {
        ec = bhttp::error::header_limit;
      }
    }
    if (ec == bhttp::error::header_limit) {
      reject_request(431,
                     "The request line and headers exceed the limit of " +
                         std::to_string(options_.max_header_bytes) +
                         " bytes; send fewer or shorter headers.\n",
                     shared_->counters.rejected_header_too_large, true);
      return;
    }
    if (ec == bhttp::error::body_limit) {
      reject_request(413,
                     "The request body exceeds the limit of " +
                         std::to_string(options_.max_body_bytes) + " bytes; send a smaller body.\n",
                     shared_->counters.rejected_body_too_large, true);
      return;
    }
    if (ec && ec != bhttp::error::need_more) {
      reject_request(
          400, "Malformed HTTP request (" + ec.message() + "); send a valid HTTP/1.1 request.\n",
          shared_->counters.rejected_bad_request, true);
      return;
    }
    if (in_head && parser_->is_header_done()) {
      if (!check_head()) return;
      const auto length = parser_->content_length();
      if (length && !reserve_body(static_cast<std::size_t>(*length))) return;
      parser_->eager(true);  // the body may follow in the same buffer
    } else if (!in_head && parser_->chunked() && !reserve_body(parser_->get().body().size())) {
      return;
    }
    if (parser_->is_done()) {
      on_request_complete();
      return;
    }
    if (parser_->is_header_done() && !sent_continue_) {
      sent_continue_ = true;
      const auto& header = parser_->get();
      const auto expect = header[bhttp::field::expect];
      if (header.version() >= 11 && beast::iequals(expect, "100-continue")) {
        queue("HTTP/1.1 100 Continue\r\n\r\n", false);
      }
    }
    if (ec == bhttp::error::need_more || used == 0) return;
  }
}

bool Connection::check_head() {
  const auto& header = parser_->get();
  std::size_t fields = 0;
  std::size_t transfer_encodings = 0;
  std::size_t content_lengths = 0;
  std::size_t hosts = 0;
  std::string_view transfer_encoding;
  std::string_view content_length;
  std::string_view host;
  for (const auto& field : header) {
    ++fields;
    if (field.name() == bhttp::field::transfer_encoding) {
      ++transfer_encodings;
      transfer_encoding = std::string_view(field.value().data(), field.value().size());
    } else if (field.name() == bhttp::field::content_length) {
      ++content_lengths;
      content_length = std::string_view(field.value().data(), field.value().size());
    } else if (field.name() == bhttp::field::host) {
      ++hosts;
      host = std::string_view(field.value().data(), field.value().size());
    }
  }
  if (fields > options_.max_header_fields) {
    reject_request(431,
                   "The request has more than " + std::to_string(options_.max_header_fields) +
                       " header fields; send fewer.\n",
                   shared_->counters.rejected_header_too_large, true);
    return false;
  }
  // A body another parser (a proxy in front) could delimit differently is refused, and the
  // connection closed, so that no part of it can be read as a next request (RFC 9112 6.1, 6.3).
  auto bad_framing = [&](const std::string& what) {
    reject_request(400,
                   "The request body's framing is ambiguous (" + what +
                       "); send either one Content-Length or 'Transfer-Encoding: chunked'.\n",
                   shared_->counters.rejected_bad_request, true);
    return false;
  };
  if (transfer_encodings > 0) {
    if (header.version() < 11) return bad_framing("Transfer-Encoding in an HTTP/1.0 request");
    if (transfer_encodings > 1) return bad_framing("more than one Transfer-Encoding");
    const std::string_view coding = trim(transfer_encoding);
    if (!beast::iequals(beast::string_view(coding.data(), coding.size()), "chunked")) {
      return bad_framing("Transfer-Encoding '" + shown(transfer_encoding) +
                         "' where only 'chunked' is supported");
    }
    if (content_lengths > 0) return bad_framing("both Transfer-Encoding and Content-Length");
  }
  if (content_lengths > 1) return bad_framing("more than one Content-Length");
  if (content_lengths == 1) {
    const std::string_view digits = trim(content_length);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(),
                                       [](unsigned char c) { return std::isdigit(c) != 0; })) {
      return bad_framing("Content-Length '" + shown(content_length) + "' is not one number");
    }
  }
  if (hosts > 1 || (hosts == 0 && header.version() >= 11)) {
    reject_request(400,
                   hosts == 0 ? "The request has no Host header; HTTP/1.1 requires one.\n"
                              : "The request has more than one Host header; send one.\n",
                   shared_->counters.rejected_bad_request, true);
    return false;
  }
  // Checked on every route before any handler runs, so no endpoint can forget it. Closed, as
  // the body was not read.
  if (hosts == 1 && shared_->check_host && !shared_->hosts.allows(trim(host))) {
    reject_request(403,
                   "Host '" + shown(host) +
                       "' is not allowed; add it to server.allowed_hosts in the config to allow "
                       "it.\n",
                   shared_->counters.rejected_host, true);
    return false;
  }
  return true;
}

bool Connection::reserve_body(std::size_t total) {
  if (total <= body_reserved_) return true;
  const std::size_t more = total - body_reserved_;
  // Never below one whole body, or a body within max_body_bytes could never be read.
  const std::size_t limit = std::max(options_.max_total_body_bytes, options_.max_body_bytes);
  const std::size_t before = shared_->body_bytes.fetch_add(more);
  if (before + more > limit) {
    shared_->body_bytes.fetch_sub(more);
    reject_request(503,
                   "The server is reading as many request bodies as it takes at once (" +
                       std::to_string(limit) + " bytes); retry in a second.\n",
                   shared_->counters.rejected_body_budget, true, {{"Retry-After", "1"}});
    return false;
  }
  body_reserved_ = total;
  return true;
}

void Connection::release_body() {
  shared_->body_bytes.fetch_sub(body_reserved_);
  body_reserved_ = 0;
}

void Connection::reject_request(int status, std::string_view body,
                                std::atomic<std::uint64_t>& counter, bool close,
                                const Headers& extra) {
  counter.fetch_add(1);
  release_body();
  if (parser_) {  // else on_request_complete() has set method_ and target_
    const bool header_done = parser_->is_header_done();
    method_ = header_done ? std::string(parser_->get().method_string()) : "-";
    target_ = header_done ? std::string(parser_->get().target()) : "-";
  }
  arm_deadline(Deadline::kNone, {});
  state_ = State::kResponding;
  status_ = status;
  keep_alive_ = keep_alive_ && !close && !stopping();
  queue(error_response(status, body, !keep_alive_, extra), true);
}

void Connection::on_request_complete() {
  arm_deadline(Deadline::kNone, {});
  auto message = parser_->release();
  parser_.reset();
  release_body();  // handed over: from here the handler bounds what it keeps
  method_ = std::string(message.method_string());
  target_ = std::string(message.target());
  keep_alive_ = message.keep_alive() && !stopping();
  head_request_ = message.method() == bhttp::verb::head;
  http10_ = message.version() < 11;
  streaming_ = false;
  status_ = 0;

  HttpRequest request;
  request.method = method_;
  request.target = target_;
  request.remote = remote_;
  for (const auto& field : message) {
    const auto name = field.name_string();
    request.headers.emplace_back(lower(std::string_view(name.data(), name.size())),
                                 std::string(field.value()));
  }
  request.body = std::move(message.body());

  for (const auto& [name, value] : request.headers) {
    if (name != "origin" || shared_->origins.allows(value)) continue;
    reject_request(403,
                   "Origin '" + shown(value) +
                       "' is not allowed; add it to server.allowed_origins in the config to "
                       "allow it.\n",
                   shared_->counters.rejected_origin, false);
    return;
  }

  state_ = State::kHandling;
  shared_->counters.total_requests.fetch_add(1);
  exchange_ = std::make_shared<Exchange>(shared_, weak_from_this());
  auto exchange = exchange_;
  try {
    shared_->handler(std::move(request), exchange);
  } catch (const std::exception& error) {
    spdlog::error("http handler for {} {} threw: {}", method_, logged_path(target_), error.what());
    exchange->respond(500, {{"Content-Type", "text/plain; charset=utf-8"}},
                      "Internal error while serving the request; see the server log.\n");
  } catch (...) {
    spdlog::error("http handler for {} {} threw", method_, logged_path(target_));
    exchange->respond(500, {{"Content-Type", "text/plain; charset=utf-8"}},
                      "Internal error while serving the request; see the server log.\n");
  }
}

void Connection::exchange_respond(const Exchange* exchange, int status, Headers headers,
                                  std::string body) {
  if (exchange != exchange_.get() || state_ != State::kHandling) return;
  state_ = State::kResponding;
  status_ = status;
  keep_alive_ = keep_alive_ && !stopping();
  std::string message =
      response_head(status, headers, Framing::kContentLength, body.size(), !keep_alive_);
  if (!head_request_) message += body;
  queue(std::move(message), true);
}

void Connection::exchange_start_stream(const Exchange* exchange, Headers headers) {
  if (exchange != exchange_.get() || state_ != State::kHandling) return;
  state_ = State::kResponding;
  status_ = 200;
  streaming_ = true;
  chunked_stream_ = !http10_;
  keep_alive_ = keep_alive_ && chunked_stream_ && !stopping();
  Headers all{{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  for (auto& [name, value] : headers) {
    const std::string key = lower(name);
    if (key == "content-type" || key == "cache-control") continue;
    all.emplace_back(std::move(name), std::move(value));
  }
  queue(response_head(200, all, chunked_stream_ ? Framing::kChunked : Framing::kCloseDelimited, 0,
                      !keep_alive_),
        false);
}

void Connection::exchange_send_event(const Exchange* exchange, std::string data, bool droppable) {
  if (exchange != exchange_.get() || state_ != State::kResponding || !streaming_) return;
  if (droppable && queued_bytes_ > options_.max_queued_droppable_bytes) {
    shared_->counters.dropped_events.fetch_add(1);
    return;
  }
  std::string event = sse_event(data, chunked_stream_);
  if (queued_bytes_ + event.size() > options_.max_queued_bytes) {
    spdlog::debug("http {} left more than {} bytes unread; dropping it", remote_,
                  options_.max_queued_bytes);
    close_now();
    return;
  }
  queue(std::move(event), false);
}

void Connection::exchange_end_stream(const Exchange* exchange) {
  if (exchange != exchange_.get() || state_ != State::kResponding || !streaming_) return;
  queue(chunked_stream_ ? std::string(last_chunk()) : std::string(), true);
}

void Connection::queue(std::string bytes, bool ends_response) {
  queued_bytes_ += bytes.size();
  out_.push_back({std::move(bytes), ends_response});
  if (!writing_) write_next();
}

void Connection::write_next() {
  if (out_.empty() || state_ == State::kClosed) return;
  writing_ = true;
  arm_write_deadline();
  async_write(asio::buffer(out_.front().bytes),
              [self = shared_from_this()](error_code ec, std::size_t) { self->on_written(ec); });
}

void Connection::on_written(error_code ec) {
  writing_ = false;
  ++write_generation_;
  write_timer_.cancel();
  if (state_ == State::kClosed) return;
  if (ec) {
    close_now();
    return;
  }
  Outgoing done = std::move(out_.front());
  out_.pop_front();
  queued_bytes_ -= done.bytes.size();
  if (done.ends_response) {
    on_response_done();
    return;
  }
  if (peer_eof_) {
    close_now();  // the peer left in the middle of a stream
    return;
  }
  write_next();
}

void Connection::on_response_done() {
  log_request(status_, "");
  exchange_.reset();  // the response ended: later calls on the exchange are ignored
  streaming_ = false;
  if (peer_eof_) {
    close_now();
    return;
  }
  if (!keep_alive_ || stopping() || reject_) {
    linger();
    return;
  }
  await_next_request();
  arm_deadline(Deadline::kIdle, options_.idle_timeout);
  parse_buffered();
  read_more();
}

void Connection::linger() {
  // Closing with unread bytes would reset the connection and could destroy the response in
  // flight; so shut our side down and drain what the peer still sends, for a short while.
  state_ = State::kLingering;
  in_.consume(in_.size());
  error_code ec;
  socket().shutdown(tcp::socket::shutdown_send, ec);
  arm_deadline(Deadline::kLinger, std::min(kMaxLinger, options_.read_timeout));
  read_more();
}

void Connection::close_now() {
  if (state_ == State::kClosed) return;
  const bool in_progress =
      exchange_ && (state_ == State::kHandling || state_ == State::kResponding);
  state_ = State::kClosed;
  if (in_progress) peer_left();
  exchange_.reset();
  ++deadline_generation_;
  ++write_generation_;
  deadline_timer_.cancel();
  write_timer_.cancel();
  error_code ec;
  socket().shutdown(tcp::socket::shutdown_both, ec);
  socket().close(ec);
  out_.clear();
  queued_bytes_ = 0;
  release_body();
  unregister();
}

void Connection::peer_left() {
  if (!exchange_) return;
  shared_->counters.peers_gone.fetch_add(1);
  log_request(status_ == 0 ? 499 : status_, " (peer gone)");
  auto exchange = std::move(exchange_);
  exchange_.reset();
  exchange->mark_gone();
}

void Connection::begin_stop() {
  if (state_ != State::kHandling && state_ != State::kResponding) close_now();
}

void Connection::force_close() {
  close_now();
}

void Connection::arm_deadline(Deadline kind, std::chrono::milliseconds after) {
  deadline_ = kind;
  const std::uint64_t generation = ++deadline_generation_;
  if (kind == Deadline::kNone) {
    deadline_timer_.cancel();
    return;
  }
  deadline_timer_.expires_after(after);
  deadline_timer_.async_wait([self = shared_from_this(), generation, kind](error_code ec) {
    if (ec || generation != self->deadline_generation_) return;
    self->on_deadline(kind);
  });
}

void Connection::on_deadline(Deadline kind) {
  if (state_ == State::kClosed) return;
  switch (kind) {
    case Deadline::kNone:
      return;
    case Deadline::kHandshake:
      shared_->counters.rejected_tls_handshake.fetch_add(1);
      close_now();
      return;
    case Deadline::kIdle:
    case Deadline::kLinger:
      close_now();
      return;
    case Deadline::kRequest:
      if (state_ != State::kIdle && state_ != State::kReading) return;
      reject_request(408,
                     "The request was not received within " + seconds_text(options_.read_timeout) +
                         "; send the whole request promptly.\n",
                     shared_->counters.rejected_timeout, true);
      return;
  }
}

void Connection::arm_write_deadline() {
  const std::uint64_t generation = ++write_generation_;
  write_timer_.expires_after(options_.write_timeout);
  write_timer_.async_wait([self = shared_from_this(), generation](error_code ec) {
    if (ec || generation != self->write_generation_ || !self->writing_) return;
    spdlog::debug("http {} did not read for {}; dropping it", self->remote_,
                  seconds_text(self->options_.write_timeout));
    self->close_now();
  });
}

void Connection::log_request(int status, const char* note) {
  if (!spdlog::should_log(spdlog::level::debug)) return;
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - request_start_);
  spdlog::debug("http {} {} {} {}ms {}{}", method_, logged_path(target_), status, elapsed.count(),
                remote_, note);
}

void Connection::await_next_request() {
  state_ = State::kIdle;
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(options_.max_header_bytes));
  parser_->body_limit(options_.max_body_bytes);
  parser_->eager(false);  // returns once the head is parsed, so check_head() runs before the body
  sent_continue_ = false;
  head_bytes_ = 0;
}

}  // namespace execmcp::host::http::detail
