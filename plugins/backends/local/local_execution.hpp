// How the local backend runs an agent's commands, background processes and file tools: the seam
// between LocalBackend (the plugin's face: settings, traits, capabilities) and the two ways it
// runs them. HostExecution (`isolation: none`) runs them on the host as the server's user;
// SandboxExecution (`isolation: sandbox`) runs them through execmcp-runner inside an OS sandbox
// that lives as long as the agent. Each method follows the SDK's contract (executor_backend.hpp,
// background_processes.hpp): it may run on several threads at once and never throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "execmcp/sdk/background_processes.hpp"
#include "execmcp/sdk/executor_backend.hpp"
#include "execmcp/sdk/network_events.hpp"
#include "execmcp/sdk/sandbox_control.hpp"

namespace execmcp::plugins::local {

class LocalExecution {
 public:
  virtual ~LocalExecution() = default;

  virtual std::string start() = 0;
  virtual void stop() noexcept = 0;
  virtual void cleanup() noexcept = 0;

  virtual sdk::ExecResult execute(const sdk::ExecRequest& request) = 0;
  virtual sdk::FileReadResult read_file(const sdk::FileReadRequest& request) = 0;
  virtual sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request) = 0;

  virtual sdk::BackgroundStarted start_background(const sdk::BackgroundRequest& request,
                                                  sdk::BackgroundObserver* observer) noexcept = 0;
  virtual void terminate_background(std::uint64_t id, std::chrono::milliseconds grace) noexcept = 0;

  // Its execmcp.sandbox/1 (a sandbox that can be stopped and started again), or null.
  virtual sdk::SandboxControl* sandbox_control() noexcept { return nullptr; }
  // execmcp.network_events/1, where the sandbox's network goes through a policy (network:
  // egress); null otherwise.
  virtual sdk::NetworkEvents* network_events() noexcept { return nullptr; }
};

}  // namespace execmcp::plugins::local
