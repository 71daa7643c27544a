// A per-user agent's sandbox template (as Kubernetes agent-sandbox's SandboxTemplate): what every
// user's sandbox and every warm one is made from, and how they are named. Immutable once built;
// its event counter is the one mutable part the records and the warm pool share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "agent/agent.hpp"
#include "agent/agent_target.hpp"
#include "agent/configured_agent.hpp"
#include "config/config.hpp"

namespace execmcp::host {

// Where every user's sandbox sees its workspace (BackendInit::sandbox_cwd, and the agent's cwd()).
inline const std::string kUserSandboxCwd = "/workspace";

// Makes one sandbox's agent, not started: `workspace` is its directory on the host (it exists),
// `name` goes into its instance id and so its container's name (SandboxTemplate::
// user_sandbox_name(), warm_sandbox_name()). Throws like build_agent.
using SandboxBuilder = std::function<std::unique_ptr<ConfiguredAgent>(const std::string& workspace,
                                                                      const std::string& name)>;

class SandboxTemplate {
 public:
  // `capabilities` and `traits` are the template agent's (tools/list asks before any sandbox
  // exists).
  SandboxTemplate(std::string agent_id, PerUserConfig config, SandboxBuilder build,
                  AgentCapabilities capabilities, sdk::BackendTraits traits);

  [[nodiscard]] const std::string& id() const { return agent_id_; }
  [[nodiscard]] const PerUserConfig& config() const { return config_; }
  [[nodiscard]] const AgentCapabilities& capabilities() const { return capabilities_; }
  [[nodiscard]] const sdk::BackendTraits& traits() const { return traits_; }
  // One sandbox's agent, not started. Throws like build_agent.
  [[nodiscard]] std::unique_ptr<ConfiguredAgent> build(const std::string& workspace,
                                                       const std::string& name) const {
    return build_(workspace, name);
  }

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
  const std::string agent_id_;
  const PerUserConfig config_;
  const SandboxBuilder build_;
  const AgentCapabilities capabilities_;
  const sdk::BackendTraits traits_;
};

// What a per-user agent's records and warm pool did since the start (for /metrics).
class SandboxEventCounter {
 public:
  void count(std::uint64_t SandboxEvents::*event) {
    std::lock_guard lock(mutex_);
    ++(events_.*event);
  }
  [[nodiscard]] SandboxEvents snapshot() const {
    std::lock_guard lock(mutex_);
    return events_;
  }

 private:
  mutable std::mutex mutex_;
  SandboxEvents events_;
};

}  // namespace execmcp::host
