// The optional backend interface "execmcp.network_events/1": a backend whose sandbox reaches the
// network through a policy it enforces (an egress proxy) tells the host of each request the
// policy refused, so the host can audit it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::sdk {

// The id a backend answers in ExecutorBackend::query_interface() with a NetworkEvents*.
inline constexpr std::string_view kNetworkEventsId = "execmcp.network_events/1";

// One request of the sandbox's, as the policy judged it. Its text comes from the sandbox (the
// host a command asked for): the backend bounds and escapes it (log_text.hpp) before it crosses.
struct NetworkEvent {
  std::string host;  // the requested host (or the CONNECT target's), at most 255 bytes
  std::uint16_t port = 0;
  std::string method;        // "GET", "CONNECT", ...; what was asked
  bool refused = false;      // refused by the policy (the sandbox got an error page, nothing else)
  std::string reason;        // why, in words: "not in this agent's egress allow list"
  std::int64_t unix_ms = 0;  // when the policy judged it, milliseconds since the Unix epoch
  // Events before this one that were not delivered (a flood beyond the backend's cap); counted
  // here so the host can say so.
  std::uint64_t dropped_before = 0;
};

// The host's side: where a backend delivers its events. on_network_event() is called from a
// thread of the backend's, one event at a time, and must return soon and never call the backend.
class NetworkEventSink {
 public:
  virtual void on_network_event(const NetworkEvent& event) noexcept = 0;

 protected:
  ~NetworkEventSink() = default;
};

// Offered by a backend that reports its sandbox's network requests. Owned by the backend object.
// Thread-safe, never throws.
class NetworkEvents {
 public:
  // From now on, events go to `sink` (null: nowhere). Returns once no delivery to the sink it
  // replaces is in flight, so the host may destroy that sink then. The host subscribes before
  // start() and subscribes null after cleanup(), before the sink is destroyed.
  virtual void subscribe(NetworkEventSink* sink) noexcept = 0;

 protected:
  ~NetworkEvents() = default;
};

// The backend's NetworkEvents, or null when it does not offer them.
inline NetworkEvents* network_events(ExecutorBackend& backend) noexcept {
  return static_cast<NetworkEvents*>(backend.query_interface(kNetworkEventsId));
}

}  // namespace execmcp::sdk
