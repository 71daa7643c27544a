// An agent's egress proxy and internal network over an Engine: made, checked, brought back, stopped
// and removed in the order Squid and the engine need (see docs/docker-backend.md).
#include "docker_common/parts/egress_proxy.hpp"

#include <cstdint>

#include "docker_common/parts/egress_secret_delivery.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using Kind = EngineError::Kind;

// Enough for one agent's Squid (about 8 MiB charged, see the docs) with room for bursts.
constexpr std::int64_t kProxyMemoryBytes = std::int64_t{128} << 20;
constexpr std::int64_t kProxyPidsLimit = 64;
// The entrypoint writes the configuration and page here; nothing else is written.
constexpr const char* kProxyTmpfs = "rw,nosuid,nodev,noexec,mode=1777,size=8m";

std::map<std::string, std::string> with_role(std::map<std::string, std::string> labels,
                                             const char* role) {
  labels[kLabelRole] = role;
  return labels;
}

// The image is never pulled: it is built from the source tree.
std::string missing_image() {
  return std::string("image '") + kEgressImage +
         "' (the egress proxy of network: egress) not found: build it with "
         "`docker/build.sh --egress` (from the execmcp source tree)";
}

}  // namespace

EgressProxy::EgressProxy(Engine& engine, const std::string& agent_container, EgressPolicy policy,
                         std::string agent_label, const Ownership& owner)
    : engine_(engine),
      policy_(std::move(policy)),
      agent_label_(std::move(agent_label)),
      network_(egress_network_name(agent_container)),
      proxy_(egress_proxy_name(agent_container)),
      proxy_owner_{owner.agent, owner.instance, kRoleEgressProxy},
      network_owner_{owner.agent, owner.instance, kRoleEgressNetwork} {}

std::string EgressProxy::remove_proxy() {
  std::string refusal;
  const auto err = remove_own(engine_, proxy_, proxy_owner_, refusal, "egress proxy");
  if (!refusal.empty()) return refusal;
  if (!err.ok() && err.kind != Kind::kNotFound)
    return describe_failure(err, "removing the egress proxy '" + proxy_ + "'");
  return {};
}

std::string EgressProxy::remove_network() {
  NetworkInfo net;
  const auto looked = engine_.inspect_network(network_, net);
  if (looked.kind == Kind::kNotFound) return {};
  if (!looked.ok())
    return describe_failure(looked, "inspecting the egress network '" + network_ + "'");
  if (!is_own(net.labels, network_owner_))
    return not_own_refusal("egress network", network_, net.labels, network_owner_);
  // By name: the socket proxy lets a network be removed only by an execmcp-… name (a network with
  // endpoints is never removed anyway, and only this agent makes one under this name).
  const auto err = engine_.remove_network(network_);
  if (!err.ok() && err.kind != Kind::kNotFound)
    return describe_failure(err, "removing the egress network '" + network_ + "'");
  return {};
}

ContainerSpec EgressProxy::proxy_spec(const std::map<std::string, std::string>& labels,
                                      const std::vector<std::string>& clients) const {
  ContainerSpec spec;
  spec.name = proxy_;
  spec.image = kEgressImage;
  // The image's user (Debian's `proxy`, uid 13) and command (its entrypoint runs Squid).
  spec.env = egress_proxy_env(policy_, agent_label_, clients);
  spec.labels = with_role(labels, kRoleEgressProxy);
  spec.memory_bytes = kProxyMemoryBytes;
  spec.read_only_rootfs = true;
  spec.tmpfs["/tmp"] = kProxyTmpfs;
  spec.pids_limit = kProxyPidsLimit;
  // Created on the internal network first: its resolver is then the engine's, which Squid uses
  // for every name (see the docs); the upstream network is connected before the start.
  spec.network = network_;
  spec.network_alias = kEgressProxyAlias;
  if (secrets_ != nullptr) {
    // The injector, copied into the volume before the start, runs Squid as its child.
    spec.runner = RunnerDelivery::Copy;
    spec.entrypoint = injector_entrypoint();
  }
  return spec;
}

std::string EgressProxy::check_upstream() {
  NetworkInfo upstream;
  const auto err = engine_.inspect_network(policy_.upstream_network, upstream);
  if (err.kind == Kind::kNotFound)
    return "egress.upstream_network '" + policy_.upstream_network + "' does not exist on the " +
           "engine at " + engine_.describe() +
           " (the network the egress proxy reaches upstreams through): create it, or set "
           "egress.upstream_network to one that exists (`docker network ls`)";
  // An internal one is fine: a local mirror on a network without a route out.
  if (!err.ok())
    return describe_failure(err, "inspecting network '" + policy_.upstream_network + "'");
  // The engine's default bridge (the default upstream) takes no network-scoped alias. By its
  // option, or by its name, which Docker keeps for it: behind the socket proxy an inspect of a
  // network not named execmcp-… answers only its name.
  const auto it = upstream.options.find(kDefaultBridgeOption);
  upstream_is_default_bridge_ = (it != upstream.options.end() && it->second == "true") ||
                                policy_.upstream_network == "bridge";
  return {};
}

