// The records of one per-user agent's sandboxes (as Kubernetes agent-sandbox's SandboxClaims): each
// authenticated user's own container of it, made on the user's first call (from the warm pool when
// one is ready), stopped when idle, started again with its files, removed when stopped long
// enough, and bounded by max_users. Made of three parts with one owner each: the template
// (sandbox_template.*), the warm pool (warm_pool.*) and the records with their idle timers (here).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "agent/agent.hpp"
#include "agent/agent_target.hpp"
#include "agent/sandbox_template.hpp"
#include "agent/warm_pool.hpp"
#include "config/config.hpp"

namespace execmcp::host {

class UserSandbox;

class UserSandboxes {
 public:
  // `capabilities` and `traits` are the template agent's (tools/list asks before any sandbox
  // exists). `tick` bounds how late the timers act.
  UserSandboxes(std::string agent_id, PerUserConfig config, SandboxBuilder build,
                AgentCapabilities capabilities, sdk::BackendTraits traits,
                std::chrono::milliseconds tick = std::chrono::milliseconds(1000));
  // stop_all().
  ~UserSandboxes();
  UserSandboxes(const UserSandboxes&) = delete;
  UserSandboxes& operator=(const UserSandboxes&) = delete;

  // Starts the timers (idle stop and removal) and the warm pool's refill, after removing what a
  // killed server left in workspace_root (empty warm directories).
  void start();
  // The agent serving `user_key` (a sandbox record, made here; its container is made by its first
  // call), or a refusal naming the limit when max_users sandboxes exist. Never waits on a backend
  // (an HTTP I/O thread asks).
  Resolution sandbox_for(const std::string& user_key);
  // Timers and refill stopped, every container removed (never a workspace), warm directories
  // removed. Calls still in flight finish on their agents; the records live while they do.
  void stop_all() noexcept;

  [[nodiscard]] const std::string& id() const { return template_.id(); }
  [[nodiscard]] const PerUserConfig& config() const { return template_.config(); }
  [[nodiscard]] SandboxCounts counts() const;
  [[nodiscard]] SandboxEvents events() const { return events_.snapshot(); }

 private:
  friend class UserSandbox;

  void timer_loop();
  // One pass of the timers over every record; records that hold nothing are forgotten.
  void sweep();

  const SandboxTemplate template_;
  SandboxEventCounter events_;
  std::atomic<std::size_t> user_count_{0};  // users_.size(), for the pool
  const std::chrono::milliseconds tick_;
  WarmPool pool_;  // after what it reads

  mutable std::mutex mutex_;  // guards the members below; never held while a backend works
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<UserSandbox>> users_;
  std::thread timer_;
};

}  // namespace execmcp::host
