// The response side of a relayed request: every secret's value out of the header and the body
// (gzip and deflate bodies inflated first), and whatever cannot be scrubbed refused.
#include <array>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "execmcp/egress_secrets/scrubber.hpp"
#include "proxy_session.hpp"
#include "relay_io.hpp"

namespace execmcp::egress_injector {
namespace {

using egress_secrets::SecretEvent;
using ResponseParser = http::response_parser<http::buffer_body>;
constexpr std::size_t kBodyChunk = 64 * 1024;
constexpr std::size_t kInflateSlice = 1024;

// One Scrubber per secret, in a row, so each replacement is counted for its secret.
class ScrubChain {
 public:
  explicit ScrubChain(const std::vector<egress_secrets::SecretRule>& secrets) {
    for (const auto& secret : secrets)
      links_.push_back({secret.name, egress_secrets::Scrubber({secret})});
  }
  std::string scrub(std::string text) {
    for (auto& link : links_) text = link.scrubber.scrub(text);
    return text;
  }
  std::string feed(std::string text) {
    for (auto& link : links_) text = link.scrubber.feed(text);
    return text;
  }
  std::string finish() {
    std::string carry;
    for (auto& link : links_) {
      // In this order: the operands of + are unsequenced, and finish() must see what feed() held.
      carry = link.scrubber.feed(carry);
      carry += link.scrubber.finish();
    }
    return carry;
  }
  template <class F>
  void each_count(F&& f) const {
    for (const auto& link : links_) f(link.name, link.scrubber.replacements());
  }

