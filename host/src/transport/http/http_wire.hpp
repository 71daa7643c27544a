// What the server writes on the wire, as plain strings: status line and headers, chunk and SSE
// framing, and the short error bodies that say what to do.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "transport/http/http_exchange.hpp"

namespace execmcp::host::http {

// How the body of a response is delimited.
enum class Framing { kContentLength, kChunked, kCloseDelimited };

// Status line and headers, ending with the empty line. Handler headers that would break the
// framing (content-length, transfer-encoding, connection) or the message (a name that is not a
// token, a value with CR, LF or NUL) are left out.
[[nodiscard]] std::string response_head(int status, const Headers& headers, Framing framing,
                                        std::size_t content_length, bool close);

// One SSE event ("event: message\ndata: <data>\n\n"), as a chunk when chunked.
[[nodiscard]] std::string sse_event(std::string_view data, bool chunked);
// The last chunk of a chunked body.
[[nodiscard]] std::string_view last_chunk();

[[nodiscard]] bool is_header_name(std::string_view name);
[[nodiscard]] bool is_header_value(std::string_view value);

// A plain-text error response (whole message) with its status line.
[[nodiscard]] std::string error_response(int status, std::string_view body, bool close,
                                         const Headers& extra = {});

}  // namespace execmcp::host::http
