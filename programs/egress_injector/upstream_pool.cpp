// Upstream connections through Squid's injector port, and the idle ones kept per host.
#include "upstream_pool.hpp"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

namespace execmcp::egress_injector {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
constexpr auto kConnectTimeout = std::chrono::seconds(30);

// An idle connection with something to read was closed by its upstream (or sent what nobody
// asked for): not reused.
bool still_quiet(Upstream& upstream) {
  pollfd fd{upstream.tcp().socket().native_handle(), POLLIN, 0};
  return upstream.buffer.size() == 0 && ::poll(&fd, 1, 0) == 0;
}

std::string tls_failure(const UpstreamTarget& target, SSL* ssl,
                        const boost::system::error_code& ec) {
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK)
    return "the upstream " + target.authority() +
           " failed TLS verification: " + X509_verify_cert_error_string(verify);
  return "the TLS handshake with the upstream " + target.authority() + " failed: " + ec.message();
}

}  // namespace

std::string UpstreamTarget::key() const {
  return (tls ? "https://" : "http://") + authority();
}
std::string UpstreamTarget::authority() const {
  return host + ":" + std::to_string(port);
}

std::unique_ptr<Upstream> UpstreamPool::take(const std::string& key, const BundleState* bundle) {
  const auto it = idle_.find(key);
  if (it == idle_.end()) return nullptr;
  const auto now = std::chrono::steady_clock::now();
  auto& list = it->second;
  while (!list.empty()) {
    Idle idle = std::move(list.back());
    list.pop_back();
    if (now - idle.since < max_idle_ && idle.upstream->bundle.get() == bundle &&
        still_quiet(*idle.upstream)) {
      idle.upstream->reused = true;
      return std::move(idle.upstream);
    }
  }
  idle_.erase(it);
  return nullptr;
}

void UpstreamPool::give_back(const UpstreamTarget& target, std::unique_ptr<Upstream> upstream) {
  if (per_host_ == 0 || upstream->buffer.size() != 0) return;
  auto& list = idle_[target.key()];
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(list, [&](const Idle& idle) { return now - idle.since >= max_idle_; });
  if (list.size() >= per_host_) list.pop_front();
  list.push_back(Idle{std::move(upstream), now});
}

asio::awaitable<std::unique_ptr<Upstream>> UpstreamPool::open(
    const UpstreamTarget& target, std::shared_ptr<const BundleState> bundle, bool fresh,
    std::string& error) {
  if (!fresh)
    if (auto upstream = take(target.key(), bundle.get())) co_return upstream;
  boost::system::error_code ec;
  beast::tcp_stream tcp(co_await asio::this_coro::executor);
  tcp.expires_after(kConnectTimeout);
  co_await tcp.async_connect(proxy_, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    error = "the injector cannot reach the proxy's upstream port: " + ec.message();
    co_return nullptr;
  }
  tcp.socket().set_option(asio::ip::tcp::no_delay(true), ec);  // see run_session
  ec = {};
  auto upstream = std::make_unique<Upstream>();
  upstream->bundle = bundle;
  if (!target.tls) {
    upstream->plain.emplace(std::move(tcp));
    co_return upstream;
  }
  const std::string connect =
      "CONNECT " + target.authority() + " HTTP/1.1\r\nHost: " + target.authority() + "\r\n\r\n";
  co_await asio::async_write(tcp, asio::buffer(connect),
                             asio::redirect_error(asio::use_awaitable, ec));
  http::response_parser<http::empty_body> answer;
  answer.skip(true);  // a CONNECT answer has no body
  if (!ec)
    co_await http::async_read_header(tcp, upstream->buffer, answer,
                                     asio::redirect_error(asio::use_awaitable, ec));
  if (ec || answer.get().result_int() != 200 || upstream->buffer.size() != 0) {
    error =
        "the proxy did not open a tunnel to " + target.authority() +
        (ec ? ": " + ec.message() : " (status " + std::to_string(answer.get().result_int()) + ")");
    co_return nullptr;
  }
  upstream->tls.emplace(std::move(tcp), bundle->client_context());
  SSL* ssl = upstream->tls->native_handle();
  if (SSL_set1_host(ssl, target.host.c_str()) != 1 ||
      SSL_set_tlsext_host_name(ssl, target.host.c_str()) != 1) {
    error = "cannot set up TLS for the upstream " + target.authority();
    co_return nullptr;
  }
  ++handshakes_;
  co_await upstream->tls->async_handshake(asio::ssl::stream_base::client,
                                          asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    error = tls_failure(target, ssl, ec);
    co_return nullptr;
  }
  co_return upstream;
}

}  // namespace execmcp::egress_injector