 private:
  struct Link {
    std::string name;
    egress_secrets::Scrubber scrubber;
  };
  std::vector<Link> links_;
};

std::string trimmed_lower(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  std::string out(text.substr(0, 64));
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Every co_await stands alone in its statement, on named values (see refuse() in
// proxy_session.cpp: GCC 12 and temporaries).
template <class Client>
asio::awaitable<void> refuse_response(Client& client, const Exchange& exchange,
                                      std::string sentence) {
  emit(exchange, SecretEvent::Kind::kRefused, "", sentence);
  std::string answer =
      simple_response(502, "Bad Gateway", "execmcp egress proxy: " + sentence, true);
  co_await write_text(client, std::move(answer), std::chrono::seconds(30));
}

// The upstream's final response header (interim 1xx ones are dropped), or nullopt.
asio::awaitable<bool> read_final_header(Upstream& upstream, std::optional<ResponseParser>& parser,
                                        const Exchange& exchange, std::string& error) {
  const auto& limits = exchange.injector->limits();
  for (;;) {
    parser.emplace();
    parser->header_limit(static_cast<std::uint32_t>(limits.response_header_bytes));
    parser->body_limit(limits.body_bytes);
    if (exchange.head) parser->skip(true);
    ErrorCode ec;
    co_await upstream_read_header(upstream, *parser, ec);
    if (ec) {
      error = exchange.target.authority() + " gave no answer" +
              (upstream.reused ? " on a reused connection: " : ": ") + ec.message();
      co_return false;
    }
    const int status = parser->get().result_int();
    if (status == 101) {
      error = exchange.target.authority() + " switched protocols, which the proxy does not relay";
      co_return false;
    }
    if (status >= 200) co_return true;
  }
}

struct Framing {
  bool has_body = false;
  bool chunked = false;
  bool inflate = false;
};

// The status line and fields the client gets, scrubbed, with the injector's framing.
std::string client_head(const ResponseParser& parser, const Framing& framing, bool head_request,
                        ScrubChain& scrub) {
  const auto& response = parser.get();
  std::string out = "HTTP/1.1 " + std::to_string(response.result_int()) + ' ' +
                    scrub.scrub(std::string(view(response.reason()))) + "\r\n";
  const auto tokens = connection_tokens(response);
  for (const auto& field : response) {
    const auto name = view(field.name_string());
    if (is_hop_by_hop(name, tokens) || iequals(name, "content-length") ||
        (framing.inflate && iequals(name, "content-encoding")))
      continue;
    out += std::string(name) + ": " + scrub.scrub(std::string(view(field.value()))) + "\r\n";
  }
  if (framing.chunked)
    out += "Transfer-Encoding: chunked\r\n";
  else if (const auto length = parser.content_length();
           length && (framing.has_body || head_request || response.result_int() == 304))
    out += "Content-Length: " + std::to_string(*length) + "\r\n";
  else if (head_request && response.count(http::field::content_length) != 0)
    out += "Content-Length: " + std::string(view(response[http::field::content_length])) + "\r\n";
  return out + "\r\n";
}

template <class Client>
asio::awaitable<bool> relay_body(Client& client, Upstream& upstream, ResponseParser& parser,
                                 const Framing& framing, ScrubChain& scrub,
                                 const Exchange& exchange) {
  const auto& limits = exchange.injector->limits();
  std::optional<egress_secrets::Inflater> inflater;
  if (framing.inflate) inflater.emplace(limits.inflated_bytes);
  std::string chunk(kBodyChunk, '\0');
  ErrorCode ec;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    co_await upstream_read(upstream, parser, ec);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return false;
    const std::string_view read(chunk.data(), chunk.size() - parser.get().body().size);
    // Compressed input goes to the inflater in small slices, so that one slice's output (about
    // 1000 times its size at most) stays far below the proxy's memory limit.
    const std::size_t slice = inflater ? kInflateSlice : read.size();
    for (std::size_t at = 0; at < read.size(); at += slice) {
      std::string data(read.substr(at, slice));
      if (inflater) {
        try {
          data = inflater->feed(data);
        } catch (const std::exception& e) {
          emit(exchange, SecretEvent::Kind::kRefused, "",
               "the compressed body from " + exchange.target.host +
                   " cannot be inflated: " + e.what());
          co_return false;
        }
      }
      data = scrub.feed(std::move(data));
      if (data.empty()) continue;
      std::string out = framing.chunked ? chunk_frame(data) : std::move(data);
      const bool sent = co_await write_text(client, std::move(out), limits.idle);
      if (!sent) co_return false;
    }
  }
  std::string rest = scrub.finish();
  if (framing.chunked) rest = (rest.empty() ? std::string() : chunk_frame(rest)) + chunk_frame("");
  if (rest.empty()) co_return true;
  const bool sent = co_await write_text(client, std::move(rest), limits.idle);
  co_return sent;
}

}  // namespace

std::string chunk_frame(std::string_view data) {
  std::array<char, 20> size{};
  const int n = std::snprintf(size.data(), size.size(), "%zx\r\n", data.size());
  std::string out(size.data(), static_cast<std::size_t>(n));
  out.append(data);
  out += "\r\n";
  return out;
}

std::string simple_response(int status, std::string_view reason, std::string_view sentence,
                            bool close) {
  const std::string body = std::string(sentence) + "\n";
  return "HTTP/1.1 " + std::to_string(status) + ' ' + std::string(reason) +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
         std::to_string(body.size()) + (close ? "\r\nConnection: close" : "") + "\r\n\r\n" + body;
}

bool is_hop_by_hop(std::string_view name, const std::vector<std::string>& connection_tokens) {
  for (const char* fixed : {"connection", "keep-alive", "proxy-connection", "te", "trailer",
                            "transfer-encoding", "upgrade", "proxy-authenticate"})
    if (iequals(name, fixed)) return true;
  for (const auto& token : connection_tokens)
    if (iequals(name, token)) return true;
  return false;
}

template <class Client>
asio::awaitable<RelayOutcome> relay_response(Client& client, Upstream& upstream,
                                             const Exchange& exchange, bool may_retry) {
  std::optional<ResponseParser> parser;
  std::string error;
  const bool answered = co_await read_final_header(upstream, parser, exchange, error);
  if (!answered && may_retry && !parser->got_some()) co_return RelayOutcome{false, false, true};
  if (!answered) {
    co_await refuse_response(client, exchange, std::move(error));
    co_return RelayOutcome{};
  }
  ScrubChain header_scrub(exchange.bundle->secrets());
  const int status = parser->get().result_int();
  if (status == 206) {
    std::string why =
        exchange.target.host + " answered 206 Partial Content, which cannot be scrubbed whole";
    co_await refuse_response(client, exchange, std::move(why));
    co_return RelayOutcome{};
  }
  Framing framing;
  framing.has_body = !exchange.head && status != 204 && status != 304;
  const std::string coding = trimmed_lower(view(parser->get()[http::field::content_encoding]));
  if (coding == "gzip" || coding == "x-gzip" || coding == "deflate")
    framing.inflate = framing.has_body;
  else if (!coding.empty() && coding != "identity") {
    std::string why = exchange.target.host + " answered with Content-Encoding " +
                      header_scrub.scrub(coding) + ", which the proxy cannot scrub";
    co_await refuse_response(client, exchange, std::move(why));
    co_return RelayOutcome{};
  }
  framing.chunked = framing.has_body && (framing.inflate || !parser->content_length());

  const auto& limits = exchange.injector->limits();
  ScrubChain body_scrub(exchange.bundle->secrets());
  RelayOutcome outcome;
  std::string head = client_head(*parser, framing, exchange.head, header_scrub);
  const bool head_sent = co_await write_text(client, std::move(head), limits.idle);
  if (!head_sent) co_return outcome;
  if (framing.has_body) {
    const bool body_sent =
        co_await relay_body(client, upstream, *parser, framing, body_scrub, exchange);
    if (!body_sent) co_return outcome;
  }
  std::map<std::string, std::size_t> counts;
  header_scrub.each_count([&](const std::string& name, std::size_t n) { counts[name] += n; });
  body_scrub.each_count([&](const std::string& name, std::size_t n) { counts[name] += n; });
  for (const auto& [name, n] : counts)
    if (n != 0) emit(exchange, SecretEvent::Kind::kScrubbed, name, std::to_string(n));
  outcome.client_ok = true;
  outcome.upstream_reusable = parser->is_done() && parser->keep_alive();
  co_return outcome;
}

template asio::awaitable<RelayOutcome> relay_response<beast::tcp_stream>(beast::tcp_stream&,
                                                                         Upstream&, const Exchange&,
                                                                         bool);
template asio::awaitable<RelayOutcome> relay_response<TlsStream>(TlsStream&, Upstream&,
                                                                 const Exchange&, bool);

}  // namespace execmcp::egress_injector
