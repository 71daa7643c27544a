// Response heads, chunk and SSE framing (see http_wire.hpp).
#include "transport/http/http_wire.hpp"

#include <boost/beast/http/status.hpp>

#include <algorithm>
#include <cstdio>

namespace execmcp::host::http {
namespace {

bool is_framing_header(std::string_view name) {
  auto equals = [&](std::string_view other) {
    return name.size() == other.size() &&
           std::equal(name.begin(), name.end(), other.begin(), [](char a, char b) {
             return (a >= 'A' && a <= 'Z' ? static_cast<char>(a - 'A' + 'a') : a) == b;
           });
  };
  return equals("content-length") || equals("transfer-encoding") || equals("connection");
}

std::string hex(std::size_t n) {
  char buffer[32];
  const int length = std::snprintf(buffer, sizeof buffer, "%zx", n);
  return std::string(buffer, static_cast<std::size_t>(length));
}

}  // namespace

bool is_header_name(std::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

bool is_header_value(std::string_view value) {
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

std::string response_head(int status, const Headers& headers, Framing framing,
                          std::size_t content_length, bool close) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " ";
  const auto reason =
      boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status));
  head.append(reason.data(), reason.size());
  head += "\r\n";
  for (const auto& [name, value] : headers) {
    if (!is_header_name(name) || !is_header_value(value) || is_framing_header(name)) continue;
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  switch (framing) {
    case Framing::kContentLength:
      head += "Content-Length: " + std::to_string(content_length) + "\r\n";
      break;
    case Framing::kChunked:
      head += "Transfer-Encoding: chunked\r\n";
      break;
    case Framing::kCloseDelimited:
      break;
  }
  if (close) head += "Connection: close\r\n";
  head += "\r\n";
  return head;
}

std::string sse_event(std::string_view data, bool chunked) {
  // Data is one JSON line by contract; should it hold a line break anyway, each line becomes its
  // own "data:" field (which SSE joins back with '\n') instead of breaking the framing.
  std::string event = "event: message\n";
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = data.find_first_of("\r\n", start);
    event += "data: ";
    event += data.substr(start, end == std::string_view::npos ? end : end - start);
    event += '\n';
    if (end == std::string_view::npos) break;
    start = end + ((data[end] == '\r' && end + 1 < data.size() && data[end + 1] == '\n') ? 2 : 1);
  }
  event += '\n';
  if (!chunked) return event;
  return hex(event.size()) + "\r\n" + event + "\r\n";
}

std::string_view last_chunk() {
  return "0\r\n\r\n";
}

std::string error_response(int status, std::string_view body, bool close, const Headers& extra) {
  Headers headers = extra;
  headers.emplace_back("Content-Type", "text/plain; charset=utf-8");
  std::string message = response_head(status, headers, Framing::kContentLength, body.size(), close);
  message += body;
  return message;
}

}  // namespace execmcp::host::http
