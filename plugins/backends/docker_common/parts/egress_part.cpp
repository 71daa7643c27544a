// See egress_part.hpp.
#include "docker_common/parts/egress_part.hpp"

#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "docker_common/log_text.hpp"
#include "docker_common/parts/egress_secrets_part.hpp"

namespace execmcp::plugins::docker_common {

EgressPart::EgressPart(ContainerLifecycle& lifecycle, const EgressPolicy& policy,
                       const EgressSecretsPart* secrets)
    : lifecycle_(lifecycle),
      policy_(policy),
      secrets_(secrets),
      proxy_(lifecycle.engine(), lifecycle.name(), policy, lifecycle.init()->agent_id,
             lifecycle.ownership()),
      log_(lifecycle.engine(), proxy_.proxy(), policy, lifecycle.init()->log) {}

std::string EgressPart::before_create() {
  // A dead owner's egress network outlives its proxy only if a removal failed.
  lifecycle_.remove_orphan_networks();
  // This start's secrets (made in prepare_start, before this): the proxy gets them at each of its
  // starts from here on.
  proxy_.set_secrets(secrets_ != nullptr ? &secrets_->bundle() : nullptr);
  // The proxy is up before the agent's container: its first command may use the network.
  if (auto err = proxy_.start(lifecycle_.owner_labels()); !err.empty()) return err;
  lifecycle_.log(
      sdk::LogLevel::Info,
      "egress proxy " + proxy_.proxy() + " running on network " + proxy_.network() +
          " (upstream: " + policy_.upstream_network + ")" +
          (secrets_ != nullptr
               ? ", holding " + std::to_string(secrets_->bundle().secrets.size()) + " secrets"
               : std::string()));
  // Followed from here on: a refusal of the install (preinstall goes through the proxy) is
  // audited too.
  log_.start();
  return {};
}

void EgressPart::on_start_failed() noexcept {
  // The agent's container first: a network is removed only once nothing is on it.
  std::string refusal;  // a container of another sandbox under our name stays
  remove_own(lifecycle_.engine(), lifecycle_.name(), lifecycle_.ownership(), refusal);
  log_.stop();
  proxy_.remove();
}

PartStep EgressPart::before_recover(sdk::LogLevel level) {
  // The agent's only way out comes back first (a suspended agent's proxy was stopped with it).
  std::string what;
  if (auto err = proxy_.ensure_running(lifecycle_.owner_labels(), what); !err.empty())
    return PartStep::fail(std::move(err));
  if (!what.empty()) lifecycle_.log(level, "container " + lifecycle_.name() + ": " + what);
  log_.start();  // stopped with a suspended agent's proxy
  return PartStep::next();
}

std::string EgressPart::on_stop(std::chrono::seconds timeout) {
  if (auto stopped = proxy_.stop(timeout); !stopped.empty()) return stopped;
  log_.stop();  // after the proxy: its last lines are read first
  return {};
}

void EgressPart::on_remove() noexcept {
  log_.stop();
  if (auto err = proxy_.remove(); !err.empty()) lifecycle_.log(sdk::LogLevel::Warn, log_text(err));
}

void EgressPart::route(NetworkRoute& route) const {
  // A helper container (a preinstall build) reaches out through the agent's proxy, under its
  // policy.
  route.network = proxy_.network();
  const auto exports = egress_client_env(kEgressProxyAlias);
  route.env.insert(route.env.end(), exports.begin(), exports.end());
}

void* EgressPart::query_interface(std::string_view id) noexcept {
  if (id == sdk::kNetworkEventsId)
    return static_cast<void*>(static_cast<sdk::NetworkEvents*>(this));
  if (id == sdk::kSecretEventsId) return static_cast<void*>(static_cast<sdk::SecretEvents*>(this));
  return nullptr;
}

void EgressPart::decorate_result(std::uint64_t mark, sdk::ExecResult& result) {
  if (auto notice = log_.notice(mark, kEgressNoticeQuiet); !notice.empty())
    result.notices.push_back(std::move(notice));
}

}  // namespace execmcp::plugins::docker_common
