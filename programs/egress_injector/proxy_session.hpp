// One connection from Squid to the injector: a CONNECT to an intercepted host (the injector then
// is the TLS server for that host) or plain HTTP requests in absolute form; each request is
// rewritten (rewrite_request) and relayed to the upstream through Squid's injector port.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <string>

#include "injector.hpp"

namespace execmcp::egress_injector {

boost::asio::awaitable<void> run_session(boost::asio::ip::tcp::socket socket, Injector& injector);

// What the response relay needs to know of the request it answers.
struct Exchange {
  Injector* injector = nullptr;
  std::shared_ptr<const BundleState> bundle;
  UpstreamTarget target;
  std::string method;
  std::string path;  // the target without its query, for event lines
  bool head = false;
};

void emit(const Exchange& exchange, egress_secrets::SecretEvent::Kind kind, std::string secret,
          std::string detail);

struct RelayOutcome {
  bool client_ok = false;          // the whole response reached the client
  bool upstream_reusable = false;  // read whole, and the upstream keeps the connection
  bool no_answer = false;          // (may_retry) not a byte came back: nothing was sent either
};

// Reads the upstream's response (skipping interim ones), refuses what cannot be scrubbed (a 206,
// a content-coding other than gzip/deflate) with a 502, and sends the rest to the client with
// every secret's value replaced by its placeholder, in the header and the body. With `may_retry`
// (a body-less request on a pooled connection), an upstream that closed without a byte is left
// to the caller (`no_answer`), who sends the request again on a new connection.
template <class Client>
boost::asio::awaitable<RelayOutcome> relay_response(Client& client, Upstream& upstream,
                                                    const Exchange& exchange, bool may_retry);

}  // namespace execmcp::egress_injector
