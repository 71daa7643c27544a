// Small I/O pieces the request and response relays share: timeouts, whole writes, chunk framing,
// simple answers, hop-by-hop header names, and the upstream's two stream kinds behind one call.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "upstream_pool.hpp"

namespace execmcp::egress_injector {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using ErrorCode = boost::system::error_code;

inline auto ec_token(ErrorCode& ec) {
  return asio::redirect_error(asio::use_awaitable, ec);
}

template <class Stream>
void arm(Stream& stream, std::chrono::seconds timeout) {
  beast::get_lowest_layer(stream).expires_after(timeout);
}

template <class Stream>
asio::awaitable<bool> write_text(Stream& stream, std::string text, std::chrono::seconds timeout) {
  ErrorCode ec;
  arm(stream, timeout);
  co_await asio::async_write(stream, asio::buffer(text), ec_token(ec));
  co_return !ec;
}

// One chunk of a chunked body ("" for the last one, which has no trailers).
std::string chunk_frame(std::string_view data);

// A whole answer of the injector's own: text/plain, the sentence and a newline.
std::string simple_response(int status, std::string_view reason, std::string_view sentence,
                            bool close);

inline std::string_view view(beast::string_view text) {
  return {text.data(), text.size()};
}

inline bool iequals(std::string_view a, std::string_view b) {
  return beast::iequals(beast::string_view(a.data(), a.size()),
                        beast::string_view(b.data(), b.size()));
}

// Lower-case names of the tokens of every Connection field of a header.
template <class Fields>
std::vector<std::string> connection_tokens(const Fields& fields) {
  std::vector<std::string> tokens;
  for (const auto& field : fields) {
    if (!iequals(view(field.name_string()), "connection")) continue;
    std::string token;
    for (const char c : view(field.value())) {
      if (c == ',') {
        if (!token.empty()) tokens.push_back(std::move(token));
        token.clear();
      } else if (c != ' ' && c != '\t') {
        token += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      }
    }
    if (!token.empty()) tokens.push_back(std::move(token));
  }
  return tokens;
}

// Hop-by-hop fields (RFC 9110 7.6.1) and those the injector frames or decides itself.
bool is_hop_by_hop(std::string_view name, const std::vector<std::string>& connection_tokens);

inline asio::awaitable<std::size_t> upstream_write(Upstream& upstream, std::string text,
                                                   ErrorCode& ec) {
  upstream.tcp().expires_after(std::chrono::seconds(120));
  if (upstream.tls)
    co_return co_await asio::async_write(*upstream.tls, asio::buffer(text), ec_token(ec));
  co_return co_await asio::async_write(*upstream.plain, asio::buffer(text), ec_token(ec));
}

template <class Parser>
asio::awaitable<std::size_t> upstream_read_header(Upstream& upstream, Parser& parser,
                                                  ErrorCode& ec) {
  upstream.tcp().expires_after(std::chrono::seconds(120));
  if (upstream.tls)
    co_return co_await http::async_read_header(*upstream.tls, upstream.buffer, parser,
                                               ec_token(ec));
  co_return co_await http::async_read_header(*upstream.plain, upstream.buffer, parser,
                                             ec_token(ec));
}

template <class Parser>
asio::awaitable<std::size_t> upstream_read(Upstream& upstream, Parser& parser, ErrorCode& ec) {
  upstream.tcp().expires_after(std::chrono::seconds(120));
  if (upstream.tls)
    co_return co_await http::async_read(*upstream.tls, upstream.buffer, parser, ec_token(ec));
  co_return co_await http::async_read(*upstream.plain, upstream.buffer, parser, ec_token(ec));
}

}  // namespace execmcp::egress_injector
