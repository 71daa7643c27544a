// HttpServer: TLS setup, the listening socket, the accept loop, the I/O threads and stop().
#include "transport/http/http_server.hpp"

#include <openssl/ssl.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <fstream>
#include <stdexcept>
#include <thread>

#include "transport/http/http_connection.hpp"

namespace execmcp::host::http {
namespace {

using detail::asio::ip::tcp;
namespace asio = detail::asio;
using boost::system::error_code;

constexpr std::chrono::milliseconds kAcceptRetry{100};
constexpr std::chrono::milliseconds kForceCloseWait{2'000};

std::string endpoint_text(const std::string& address, std::uint16_t port) {
  if (address.find(':') != std::string::npos) return "[" + address + "]:" + std::to_string(port);
  return address + ":" + std::to_string(port);
}

void check_readable(const std::string& file, const char* what) {
  std::ifstream in(file);
  if (!in) {
    throw std::runtime_error("cannot read the TLS " + std::string(what) + " file '" + file +
                             "': it does not exist or is not readable");
  }
}

}  // namespace

std::optional<ListenAddress> parse_listen_address(std::string_view text) {
  ListenAddress result;
  std::string_view port_text;
  if (text.starts_with("[")) {
    const auto close = text.find("]:");
    if (close == std::string_view::npos) return std::nullopt;
    result.address = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    result.address = std::string(text.substr(0, colon));
    if (result.address.find(':') != std::string::npos) return std::nullopt;  // v6 needs [ ]
    port_text = text.substr(colon + 1);
  }
  if (result.address.empty() || port_text.empty() || port_text.size() > 5) return std::nullopt;
  unsigned port = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + static_cast<unsigned>(c - '0');
  }
  if (port > 65535) return std::nullopt;
  result.port = static_cast<std::uint16_t>(port);
  return result;
}

std::vector<std::pair<std::string, std::uint64_t>> HttpServerStats::rejected_by_reason() const {
  return {{"max_connections", rejected.max_connections},
          {"header_too_large", rejected.header_too_large},
          {"body_too_large", rejected.body_too_large},
          {"body_budget", rejected.body_budget},
          {"bad_request", rejected.bad_request},
          {"timeout", rejected.timeout},
          {"origin", rejected.origin},
          {"host", rejected.host},
          {"tls_handshake", rejected.tls_handshake}};
}

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, HttpHandler handler)
      : shared_(std::make_shared<detail::ServerShared>(std::move(options), std::move(handler))),
        acceptor_strand_(asio::make_strand(io_context_)),
        acceptor_(acceptor_strand_),
        retry_timer_(acceptor_strand_) {}

  ~Impl() { stop(std::chrono::milliseconds(0)); }

  void start();
  void stop(std::chrono::milliseconds grace);
  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] HttpServerStats stats() const;

 private:
  void load_tls();
  void accept_next();
  void on_accepted(detail::Strand strand, tcp::socket socket);
  std::vector<std::shared_ptr<detail::Connection>> connections();
  // Waits until no connection is open or `timeout` passed; true if none is.
  bool wait_for_no_connections(std::chrono::milliseconds timeout);

  const std::shared_ptr<detail::ServerShared> shared_;
  // Declared before the io_context so that connections (freed with its pending handlers) go
  // before the TLS context they use.
  std::optional<asio::ssl::context> tls_;
  asio::io_context io_context_;
  detail::Strand acceptor_strand_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_timer_;
  std::optional<tcp::socket> accepting_;
  std::optional<detail::Strand> accepting_strand_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex lifecycle_mutex_;
  bool started_ = false;
  bool stopped_ = false;
};

