// The interface every executor backend implements (local, docker-api, third-party ...).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "execmcp/sdk/types.hpp"

namespace execmcp::sdk {

// Everything a backend learns about the agent it serves. Built by the host from the agent's config.
struct BackendInit {
  std::string agent_id;
  std::string instance_id;       // unique per host process; lets two servers on one host coexist
  std::string cwd;               // the agent's workspace, absolute
  std::vector<PathGrant> paths;  // cwd first (writable), then context paths
  std::string tools_dir;         // host path of the Python tools dir (may be empty)
  std::string skills_dir;        // host path of the skills dir (may be empty)
  std::string temp_workspace;    // host path of the shared temp workspace (may be empty)
  std::string log_dir;           // where the backend may save logs (container logs, ...)
  std::string settings_json;     // the plugin's own settings, a JSON object as text
  LogSink* log = nullptr;        // never null when the host creates the backend
  // Since ABI 2.2. Where commands see `cwd` inside the sandbox; "" = at its host path. The host
  // sets it ("/workspace") for per-user agents, whose workspace is <workspace_root>/<user key> on
  // the host; a backend that offers SandboxControl honours it: the mount point of cwd, the default
  // working directory, the base of relative paths, and the path of the first grant as commands
  // and the file calls see it.
  std::string sandbox_cwd;
};

// How the backend's sandbox sees things, for tools the host builds on top of execute().
struct BackendTraits {
  std::string tools_dir;  // tools dir as commands see it ("/tools" in Docker)
  std::string python = "python3";
  bool isolated = false;  // true when commands run in a sandbox (container, VM)
};

// All methods are called from several host threads at once and must not throw: report failures
// through the result's `error` field. The host still guards every call.
class ExecutorBackend {
 public:
  virtual ~ExecutorBackend() = default;

  // Prepare to serve (create or adopt a container, ...). Returns "" or an error message.
  virtual std::string start() = 0;
  // Stop running commands; resources may be kept for a later start().
  virtual void stop() noexcept = 0;
  // Release everything (save container logs, remove the container). Also run on SIGINT/SIGTERM.
  virtual void cleanup() noexcept = 0;

  virtual ExecResult execute(const ExecRequest& request) = 0;
  virtual FileReadResult read_file(const FileReadRequest& request) = 0;
  virtual FileWriteResult write_file(const FileWriteRequest& request) = 0;

  [[nodiscard]] virtual BackendTraits traits() const = 0;

  // Optional capabilities (since ABI 2.0). Returns the interface named `id` (a versioned name such
  // as kBackgroundProcessesId, "execmcp.background/1") as a pointer to that interface type, or null
  // when this backend does not offer it. The pointer is owned by the backend, valid until it is
  // destroyed and the same on every call. This is the last virtual this class will ever have:
  // capabilities are added as new interfaces, never as new virtuals here.
  [[nodiscard]] virtual void* query_interface(std::string_view id) noexcept {
    (void)id;
    return nullptr;
  }
};

}  // namespace execmcp::sdk
