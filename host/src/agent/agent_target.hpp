// What an agent id resolves to: one agent (SingleAgentTarget), or a per-user agent's sandboxes, one
// per user (PerUserTarget). The registry, the HTTP endpoint, the probes and the metrics see only
// this interface; none of them asks which kind a target is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "agent/agent.hpp"

namespace execmcp::host {

class ConfiguredAgent;

// Sandboxes by state (a per-user target's), read without waiting on a backend.
struct SandboxCounts {
  std::size_t warm = 0;     // made ahead of time, not claimed yet
  std::size_t running = 0;  // a user's, with its container running (or being made)
  std::size_t stopped = 0;  // a user's, stopped when idle
};
struct SandboxEvents {
  std::uint64_t claims = 0;    // a new user took a warm container
  std::uint64_t creates = 0;   // a container made for a user (no warm one, or a returning user)
  std::uint64_t starts = 0;    // a stopped sandbox started again by its user's call
  std::uint64_t stops = 0;     // stopped after idle_stop
  std::uint64_t removals = 0;  // removed after idle_remove
  std::uint64_t refusals = 0;  // a new user refused: max_users sandboxes exist
};

struct TargetTraits {
  // Its commands run in a sandbox (the backend's traits, asked once when built): each of its
  // started agents owns a container (or a VM).
  bool isolated = false;
  // Each authenticated user gets an agent of their own (served over HTTP only).
  bool per_user = false;
};

// resolve()'s answer: the agent that serves this call, or why none does.
struct Resolution {
  // Held by the request until it is answered (a per-user sandbox's record lives while it is).
  std::shared_ptr<Agent> agent;
  bool at_limit = false;  // refused because the target has every agent it may have (HTTP 429)
  std::string refusal;    // why not; null `agent`
};

// What /metrics shows of a target; read on an HTTP I/O thread, so never waits on a backend.
struct TargetReport {
  // The state of its one backend; none when each user has their own (a per-user target).
  std::optional<AgentState> backend;
  std::size_t containers_owned = 0;  // containers (or VMs) it owns now
  // A per-user target's sandboxes by state, and what its timers and users did since the start.
  std::optional<SandboxCounts> sandboxes;
  std::optional<SandboxEvents> sandbox_events;
};

// Thread-safe: resolve(), state() and report() are asked from the servers' threads at once;
// start(), start_background() and stop() run on the main thread.
class AgentTarget {
 public:
  virtual ~AgentTarget() = default;

  [[nodiscard]] virtual const std::string& id() const = 0;
  [[nodiscard]] virtual TargetTraits traits() const = 0;
  // The agent as configured: its backend's name, filters and workspace. For a per-user target,
  // its template: built to check the config and to answer tools/list, never started.
  [[nodiscard]] virtual ConfiguredAgent& configured() = 0;

  // The agent that serves a call of the user `user_key` (the credentials' user key), or a
  // refusal. Never waits on a backend (an HTTP I/O thread asks); the agent starts its backend on
  // the first call that needs it.
  virtual Resolution resolve(const std::string& user_key) = 0;
  // For GET /ready: never starts anything, never waits on a start.
  [[nodiscard]] virtual AgentState state() const = 0;
  [[nodiscard]] virtual TargetReport report() const = 0;

  // Starts its backend now (serve --start-all, stdio); throws std::runtime_error when it cannot.
  // A per-user target has none to start: each user's starts with their first call.
  virtual void start() = 0;
  // Its own threads, once the server serves (a per-user target's idle timers and warm pool).
  virtual void start_background() = 0;
  // Every backend shut down (shells ended, containers removed; never a workspace); runs once.
  virtual void stop() noexcept = 0;
};

}  // namespace execmcp::host
