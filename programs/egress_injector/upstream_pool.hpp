// The injector's connections to upstreams, all made through Squid's injector port (the injector
// never resolves a name or connects out itself): a CONNECT tunnel and TLS verified for the host,
// or a plain connection to that port for plain HTTP; and a few idle ones kept per host, so that
// the usual request pays one upstream handshake at most.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "bundle_state.hpp"

namespace execmcp::egress_injector {

using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

struct Upstream {
  std::optional<boost::beast::tcp_stream> plain;  // plain HTTP: the proxy connection itself
  std::optional<TlsStream> tls;                   // HTTPS: TLS inside a CONNECT tunnel
  boost::beast::flat_buffer buffer;
  std::shared_ptr<const BundleState> bundle;  // whose client context the TLS uses
  bool reused = false;
  boost::beast::tcp_stream& tcp() { return tls ? boost::beast::get_lowest_layer(*tls) : *plain; }
};

struct UpstreamTarget {
  std::string host;  // lower case
  std::uint16_t port = 443;
  bool tls = true;
  [[nodiscard]] std::string key() const;
  [[nodiscard]] std::string authority() const;
};

class UpstreamPool {
 public:
  UpstreamPool(boost::asio::ip::tcp::endpoint proxy, std::size_t per_host,
               std::chrono::seconds max_idle)
      : proxy_(proxy), per_host_(per_host), max_idle_(max_idle) {}

  // A connection to `target` for `bundle`: an idle one still open (unless `fresh`), or a new one.
  // Nullptr with
  // `error` set (a sentence naming the host, never a value) when none can be made.
  boost::asio::awaitable<std::unique_ptr<Upstream>> open(const UpstreamTarget& target,
                                                         std::shared_ptr<const BundleState> bundle,
                                                         bool fresh, std::string& error);
  // Keeps a connection whose last response was read whole and which may be reused.
  void give_back(const UpstreamTarget& target, std::unique_ptr<Upstream> upstream);
  void clear() { idle_.clear(); }
  [[nodiscard]] std::size_t handshakes() const noexcept { return handshakes_; }

 private:
  struct Idle {
    std::unique_ptr<Upstream> upstream;
    std::chrono::steady_clock::time_point since;
  };
  std::unique_ptr<Upstream> take(const std::string& key, const BundleState* bundle);
  boost::asio::ip::tcp::endpoint proxy_;
  std::size_t per_host_;
  std::chrono::seconds max_idle_;
  std::map<std::string, std::deque<Idle>> idle_;
  std::size_t handshakes_ = 0;
};

}  // namespace execmcp::egress_injector
