// The optional backend interface "execmcp.secret_events/1": a backend whose network proxy holds
// secrets for the sandbox (the sandbox holds placeholders) tells the host what the proxy did with
// each placeholder it saw, so the host can audit it. Never carries a secret's value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::sdk {

// The id a backend answers in ExecutorBackend::query_interface() with a SecretEvents*.
inline constexpr std::string_view kSecretEventsId = "execmcp.secret_events/1";

// One decision of the proxy's. Its text comes from the sandbox's request (host, method, path):
// the backend bounds and escapes it (log_text.hpp) before it crosses.
struct SecretEvent {
  enum class Kind : std::uint8_t {
    kInjected,  // the value went to the upstream in place of the placeholder
    kWithheld,  // the placeholder went out unchanged (wrong host, method, path, header, ...)
    kScrubbed,  // the value came back in a response and was replaced by the placeholder
    kRefused,   // the request or its response was refused (e.g. a response it cannot scrub)
  };
  Kind kind = Kind::kInjected;
  std::string secret;  // the secret's name (the variable the sandbox sees); "" when none
  std::string host;    // at most 255 bytes
  std::string method;  // "GET", ...
  std::string path;    // the request's path without its query, at most 256 bytes
  std::string detail;  // withheld: why ("host", "method", "path", ...); refused: the sentence
  std::int64_t unix_ms = 0;
  // Events before this one that were not delivered (beyond the backend's budget).
  std::uint64_t dropped_before = 0;
};

// The host's side. on_secret_event() is called from a thread of the backend's, one event at a
// time, and must return soon and never call the backend.
class SecretEventSink {
 public:
  virtual void on_secret_event(const SecretEvent& event) noexcept = 0;

 protected:
  ~SecretEventSink() = default;
};

// Offered by a backend that reports its proxy's secret decisions. Owned by the backend object.
// Thread-safe, never throws. Same contract as NetworkEvents::subscribe().
class SecretEvents {
 public:
  virtual void subscribe(SecretEventSink* sink) noexcept = 0;

 protected:
  ~SecretEvents() = default;
};

// The backend's SecretEvents, or null when it does not offer them.
inline SecretEvents* secret_events(ExecutorBackend& backend) noexcept {
  return static_cast<SecretEvents*>(backend.query_interface(kSecretEventsId));
}

// The words an audit record uses for a kind: "secret injected", "secret withheld", ...
inline constexpr std::string_view secret_event_verdict(SecretEvent::Kind kind) noexcept {
  switch (kind) {
    case SecretEvent::Kind::kInjected:
      return "secret injected";
    case SecretEvent::Kind::kWithheld:
      return "secret withheld";
    case SecretEvent::Kind::kScrubbed:
      return "secret scrubbed";
    case SecretEvent::Kind::kRefused:
      return "refused";
  }
  return "refused";
}

}  // namespace execmcp::sdk
