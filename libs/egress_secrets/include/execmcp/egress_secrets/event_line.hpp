// The line the injector writes on its stdout (the proxy container's log) for each decision, and
// its parser in the backend's log follower. One line < 4 KiB, fields escaped, never a value:
//   execmcp-secret <label> <event> <secret> <method> <host> <path> <detail>
// event: injected | withheld | scrubbed | refused; fields with a byte outside [!-~] or '%' are
// percent-encoded; an empty field is "-"; path is without its query and cut to 256 bytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace execmcp::egress_secrets {

struct SecretEvent {
  enum class Kind { kInjected, kWithheld, kScrubbed, kRefused };
  Kind kind = Kind::kInjected;
  std::string label;
  std::string secret;  // "-" / "" for a refusal that names none
  std::string method;
  std::string host;
  std::string path;
  std::string detail;  // withheld: why; scrubbed: count; refused: the sentence
};

[[nodiscard]] std::string format_event_line(const SecretEvent& event);
[[nodiscard]] std::optional<SecretEvent> parse_event_line(std::string_view line);

}  // namespace execmcp::egress_secrets
