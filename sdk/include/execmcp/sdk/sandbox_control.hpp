// The optional backend interface "execmcp.sandbox/1": a sandbox that can be stopped and started
// again with its state, and whose workspace can move on the host (per-user agents: idle stop,
// resume, warm pools).
#pragma once

#include <string>
#include <string_view>

#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::sdk {

// The id a backend answers in ExecutorBackend::query_interface() with a SandboxControl*.
inline constexpr std::string_view kSandboxControlId = "execmcp.sandbox/1";

// Offered by a backend whose sandbox outlives a stop (a container). Owned by the backend object.
// Thread-safe, never throws. The host calls these only between start() and cleanup(), and only
// while no call of the agent runs (execute, files: none in flight); background processes may
// still run, and suspend() ends them.
class SandboxControl {
 public:
  // Stops the sandbox and keeps it for resume(): every process in it ends (background ones with
  // their on_exit()), the files of its workspace stay. "" or why not (then it still runs).
  virtual std::string suspend() noexcept = 0;
  // Starts a suspended sandbox again, ready for calls; one that is gone meanwhile (removed from
  // outside) is made anew; one that runs is only made ready (the warm pool asks that right after
  // start(), so a user's first call finds everything open). "" or why not.
  virtual std::string resume() noexcept = 0;
  // The workspace (BackendInit::cwd, the first path grant) was renamed on the host to `host_path`
  // while the sandbox ran: a warm sandbox claimed by a user. Its mount still holds the directory;
  // every later use of the host path (checks, a sandbox made anew) takes the new one. "" or why
  // not (then the host stops using this sandbox).
  virtual std::string relocate_workspace(const std::string& host_path) noexcept = 0;

 protected:
  ~SandboxControl() = default;
};

// The backend's SandboxControl, or null when it does not offer one.
inline SandboxControl* sandbox_control(ExecutorBackend& backend) noexcept {
  return static_cast<SandboxControl*>(backend.query_interface(kSandboxControlId));
}

}  // namespace execmcp::sdk
