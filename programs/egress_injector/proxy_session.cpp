// A session per connection from Squid (the shape of Beast's advanced server): the CONNECT or the
// first plain request, then each request of the connection: rewritten, relayed, answered.
#include "proxy_session.hpp"

#include <charconv>
#include <cstdint>
#include <optional>

#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/this_coro.hpp>

#include "execmcp/egress_secrets/request_rewrite.hpp"
#include "relay_io.hpp"

namespace execmcp::egress_injector {
namespace {

using egress_secrets::SecretEvent;
using RequestParser = http::request_parser<http::buffer_body>;
constexpr std::size_t kBodyChunk = 64 * 1024;
constexpr const char* kNoBundle =
    "the secrets of this agent have not been delivered to the proxy yet "
    "(or the proxy restarted); the request was not forwarded. Retry in a moment.";

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool is_host_name(std::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  for (const char c : host)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  return true;
}

// "host:port" (CONNECT) or "host[:port]" (a plain URL's authority), lower-cased.
std::optional<UpstreamTarget> parse_authority(std::string_view authority, bool tls,
                                              bool port_required) {
  UpstreamTarget target;
  target.tls = tls;
  target.port = tls ? 443 : 80;
  const auto colon = authority.rfind(':');
  if (colon != std::string_view::npos) {
    const auto digits = authority.substr(colon + 1);
    unsigned port = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (ec != std::errc() || end != digits.data() + digits.size() || port == 0 || port > 65535)
      return std::nullopt;
    target.port = static_cast<std::uint16_t>(port);
    authority = authority.substr(0, colon);
  } else if (port_required) {
    return std::nullopt;
  }
  target.host = lower(authority);
  if (!is_host_name(target.host)) return std::nullopt;
  return target;
}

// Splits a plain request's absolute-form target into its upstream and origin-form target.
std::optional<std::pair<UpstreamTarget, std::string>> parse_absolute(std::string_view target) {
  constexpr std::string_view kScheme = "http://";
  if (target.size() < kScheme.size() || lower(target.substr(0, kScheme.size())) != kScheme)
    return std::nullopt;
  target.remove_prefix(kScheme.size());
  const auto slash = target.find_first_of("/?");
  const auto authority = target.substr(0, slash);
  if (authority.find('@') != std::string_view::npos) return std::nullopt;
  auto upstream = parse_authority(authority, false, false);
  if (!upstream) return std::nullopt;
  std::string origin = slash == std::string_view::npos ? "/" : std::string(target.substr(slash));
  if (origin.front() == '?') origin.insert(0, "/");
  return std::make_pair(*upstream, origin);
}

std::string path_of(std::string_view target) {
  return std::string(target.substr(0, target.find('?')));
}

// GCC 12 destroys some temporaries of a full-expression holding a co_await twice (seen with a
// conditional operator): every co_await here stands alone in its statement, on named values.
template <class Client>
asio::awaitable<void> refuse(Client& client, const Exchange& exchange, int status,
                             std::string_view reason, std::string sentence) {
  emit(exchange, SecretEvent::Kind::kRefused, "", sentence);
  std::string answer = simple_response(status, reason, "execmcp egress proxy: " + sentence, true);
  co_await write_text(client, std::move(answer), std::chrono::seconds(30));
}

// The request line and header sent upstream: the rewritten fields without hop-by-hop ones, with
// the framing of the body the client sends.
std::string upstream_head(const egress_secrets::RequestHead& head, const RequestParser& parser,
                          const UpstreamTarget& target) {
  std::string out = head.method + ' ' +
                    (target.tls ? head.target : "http://" + target.authority() + head.target) +
                    " HTTP/1.1\r\n";
  const auto tokens = connection_tokens(parser.get());
  for (const auto& [name, value] : head.headers) {
    if (is_hop_by_hop(name, tokens) || iequals(name, "expect") || iequals(name, "content-length"))
      continue;
    // A plain request came through Squid, whose Via would make Squid see a loop on the way out.
    if (!target.tls && iequals(name, "via")) continue;
    out += name + ": " + value + "\r\n";
  }
  if (parser.chunked())
    out += "Transfer-Encoding: chunked\r\n";
  else if (const auto length = parser.content_length())
    out += "Content-Length: " + std::to_string(*length) + "\r\n";
  return out + "\r\n";
}

// Streams the client's request body to the upstream, reframed (chunked stays chunked).
template <class Client>
asio::awaitable<bool> relay_request_body(Client& client, beast::flat_buffer& buffer,
                                         RequestParser& parser, Upstream& upstream,
                                         const Limits& limits) {
  std::string chunk(kBodyChunk, '\0');
  const bool chunked = parser.chunked();
  ErrorCode ec;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    arm(client, limits.idle);
    co_await http::async_read(client, buffer, parser, ec_token(ec));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return false;
    const auto size = chunk.size() - parser.get().body().size;
    if (size == 0) continue;
    const std::string_view data(chunk.data(), size);
    std::string out = chunked ? chunk_frame(data) : std::string(data);
    co_await upstream_write(upstream, std::move(out), ec);
    if (ec) co_return false;
  }
  if (chunked) {
    std::string last = chunk_frame("");
    co_await upstream_write(upstream, std::move(last), ec);
  }
  co_return !ec;
}

// An upstream connection (a pooled one unless `fresh`) with the request sent on it, body included;
// nullptr with `error` when either fails.
template <class Client>
asio::awaitable<std::unique_ptr<Upstream>> send_request(Client& client, beast::flat_buffer& buffer,
                                                        RequestParser& parser, Injector& injector,
                                                        const Exchange& exchange,
                                                        const std::string& request_head, bool fresh,
                                                        std::string& error) {
  auto upstream = co_await injector.pool().open(exchange.target, exchange.bundle, fresh, error);
  if (!upstream) co_return nullptr;
  ErrorCode ec;
  std::string text = request_head;
  co_await upstream_write(*upstream, std::move(text), ec);
  bool sent = !ec;
  if (sent)
    sent = co_await relay_request_body(client, buffer, parser, *upstream, injector.limits());
  if (sent) co_return upstream;
  error = "the request to " + exchange.target.authority() + " could not be sent whole";
  co_return nullptr;
}

// The outcomes of one kind: the withheld ones when the request is read, the injected ones once
// the request carrying the value has gone to the upstream (a request that could not be sent
// injected nothing).
void emit_outcomes(const Exchange& exchange,
                   const std::vector<egress_secrets::SecretOutcome>& outcomes, bool injected) {
  for (const auto& outcome : outcomes)
    if (outcome.injected == injected)
      emit(exchange, injected ? SecretEvent::Kind::kInjected : SecretEvent::Kind::kWithheld,
           outcome.secret, injected ? "" : outcome.why);
}

// One request on the client connection, its header already read: returns whether the connection
// may carry another.
template <class Client>
asio::awaitable<bool> exchange_one(Client& client, beast::flat_buffer& buffer,
                                   RequestParser& parser, Injector& injector,
                                   const std::optional<UpstreamTarget>& tunnel) {
  auto& request = parser.get();
  Exchange exchange{&injector,
                    injector.bundle(),
                    {},
                    std::string(view(request.method_string())),
                    path_of(view(request.target())),
                    request.method() == http::verb::head};
  std::string origin_target;
  if (tunnel) {
    exchange.target = *tunnel;
    origin_target = std::string(view(request.target()));
    if (origin_target.empty() || origin_target.front() != '/') {
      co_await refuse(client, exchange, 400, "Bad Request",
                      "a request inside a tunnel must name a path");
      co_return false;
    }
  } else {
    auto absolute = parse_absolute(view(request.target()));
    if (!absolute) {
      co_await refuse(client, exchange, 400, "Bad Request",
                      "a plain request must name an http:// URL");
      co_return false;
    }
    exchange.target = absolute->first;
    origin_target = std::move(absolute->second);
    exchange.path = path_of(origin_target);
  }
  if (!exchange.bundle) {
    co_await refuse(client, exchange, 503, "Service Unavailable", kNoBundle);
    co_return false;
  }
  if (!exchange.bundle->intercepts(exchange.target.host)) {
    std::string why = exchange.target.host + " is not a host any secret of this agent names";
    co_await refuse(client, exchange, 502, "Bad Gateway", std::move(why));
    co_return false;
  }

  egress_secrets::RequestHead head{exchange.method, origin_target, {}};
  for (const auto& field : request)
    head.headers.emplace_back(std::string(view(field.name_string())),
                              std::string(view(field.value())));
  const auto result = egress_secrets::rewrite_request(
      head, exchange.target.host, exchange.target.tls, exchange.bundle->secrets());
  if (result.refusal) {
    std::string why = *result.refusal;
    co_await refuse(client, exchange, 400, "Bad Request", std::move(why));
    co_return false;
  }
  emit_outcomes(exchange, result.outcomes, false);

  if (iequals(view(request[http::field::expect]), "100-continue") && !parser.is_done()) {
    std::string go_on = "HTTP/1.1 100 Continue\r\n\r\n";
    const bool sent = co_await write_text(client, std::move(go_on), injector.limits().idle);
    if (!sent) co_return false;
  }
  const std::string request_head = upstream_head(head, parser, exchange.target);
  const bool replayable = parser.is_done();  // no body: the request can be sent again
  std::string error;
  auto upstream =
      co_await send_request(client, buffer, parser, injector, exchange, request_head, false, error);
  RelayOutcome outcome;
  if (upstream)
    outcome = co_await relay_response(client, *upstream, exchange, replayable && upstream->reused);
  if (upstream && outcome.no_answer) {  // a pooled connection its upstream had just closed
    upstream = co_await send_request(client, buffer, parser, injector, exchange, request_head, true,
                                     error);
    if (upstream) outcome = co_await relay_response(client, *upstream, exchange, false);
  }
  if (!upstream) {
    co_await refuse(client, exchange, 502, "Bad Gateway", std::move(error));
    co_return false;
  }
  emit_outcomes(exchange, result.outcomes, true);
  if (outcome.upstream_reusable) injector.pool().give_back(exchange.target, std::move(upstream));
  co_return outcome.client_ok&& parser.keep_alive();
}

template <class Client>
asio::awaitable<void> serve_requests(Client& client, beast::flat_buffer& buffer,
                                     std::unique_ptr<RequestParser> first, Injector& injector,
                                     const std::optional<UpstreamTarget>& tunnel) {
  for (auto parser = std::move(first);; parser.reset()) {
    if (!parser) {
      parser = std::make_unique<RequestParser>();
      parser->header_limit(static_cast<std::uint32_t>(injector.limits().request_header_bytes));
      parser->body_limit(injector.limits().body_bytes);
      ErrorCode ec;
      arm(client, injector.limits().keep_alive);
      co_await http::async_read_header(client, buffer, *parser, ec_token(ec));
      if (ec) co_return;
    }
    const bool more = co_await exchange_one(client, buffer, *parser, injector, tunnel);
    if (!more) co_return;
  }
}

// After `CONNECT host:port`: the TLS server for that host, then its requests.
asio::awaitable<void> serve_tunnel(beast::tcp_stream client, beast::flat_buffer& buffer,
                                   const UpstreamTarget& target, Injector& injector) {
  Exchange exchange{&injector, injector.bundle(), target, "CONNECT", "", false};
  if (!exchange.bundle) {
    co_await refuse(client, exchange, 503, "Service Unavailable", kNoBundle);
    co_return;
  }
  if (!exchange.bundle->intercepts(target.host)) {
    std::string why = target.host + " is not a host any secret of this agent names";
    co_await refuse(client, exchange, 502, "Bad Gateway", std::move(why));
    co_return;
  }
  std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
  const bool open = co_await write_text(client, std::move(established), std::chrono::seconds(30));
  if (!open) co_return;
  TlsStream tls(std::move(client), exchange.bundle->server_context());
  if (!exchange.bundle->prepare_server(tls.native_handle(), target.host)) co_return;
  ErrorCode ec;
  arm(tls, std::chrono::seconds(30));
  const auto used =
      co_await tls.async_handshake(asio::ssl::stream_base::server, buffer.data(), ec_token(ec));
  if (ec) {
    emit(exchange, SecretEvent::Kind::kRefused, "",
         "the client's TLS handshake failed: " + ec.message());
    co_return;
  }
  buffer.consume(used);
  co_await serve_requests(tls, buffer, nullptr, injector, target);
  arm(tls, std::chrono::seconds(5));
  co_await tls.async_shutdown(ec_token(ec));
}

}  // namespace

