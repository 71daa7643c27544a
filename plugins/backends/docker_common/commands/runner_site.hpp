// Where execmcp-runner lives, as RunnerCommandPath needs it: a ready channel to the runner, the
// place brought back when it is gone, and a count that says when a channel went with its place.
// The place is made by someone else (a container's lifecycle, a Swarm service): the site only
// reaches the runner there. exec_runner_site.hpp is the one for a container on the engine we talk
// to (the runner started by an exec); a site that connects to a runner that listens (a Swarm task,
// a pod) implements the same interface. See docs/architecture.md (docker_common).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "execmcp/sdk/executor_backend.hpp"
#include "runner_client/runner_channel.hpp"

namespace execmcp::plugins::docker_common {

// Why a site could not open a channel.
struct SiteError {
  enum class Kind {
    kNone,
    // The place (the engine, the container, the task) failed: the call's error, as it would be
    // for an exec; the next call tries again.
    kPlace,
    // The runner itself failed (missing, not delivered, silent, of another build): the call may
    // fall back to one exec, and the runner is not tried again for a while.
    kRunner,
  };
  Kind kind = Kind::kNone;
  std::string why;
};

// Every method may be called from several threads at once, except open(), which the command path
// calls under its own lock (one opening at a time).
class RunnerSite {
 public:
  virtual ~RunnerSite() = default;

  // The place's name, for messages ("container execmcp-...").
  [[nodiscard]] virtual const std::string& name() const = 0;
  virtual void log(sdk::LogLevel level, const std::string& message) const = 0;
  // A channel whose runner has said hello, or null with `error` (kind and why). May bring the
  // place back once (its notices go to `notices`).
  virtual std::shared_ptr<runner_client::RunnerChannel> open(std::vector<std::string>& notices,
                                                             SiteError& error) = 0;
  // Gone, stopped or moved: bring the place back, with the call's notice. "" or why not.
  virtual std::string recover(std::vector<std::string>& notices) = 0;
  // Counts the places made under this name: a channel opened into an older one is dead.
  [[nodiscard]] virtual std::uint64_t incarnation() const = 0;

  // "" or why no runner can ever be reached here (a property of the way to it: no use trying
  // again); asked before each opening.
  [[nodiscard]] virtual std::string unreachable_for_good() const { return {}; }
  // A check for one call, asked now and then while it runs: true once the place is seen stopped
  // (where a runner's stream may stay open past its place's end).
  virtual std::function<bool()> stop_watch() = 0;
  // True when whoever manages the place (the engine) does not answer: a channel that broke during
  // a call lost it, and the call says so.
  virtual bool manager_lost() = 0;
  // The runner said the place is going down: wait (up to `timeout`) until it has stopped, so the
  // next opening brings it back.
  virtual void wait_stopped(std::chrono::milliseconds timeout) = 0;
  // Before the place goes (cleanup): drops what was put there for the runner. Never throws.
  virtual void close() noexcept {}
};

}  // namespace execmcp::plugins::docker_common
