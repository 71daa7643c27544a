// A per-user agent's warm pool (as Kubernetes agent-sandbox's SandboxWarmPool): containers made
// and started before any user asks, each claimed by a new user's first call, refilled by a thread
// of its own while users plus warm containers are fewer than max_users (so the engine never holds
// more than max_users of the agent's containers).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "agent/configured_agent.hpp"
#include "agent/sandbox_template.hpp"

namespace execmcp::host {

class WarmPool {
 public:
  // `users`: how many users' records exist now (kept by the records); `tick` bounds how late a
  // refill starts once one is wanted. `shape`, `users` and `events` outlive the pool.
  WarmPool(const SandboxTemplate& shape, const std::atomic<std::size_t>& users,
           SandboxEventCounter& events, std::chrono::milliseconds tick);
  // stop().
  ~WarmPool();
  WarmPool(const WarmPool&) = delete;
  WarmPool& operator=(const WarmPool&) = delete;

  // The refill thread.
  void start();
  // The thread joined; every warm container removed, with its directory. Claims get none after.
  void stop() noexcept;
  // The number of users changed: the pool refills or gives up a slot it would refill.
  void wake() { wake_.notify_all(); }

  // A started warm container moved to `dir` (renamed from its pool directory, its workspace
  // relocated); null when none is ready or the move failed (then the caller makes one).
  std::unique_ptr<ConfiguredAgent> claim(const std::string& dir, const std::string& user_key);
  // A user's container is being made without the pool (a returning user, or none was ready): a
  // warm container past max_users goes.
  void release_surplus();
  // Warm containers ready now.
  [[nodiscard]] std::size_t ready() const;

 private:
  struct Warm {
    std::unique_ptr<ConfiguredAgent> agent;  // started, runner ready
    std::string dir;                         // <workspace_root>/.warm-<pid>-<n>
    std::string name;                        // warm_sandbox_name(): in its container's name
  };
  void refill_loop();
  // One warm container made (outside the lock); false when it failed.
  bool make_one();
  [[nodiscard]] bool refill_needed_locked() const;

  const SandboxTemplate& template_;
  const std::atomic<std::size_t>& users_;
  SandboxEventCounter& events_;
  const std::chrono::milliseconds tick_;

  mutable std::mutex mutex_;  // guards the members below; never held while a backend works
  std::condition_variable wake_;
  bool stopping_ = false;
  std::deque<Warm> warm_;
  std::deque<Warm> surplus_;  // to be removed by the refill thread
  std::size_t making_ = 0;    // being made by the refill thread
  std::uint64_t serial_ = 0;
  std::thread refill_;
};

}  // namespace execmcp::host