void emit(const Exchange& exchange, SecretEvent::Kind kind, std::string secret,
          std::string detail) {
  SecretEvent event;
  event.kind = kind;
  event.label = exchange.bundle ? exchange.bundle->label() : "";
  event.secret = std::move(secret);
  event.method = exchange.method;
  event.host = exchange.target.host;
  event.path = exchange.path;
  event.detail = std::move(detail);
  emit_event(event);
}

asio::awaitable<void> run_session(asio::ip::tcp::socket socket, Injector& injector) {
  // A response goes out as a head and body pieces: without this, Nagle's algorithm holds each
  // piece until the previous one is acknowledged (a delayed ACK: 40 ms).
  boost::system::error_code ignored;
  socket.set_option(asio::ip::tcp::no_delay(true), ignored);
  beast::tcp_stream client(std::move(socket));
  beast::flat_buffer buffer;
  auto parser = std::make_unique<RequestParser>();
  parser->header_limit(static_cast<std::uint32_t>(injector.limits().request_header_bytes));
  parser->body_limit(injector.limits().body_bytes);
  ErrorCode ec;
  arm(client, std::chrono::seconds(30));
  co_await http::async_read_header(client, buffer, *parser, ec_token(ec));
  if (ec) co_return;
  if (parser->get().method() != http::verb::connect) {
    co_await serve_requests(client, buffer, std::move(parser), injector, std::nullopt);
    co_return;
  }
  const auto target = parse_authority(view(parser->get().target()), true, true);
  if (!target) {
    std::string answer =
        simple_response(400, "Bad Request", "execmcp egress proxy: CONNECT needs host:port", true);
    co_await write_text(client, std::move(answer), std::chrono::seconds(30));
    co_return;
  }
  co_await serve_tunnel(std::move(client), buffer, *target, injector);
}

}  // namespace execmcp::egress_injector
