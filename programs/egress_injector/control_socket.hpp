// The injector's control socket: how the bundle (the secrets' values among it) reaches the
// serving process without a file, an environment variable or a command line. A Unix socket in a
// directory only the proxy's user can enter; the backend runs `execmcp-egress-injector --receive`
// as that user in the container (docker exec) with the bundle on its stdin.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <string>

#include "injector.hpp"

namespace execmcp::egress_injector {

inline constexpr const char* kDefaultControlPath = "/tmp/execmcp-injector/ctl";

class ControlSocket {
 public:
  // Makes the directory (0700; an existing one must be ours and closed to others) and listens.
  // Throws std::runtime_error naming the path.
  ControlSocket(boost::asio::io_context& io, std::string path, Injector& injector);
  // Takes bundles one connection at a time; each replaces the one served with (a re-delivery after
  // a restart). Answers `ok <n> secrets` or `error: <what>` (never a value).
  boost::asio::awaitable<void> serve();

 private:
  boost::asio::awaitable<std::string> take_bundle(
      boost::asio::local::stream_protocol::socket& peer);
  std::string path_;
  Injector& injector_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
};

// --receive: the bundle from stdin to the serving process; prints its answer. Exit status 0 on
// `ok`, 1 when refused or unreachable, 2 for a bundle past kMaxBundleBytes.
int receive_bundle(const std::string& path);

}  // namespace execmcp::egress_injector