void HttpServer::Impl::load_tls() {
  const auto& options = shared_->options;
  if (options.tls_cert_file.empty() && options.tls_key_file.empty()) return;
  if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
    throw std::runtime_error(
        "TLS needs both a certificate file and a key file; only one was given");
  }
  check_readable(options.tls_cert_file, "certificate");
  check_readable(options.tls_key_file, "key");
  tls_.emplace(asio::ssl::context::tls_server);
  tls_->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                    asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                    asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use);
  SSL_CTX_set_min_proto_version(tls_->native_handle(), TLS1_2_VERSION);
  error_code ec;
  tls_->use_certificate_chain_file(options.tls_cert_file, ec);
  if (ec) {
    throw std::runtime_error("cannot load the TLS certificate chain from '" +
                             options.tls_cert_file + "' (PEM expected): " + ec.message());
  }
  tls_->use_private_key_file(options.tls_key_file, asio::ssl::context::pem, ec);
  if (ec) {
    throw std::runtime_error("cannot load the TLS private key from '" + options.tls_key_file +
                             "' (PEM expected, matching '" + options.tls_cert_file +
                             "'): " + ec.message());
  }
  if (SSL_CTX_check_private_key(tls_->native_handle()) != 1) {
    throw std::runtime_error("the TLS private key '" + options.tls_key_file +
                             "' does not match the certificate '" + options.tls_cert_file + "'");
  }
}

void HttpServer::Impl::start() {
  std::lock_guard lock(lifecycle_mutex_);
  if (started_ || stopped_) throw std::logic_error("HttpServer::start() called twice");
  const auto& options = shared_->options;
  load_tls();
  const std::string where = endpoint_text(options.address, options.port);

  error_code ec;
  tcp::resolver resolver(io_context_);
  const auto endpoints =
      resolver.resolve(options.address, std::to_string(options.port),
                       tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) {
    throw std::runtime_error("cannot listen on " + where + ": the address does not resolve (" +
                             (ec ? ec.message() : std::string("no address")) + ")");
  }
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  auto fail = [&](const char* step) {
    throw std::runtime_error("cannot listen on " + where + ": " + step +
                             " failed: " + ec.message());
  };
  acceptor_.open(endpoint.protocol(), ec);
  if (ec) fail("open");
  acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (ec) fail("setsockopt");
  acceptor_.bind(endpoint, ec);
  if (ec) fail("bind");
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) fail("listen");
  port_ = acceptor_.local_endpoint(ec).port();
  // Only a browser on this host reaches a loopback listener, which is what DNS rebinding abuses.
  shared_->check_host = endpoint.address().is_loopback() || !options.allowed_hosts.empty();

  shared_->io_context = &io_context_;
  shared_->tls = tls_ ? &*tls_ : nullptr;
  work_.emplace(io_context_.get_executor());
  const std::size_t count = std::max<std::size_t>(options.io_threads, 1);
  for (std::size_t i = 0; i < count; ++i) {
    threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "http-io");
      for (;;) {
        try {
          io_context_.run();
          return;
        } catch (const std::exception& error) {
          spdlog::error("http I/O thread: {}", error.what());
        }
      }
    });
  }
  started_ = true;
  asio::post(acceptor_strand_, [this] { accept_next(); });
  spdlog::info("http: listening on {}{}", endpoint_text(options.address, port_),
               tls_ ? " (TLS)" : "");
}

void HttpServer::Impl::accept_next() {
  if (stopping_ || !acceptor_.is_open()) return;
  accepting_strand_.emplace(asio::make_strand(io_context_));
  accepting_.emplace(*accepting_strand_);
  acceptor_.async_accept(*accepting_, [this](error_code ec) {
    if (stopping_ || !acceptor_.is_open()) {
      error_code ignored;
      accepting_->close(ignored);  // accepted as stop() began: not left open until destruction
      return;
    }
    if (ec) {
      // Out of descriptors and the like: wait a little instead of spinning.
      spdlog::warn("http: accept failed: {}", ec.message());
      retry_timer_.expires_after(kAcceptRetry);
      retry_timer_.async_wait([this](error_code wait_error) {
        if (!wait_error) accept_next();
      });
      return;
    }
    on_accepted(*accepting_strand_, std::move(*accepting_));
    accept_next();
  });
}