std::string EgressProxy::create_network(const std::map<std::string, std::string>& labels) {
  NetworkSpec spec;
  spec.name = network_;
  spec.internal = true;
  // An internal network still gives its members a route to the bridge's address on this machine,
  // where every service listening on all addresses answers (and, through the machine, its other
  // addresses): without an address of the machine on it, the proxy is the only thing to reach.
  spec.options[kNoHostAddressOption] = "true";
  spec.labels = with_role(labels, kRoleEgressNetwork);
  auto err = engine_.create_network(spec);
  if (err.kind == Kind::kConflict) {
    // Left by an earlier run of this agent (its proxy is removed first by the callers); one that
    // is not this agent's is left alone.
    if (auto refused = remove_network(); !refused.empty()) return refused;
    err = engine_.create_network(spec);
  }
  if (!err.ok() && err.message.find(kNoHostAddressOption) != std::string::npos)
    // Podman 4 ("unsupported network option"): without the option the host's services would be
    // reachable at the network's gateway, so no egress network rather than a leaky one.
    return "creating the egress network '" + network_ +
           "': this engine does not take the bridge "
           "option " +
           kNoHostAddressOption +
           ", without which the agent could reach this "
           "machine's services around its proxy (engine: " +
           err.message +
           "); network: egress "
           "needs Docker Engine";
  if (!err.ok()) return describe_failure(err, "creating the egress network '" + network_ + "'");
  return {};
}

std::string EgressProxy::create_proxy(const std::map<std::string, std::string>& labels) {
  NetworkInfo net;
  if (const auto err = engine_.inspect_network(network_, net); !err.ok())
    return describe_failure(err, "inspecting the egress network '" + network_ + "'");
  if (net.subnets.empty())  // an engine that did not say: the proxy would serve any source
    return "the egress network '" + network_ + "' has no subnet the engine reports";
  const auto spec = proxy_spec(labels, net.subnets);
  auto err = engine_.create(spec);
  if (err.kind == Kind::kConflict) {
    if (auto refused = remove_proxy(); !refused.empty()) return refused;
    err = engine_.create(spec);
  }
  if (err.kind == Kind::kImageMissing) return missing_image();
  if (!err.ok()) return describe_failure(err, "creating the egress proxy '" + proxy_ + "'");
  if (secrets_ != nullptr) {
    if (err = copy_injector(engine_, proxy_, policy_.injector_program); !err.ok())
      return describe_failure(err,
                              "copying the secret injector into the egress proxy '" + proxy_ + "'");
  }
  // Its own name as an alias where the network takes one; nothing on the upstream network looks
  // the proxy up, so on the default bridge it goes without.
  const std::string alias = upstream_is_default_bridge_ ? std::string() : proxy_;
  if (err = engine_.connect_network(policy_.upstream_network, proxy_, alias); !err.ok())
    return describe_failure(err, "connecting the egress proxy '" + proxy_ + "' to network '" +
                                     policy_.upstream_network + "'");
  if (err = engine_.start(proxy_); !err.ok())
    return describe_failure(err, "starting the egress proxy '" + proxy_ + "'");
  return hand_secrets();
}

std::string EgressProxy::hand_secrets() {
  if (secrets_ == nullptr) return {};
  return deliver_bundle(engine_, proxy_, *secrets_);
}

std::string EgressProxy::start(const std::map<std::string, std::string>& labels) {
  if (auto err = check_upstream(); !err.empty()) return err;
  if (const auto err = engine_.check_image(kEgressImage); !err.ok()) {
    if (err.kind == Kind::kImageMissing) return missing_image();
    return describe_failure(err, std::string("inspecting image '") + kEgressImage + "'");
  }
  // A leftover of an earlier run (none is the usual answer); one that is not ours stays.
  if (auto refused = remove_proxy(); !refused.empty()) return refused;
  std::string err = create_network(labels);
  if (err.empty()) err = create_proxy(labels);
  if (!err.empty()) remove();  // only what is ours
  return err;
}

std::string EgressProxy::ensure_running(const std::map<std::string, std::string>& labels,
                                        std::string& what) {
  what.clear();
  NetworkInfo net;
  const auto looked_net = engine_.inspect_network(network_, net);
  if (looked_net.kind == Kind::kNotFound) {
    what = "its egress network and proxy were made again";
    return start(labels);
  }
  if (!looked_net.ok())
    return describe_failure(looked_net, "inspecting the egress network '" + network_ + "'");
  if (!is_own(net.labels, network_owner_))
    return not_own_refusal("egress network", network_, net.labels, network_owner_);
  ContainerInfo info;
  std::string refusal;
  const auto looked = inspect_own(engine_, proxy_, proxy_owner_, info, refusal, "egress proxy");
  if (!refusal.empty()) return refusal;
  if (looked.ok() && info.state.running) return {};
  if (looked.ok() && engine_.start(own_handle(info, proxy_)).ok()) {
    // A started injector holds nothing: the secrets again.
    what = "its egress proxy was started again";
    return hand_secrets();
  }
  if (!looked.ok() && looked.kind != Kind::kNotFound)
    return describe_failure(looked, "inspecting the egress proxy '" + proxy_ + "'");
  if (auto err = check_upstream(); !err.empty()) return err;
  if (auto refused = remove_proxy(); !refused.empty()) return refused;
  what = "its egress proxy was made again";
  return create_proxy(labels);
}

std::string EgressProxy::stop(std::chrono::seconds timeout) {
  std::string refusal;
  const auto err = stop_own(engine_, proxy_, proxy_owner_, timeout, refusal, "egress proxy");
  if (!refusal.empty()) return refusal;
  if (!err.ok() && err.kind != Kind::kNotFound)
    return describe_failure(err, "stopping the egress proxy '" + proxy_ + "'");
  return {};
}

std::string EgressProxy::remove() {
  std::string out = remove_proxy();
  if (auto err = remove_network(); !err.empty()) out += (out.empty() ? "" : "; ") + err;
  return out;
}

}  // namespace execmcp::plugins::docker_common
