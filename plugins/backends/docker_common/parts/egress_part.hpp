// `network: egress` as a part of the container's lifecycle: the agent's proxy and internal
// network (EgressProxy) are up before its container is made and come back before it is brought
// back; the proxy's log is followed while it runs (EgressLogFollower), and each command's result
// names what the proxy refused during it. Offers sdk::NetworkEvents to the host.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "docker_common/lifecycle/container_part.hpp"
#include "docker_common/parts/egress_log_follower.hpp"
#include "docker_common/parts/egress_proxy.hpp"
#include "execmcp/sdk/network_events.hpp"
#include "execmcp/sdk/secret_events.hpp"

namespace execmcp::plugins::docker_common {

class ContainerLifecycle;
class EgressSecretsPart;

class EgressPart final : public ContainerPart, public sdk::NetworkEvents, public sdk::SecretEvents {
 public:
  // A managed container's only (an attached one is on the network its owner chose). `secrets`:
  // the agent's egress secrets (added before this part), whose bundle the proxy gets; null when
  // it has none.
  EgressPart(ContainerLifecycle& lifecycle, const EgressPolicy& policy,
             const EgressSecretsPart* secrets = nullptr);

  std::string before_create() override;
  void on_start_failed() noexcept override;
  PartStep before_recover(sdk::LogLevel level) override;
  std::string on_stop(std::chrono::seconds timeout) override;
  void on_backend_stop() noexcept override { log_.stop(); }
  void on_remove() noexcept override;
  void route(NetworkRoute& route) const override;
  void* query_interface(std::string_view id) noexcept override;
  std::uint64_t begin_call() override { return log_.mark(); }
  void decorate_result(std::uint64_t mark, sdk::ExecResult& result) override;

  // Each request the proxy refuses, from its log.
  void subscribe(sdk::NetworkEventSink* sink) noexcept override { log_.subscribe(sink); }
  // What the proxy's secret injector did with each placeholder, from the same log.
  void subscribe(sdk::SecretEventSink* sink) noexcept override { log_.subscribe_secrets(sink); }

 private:
  ContainerLifecycle& lifecycle_;
  const EgressPolicy& policy_;  // the lifecycle's settings, which outlive this part
  const EgressSecretsPart* secrets_;
  EgressProxy proxy_;
  EgressLogFollower log_;  // with proxy_
};

}  // namespace execmcp::plugins::docker_common