void HttpServer::Impl::on_accepted(detail::Strand strand, tcp::socket socket) {
  auto& counters = shared_->counters;
  counters.total_connections.fetch_add(1);
  const bool reject = counters.open_connections.load() >= shared_->options.max_connections;
  if (reject) {
    if (shared_->rejecting.load() >= shared_->options.max_rejecting_connections) {
      counters.rejected_max_connections.fetch_add(1);
      error_code ec;
      socket.close(ec);
      return;
    }
    shared_->rejecting.fetch_add(1);
  } else {
    counters.open_connections.fetch_add(1);
  }
  auto connection =
      std::make_shared<detail::Connection>(shared_, strand, std::move(socket), reject);
  {
    std::lock_guard lock(shared_->connections_mutex);
    shared_->connections.emplace(connection.get(), connection);
  }
  asio::post(strand, [connection] { connection->start(); });
}

std::vector<std::shared_ptr<detail::Connection>> HttpServer::Impl::connections() {
  std::vector<std::shared_ptr<detail::Connection>> result;
  std::lock_guard lock(shared_->connections_mutex);
  for (const auto& [key, weak] : shared_->connections) {
    if (auto connection = weak.lock()) result.push_back(std::move(connection));
  }
  return result;
}

bool HttpServer::Impl::wait_for_no_connections(std::chrono::milliseconds timeout) {
  std::unique_lock lock(shared_->connections_mutex);
  return shared_->connections_changed.wait_for(lock, timeout,
                                               [&] { return shared_->connections.empty(); });
}

void HttpServer::Impl::stop(std::chrono::milliseconds grace) {
  if (io_context_.get_executor().running_in_this_thread()) {
    // It would wait for itself: joining the I/O threads from one of them cannot return.
    throw std::logic_error("HttpServer::stop() called on one of its own I/O threads");
  }
  std::lock_guard lock(lifecycle_mutex_);
  if (stopped_) return;
  stopped_ = true;
  stopping_ = true;
  shared_->stopping = true;
  if (started_) {
    asio::post(acceptor_strand_, [this] {
      error_code ec;
      acceptor_.close(ec);
      retry_timer_.cancel();
    });
    for (auto& connection : connections()) {
      asio::post(connection->strand(), [connection] { connection->begin_stop(); });
    }
    if (!wait_for_no_connections(grace)) {
      for (auto& connection : connections()) {
        asio::post(connection->strand(), [connection] { connection->force_close(); });
      }
      wait_for_no_connections(kForceCloseWait);
    }
    work_.reset();
    io_context_.stop();
    for (auto& thread : threads_) thread.join();
    threads_.clear();
  }
  std::lock_guard alive_lock(shared_->alive_mutex);
  shared_->alive = false;
}

HttpServerStats HttpServer::Impl::stats() const {
  const auto& c = shared_->counters;
  HttpServerStats stats;
  stats.open_connections = c.open_connections.load();
  stats.total_connections = c.total_connections.load();
  stats.total_requests = c.total_requests.load();
  stats.peers_gone = c.peers_gone.load();
  stats.dropped_events = c.dropped_events.load();
  stats.body_bytes_reading = shared_->body_bytes.load();
  stats.rejected.max_connections = c.rejected_max_connections.load();
  stats.rejected.header_too_large = c.rejected_header_too_large.load();
  stats.rejected.body_too_large = c.rejected_body_too_large.load();
  stats.rejected.body_budget = c.rejected_body_budget.load();
  stats.rejected.bad_request = c.rejected_bad_request.load();
  stats.rejected.timeout = c.rejected_timeout.load();
  stats.rejected.origin = c.rejected_origin.load();
  stats.rejected.host = c.rejected_host.load();
  stats.rejected.tls_handshake = c.rejected_tls_handshake.load();
  return stats;
}

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() = default;

void HttpServer::start() {
  impl_->start();
}

std::uint16_t HttpServer::port() const {
  return impl_->port();
}

void HttpServer::stop(std::chrono::milliseconds grace) {
  impl_->stop(grace);
}

HttpServerStats HttpServer::stats() const {
  return impl_->stats();
}

}  // namespace execmcp::host::http
