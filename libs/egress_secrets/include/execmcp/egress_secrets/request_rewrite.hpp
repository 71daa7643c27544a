// The injector's decision for one request to an intercepted host: which secrets' placeholders it
// replaces with their values, which it leaves (withheld), and the header changes every intercepted
// request gets. Pure: no I/O, no logging.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "execmcp/egress_secrets/secret_rule.hpp"

namespace execmcp::egress_secrets {

struct RequestHead {
  std::string method;  // as received
  std::string target;  // origin-form ("/path?query"); absolute-form for plain HTTP is reduced
                       // to origin-form by the caller
  std::vector<std::pair<std::string, std::string>> headers;  // in order, names as received
};

struct SecretOutcome {
  std::string secret;  // the rule's name
  bool injected = false;
  std::string why;  // when withheld: "host", "method", "path", "header", "plain http",
                    // "path not canonical", "in the request target"
};

struct RewriteResult {
  // Set when the request must not be forwarded at all (the caller answers 400 with it): both
  // Content-Length and Transfer-Encoding, two Content-Lengths, an Upgrade, a Host that is not the
  // intercepted host. Never quotes a value.
  std::optional<std::string> refusal;
  std::vector<SecretOutcome> outcomes;  // one per secret whose placeholder the request carried
};

// The path the rules match against: the target before '?', or nullopt when it is not canonical
// (dot segments, "//", '\\', or %2e %2f %5c in any case): such a path is never injected into.
[[nodiscard]] std::optional<std::string_view> canonical_path(std::string_view target);

// Applies `secrets` to `head` for a request to `host` (lower-case, the CONNECT or Host name) over
// TLS (`tls`) or plain HTTP. A secret is injected when host, method, path prefix (on a segment
// boundary: "/a" matches "/a" and "/a/b", not "/ab"), header name and transport all match: in each
// matching header value its placeholder is replaced by its value, also inside
// `Authorization: Basic` / `Proxy-Authorization: Basic` credentials (decoded, replaced, encoded
// again). Otherwise its placeholder stays and the outcome says why. Request bodies are never
// touched. Every intercepted request also gets `Accept-Encoding: identity` and loses `Range`,
// `If-Range` and `TE`, so that responses can be scrubbed.
[[nodiscard]] RewriteResult rewrite_request(RequestHead& head, std::string_view host, bool tls,
                                            const std::vector<SecretRule>& secrets);

// Replaces `from` with `to` (equal length) inside the decoded credentials of a Basic
// authorization value ("Basic <b64>"); nullopt when the value is not Basic, does not decode
// strictly, or does not contain `from`.
[[nodiscard]] std::optional<std::string> replace_in_basic(std::string_view authorization,
                                                          std::string_view from,
                                                          std::string_view to);

}  // namespace execmcp::egress_secrets
