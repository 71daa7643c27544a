// The sandboxes of one per-user agent: each authenticated user's own container of it, made on the
// user's first call (from the warm pool when one is ready), stopped when idle, started again with
// its files, removed when stopped long enough, and bounded by max_users.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent.hpp"
#include "agent/agent_target.hpp"
#include "agent/configured_agent.hpp"
#include "config/config.hpp"

namespace execmcp::host {

// Where every user's sandbox sees its workspace (BackendInit::sandbox_cwd, and the agent's cwd()).
inline const std::string kUserSandboxCwd = "/workspace";

// Makes one sandbox's agent, not started: `workspace` is its directory on the host (it exists),
// `name` goes into its instance id and so its container's name (UserSandboxes::user_sandbox_name(),
// warm_sandbox_name()). Throws like build_agent.
using SandboxBuilder = std::function<std::unique_ptr<ConfiguredAgent>(const std::string& workspace,
                                                                      const std::string& name)>;

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

  [[nodiscard]] const std::string& id() const { return agent_id_; }
  [[nodiscard]] const PerUserConfig& config() const { return config_; }
  [[nodiscard]] SandboxCounts counts() const;
  [[nodiscard]] SandboxEvents events() const;
  // A key that can name a workspace directory: a token name's alphabet, not starting with '.',
  // at most kMaxUserKey characters.
  [[nodiscard]] static bool valid_user_key(const std::string& key);
  static constexpr std::size_t kMaxUserKey = 63;
  // The part of a sandbox's instance id (and so of its container's name) that tells it from the
  // others of its agent. A user's is "u-" and the key with '_', '-' and '.' written as "__", "_d"
  // and "_p": one key gives one name and no two keys the same, it holds no '-' after the prefix,
  // so it never ends in a suffix execmcp adds for another object ("-egress"), and it never equals a
  // warm sandbox's "w-<n>" (docs/security.md, Names and ownership).
  [[nodiscard]] static std::string user_sandbox_name(const std::string& key);
  [[nodiscard]] static std::string warm_sandbox_name(std::uint64_t n);
  // The longest user_sandbox_name() (a key of kMaxUserKey '_'): the per-user template is checked
  // with it at load, so a key that fits the alphabet always fits the engine's names too.
  [[nodiscard]] static std::string longest_sandbox_name();

 private:
  friend class UserSandbox;

  struct Warm {
    std::unique_ptr<ConfiguredAgent> agent;  // started, runner ready
    std::string dir;                         // <workspace_root>/.warm-<instance>-<n>
    std::string name;                        // warm_sandbox_name(): in its container's name
  };
  // A started warm container moved to `dir` (renamed from its pool directory); null when none is
  // ready or the move failed (then the caller makes one).
  std::unique_ptr<ConfiguredAgent> claim_warm(const std::string& dir, const std::string& user_key);
  std::unique_ptr<ConfiguredAgent> build(const std::string& workspace, const std::string& name);
  // A user's container is being made without the pool (a returning user, or none was ready): a
  // warm container past max_users goes, so the engine never holds more than max_users of ours.
  void release_surplus_warm();
  void count(std::uint64_t SandboxEvents::*event);
  void timer_loop();
  void refill_loop();
  // One pass of the timers over every record; records that hold nothing are forgotten.
  void sweep();
  // One warm container made (outside the lock); false when it failed.
  bool make_warm();
  [[nodiscard]] bool refill_needed_locked() const;

  const std::string agent_id_;
  const PerUserConfig config_;
  const SandboxBuilder build_;
  const AgentCapabilities capabilities_;
  const sdk::BackendTraits traits_;
  const std::chrono::milliseconds tick_;

  mutable std::mutex mutex_;  // guards the members below; never held while a backend works
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<UserSandbox>> users_;
  std::deque<Warm> warm_;
  std::deque<Warm> surplus_;     // to be removed by the refill thread
  std::size_t warm_making_ = 0;  // being made by the refill thread
  std::uint64_t warm_serial_ = 0;
  SandboxEvents events_;
  std::thread timer_;
  std::thread refill_;
};

}  // namespace execmcp::host
