// What every session of the serving injector shares: the current bundle, the upstream pool, the
// session count, and the event lines on stdout.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "bundle_state.hpp"
#include "execmcp/egress_secrets/event_line.hpp"
#include "upstream_pool.hpp"

namespace execmcp::egress_injector {

struct Limits {
  std::size_t max_sessions = 256;
  std::size_t request_header_bytes = 32 * 1024;
  std::size_t response_header_bytes = 64 * 1024;
  std::uint64_t body_bytes = std::uint64_t{8} << 30;  // either direction
  std::size_t inflated_bytes = std::size_t{1} << 30;  // one response, after inflating
  std::chrono::seconds idle{120};                     // any read or write
  std::chrono::seconds keep_alive{60};                // between a client's requests
};

class Injector {
 public:
  Injector(boost::asio::ip::tcp::endpoint upstream_proxy, std::size_t pool_per_host)
      : pool_(upstream_proxy, pool_per_host, std::chrono::seconds(30)) {}

  [[nodiscard]] std::shared_ptr<const BundleState> bundle() const { return bundle_; }
  void replace_bundle(std::shared_ptr<const BundleState> bundle) {
    bundle_ = std::move(bundle);
    pool_.clear();
  }
  UpstreamPool& pool() noexcept { return pool_; }
  const Limits& limits() const noexcept { return limits_; }
  std::size_t& sessions() noexcept { return sessions_; }

 private:
  std::shared_ptr<const BundleState> bundle_;
  UpstreamPool pool_;
  Limits limits_;
  std::size_t sessions_ = 0;
};

// Writes one event line on stdout, whole (one write of less than PIPE_BUF bytes, so Squid's lines
// on the same pipe never interleave with it).
void emit_event(const egress_secrets::SecretEvent& event);

}  // namespace execmcp::egress_injector
