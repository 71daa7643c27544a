// http_wire: response heads, SSE and chunk framing.
#include "transport/http/http_wire.hpp"

#include <gtest/gtest.h>

namespace execmcp::host::http {
namespace {

TEST(HttpWire, ResponseHeadHasStatusHeadersAndFraming) {
  EXPECT_EQ(
      response_head(200, {{"Content-Type", "application/json"}}, Framing::kContentLength, 7, false),
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n");
  EXPECT_EQ(response_head(200, {}, Framing::kChunked, 0, true),
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(response_head(404, {}, Framing::kCloseDelimited, 0, false),
            "HTTP/1.1 404 Not Found\r\n\r\n");
}

TEST(HttpWire, HeadersThatBreakTheMessageOrItsFramingAreLeftOut) {
  const std::string head = response_head(200,
                                         {{"X-A", "ok"},
                                          {"X-B", "evil\r\nX-Injected: 1"},
                                          {"X C", "v"},
                                          {"", "v"},
                                          {"transfer-encoding", "chunked"},
                                          {"CONNECTION", "keep-alive"},
                                          {"Content-Length", "5"},
                                          {"X-Nul", std::string("a\0b", 3)}},
                                         Framing::kContentLength, 0, false);
  EXPECT_EQ(head, "HTTP/1.1 200 OK\r\nX-A: ok\r\nContent-Length: 0\r\n\r\n");
}

TEST(HttpWire, SseEventFraming) {
  EXPECT_EQ(sse_event("{\"a\":1}", false), "event: message\ndata: {\"a\":1}\n\n");
  EXPECT_EQ(sse_event("{}", true), "19\r\nevent: message\ndata: {}\n\n\r\n");
  // A line break in the data (against the contract) cannot end the event early.
  EXPECT_EQ(sse_event("a\nb\r\nc\rd", false),
            "event: message\ndata: a\ndata: b\ndata: c\ndata: d\n\n");
  EXPECT_EQ(last_chunk(), "0\r\n\r\n");
}

TEST(HttpWire, ErrorResponseIsPlainTextWithLength) {
  EXPECT_EQ(error_response(503, "busy\n", true, {{"Retry-After", "1"}}),
            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain; "
            "charset=utf-8\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbusy\n");
}

}  // namespace
}  // namespace execmcp::host::http
