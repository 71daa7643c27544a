// `network: egress`: an agent's own internal network and the Squid proxy container on it (and on
// the policy's upstream network), made before the agent's container and removed after it.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "docker_common/engine/engine.hpp"
#include "docker_common/lifecycle/ownership.hpp"
#include "docker_common/parts/egress_policy.hpp"
#include "execmcp/egress_secrets/secret_rule.hpp"

namespace execmcp::plugins::docker_common {

// The proxy's image (docker/egress), built by `docker/build.sh --egress`; never pulled.
inline constexpr const char* kEgressImage = "execmcp/egress:latest";
// The bridge driver's option that leaves this machine without an address on the network (the
// agent's network: no gateway on the host to reach the host's services through).
inline constexpr const char* kNoHostAddressOption = "com.docker.network.bridge.inhibit_ipv4";
// The option by which the engine marks its default bridge network (`bridge`), which takes no
// network-scoped alias ("supported only for containers in user defined networks").
inline constexpr const char* kDefaultBridgeOption = "com.docker.network.bridge.default_bridge";

// The proxy and network of one agent's container. Not thread-safe: ContainerLifecycle calls it
// under its own locks (start, recovery, stop and removal never overlap for one agent).
class EgressProxy {
 public:
  // `agent_container`: the agent's container name, which the network and proxy are named after;
  // `agent_label`: how the proxy's log and refusal page name the agent; `owner`: the agent's
  // container's ownership (its agent and instance), which the proxy and network carry with their
  // roles. Neither is ever removed, started or stopped when its labels say otherwise (then each
  // method returns why: ownership.hpp).
  EgressProxy(Engine& engine, const std::string& agent_container, EgressPolicy policy,
              std::string agent_label, const Ownership& owner);

  // Makes the network and the proxy anew (a leftover of the same name is removed first) and
  // starts the proxy, connected to the upstream network; `labels` are the agent container's (the
  // owner's pid and host: orphans are found by them), a role label is added. "" or why not;
  // on failure nothing of it is left behind.
  std::string start(const std::map<std::string, std::string>& labels);
  // Before the agent's container starts again: a proxy that stopped is started, one that is gone
  // (or will not start) is made again, and the network too when it is gone. "" or why not;
  // `what` says what was done ("" when the proxy was running).
  std::string ensure_running(const std::map<std::string, std::string>& labels, std::string& what);
  // Stops the proxy and keeps it (a suspended agent's); "" or why not.
  std::string stop(std::chrono::seconds timeout);
  // Removes the proxy, then the network (the agent's container must be gone already); "" or what
  // could not be removed. A part already gone is fine.
  std::string remove();

  // From now on the proxy holds these secrets (egress.secrets): its secret injector is put in and
  // started with it, and gets `bundle` each time the proxy is (re)started. Null: none (Squid
  // alone). `bundle` outlives this object (the agent's EgressSecretsPart holds it).
  void set_secrets(const egress_secrets::SecretBundle* bundle) { secrets_ = bundle; }

  [[nodiscard]] const std::string& network() const { return network_; }
  [[nodiscard]] const std::string& proxy() const { return proxy_; }

 private:
  // The proxy container as data: read-only, no capability, small, on the internal network.
  // `clients`: the internal network's subnets, the only sources the proxy serves (it is on the
  // upstream network too, where other containers could otherwise use it).
  ContainerSpec proxy_spec(const std::map<std::string, std::string>& labels,
                           const std::vector<std::string>& clients) const;
  std::string check_upstream();
  std::string create_network(const std::map<std::string, std::string>& labels);
  std::string create_proxy(const std::map<std::string, std::string>& labels);
  // Each removes its part when it is there and ours: "" (also when it is gone) or why not.
  std::string remove_proxy();
  std::string remove_network();
  // With secrets: the started proxy's injector gets its bundle. "" or why not.
  std::string hand_secrets();

  Engine& engine_;
  EgressPolicy policy_;
  std::string agent_label_;
  std::string network_;
  std::string proxy_;
  bool upstream_is_default_bridge_ = false;  // check_upstream() learns it
  Ownership proxy_owner_;
  Ownership network_owner_;
  const egress_secrets::SecretBundle* secrets_ = nullptr;
};

}  // namespace execmcp::plugins::docker_common
