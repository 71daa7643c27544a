// `egress.secrets` as a part of the container's lifecycle: at each start the values are read and
// the placeholders and the interception certificates made, once, before the proxy and the
// container exist; every command gets the placeholders and the variables that make common
// clients trust the agent's CA. The proxy's delivery (EgressPart) reads bundle().
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "docker_common/lifecycle/container_part.hpp"
#include "docker_common/lifecycle/container_spec.hpp"  // kTrustDir
#include "docker_common/parts/egress_policy.hpp"
#include "docker_common/parts/egress_secrets.hpp"

namespace execmcp::plugins::docker_common {

class ContainerLifecycle;

// Where the sandbox finds the agent's CA: a directory only the server writes (the trust part
// fills it at each create), holding the image's system roots with the CA appended, and the CA
// alone (for NODE_EXTRA_CA_CERTS, which adds to Node's own roots).
inline constexpr const char* kTrustBundlePath = "/.execmcp-trust/ca-bundle.pem";
inline constexpr const char* kTrustCaPath = "/.execmcp-trust/ca.pem";

// "NAME=path" for the variables curl, Python (ssl, requests), git, pip, cargo and Node read for
// their roots: SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, GIT_SSL_CAINFO, PIP_CERT and
// CARGO_HTTP_CAINFO name kTrustBundlePath, NODE_EXTRA_CA_CERTS kTrustCaPath.
std::vector<std::string> egress_trust_env();

// The host paths an agent's sandbox can see (its grants, tools, skills and temp workspace, its
// extra mounts): a secret's file must lie in none of them.
std::vector<std::string> agent_visible_paths(const ContainerLifecycle& lifecycle);

// Added (before EgressPart) when the egress policy has secrets; a managed container's only.
class EgressSecretsPart final : public ContainerPart {
 public:
  // Throws std::invalid_argument when a value or the upstream_ca cannot be read now (the config
  // check fails, as for missing credentials); each start reads them again.
  EgressSecretsPart(ContainerLifecycle& lifecycle, const EgressPolicy& policy);

  // Reads the values, makes the placeholders, mints the CA and the leaves, reads upstream_ca:
  // "" or why the agent must not start (naming the secret or file, never a value).
  std::string prepare_start() override;
  // NAME=<placeholder> for each secret, and egress_trust_env().
  void add_call_env(std::vector<std::string>& env) const override;

  // This start's bundle for the injector (label, CA, leaves, rules, upstream roots); empty
  // before the first prepare_start() and after a failed one. For the lifecycle's steps, which
  // never run beside prepare_start(); a command's thread uses secrets().
  [[nodiscard]] const egress_secrets::SecretBundle& bundle() const { return secrets_->bundle(); }
  [[nodiscard]] std::shared_ptr<const AgentSecrets> secrets() const;

 private:
  ContainerLifecycle& lifecycle_;
  const EgressPolicy& policy_;  // the lifecycle's settings, which outlive this part
  mutable std::mutex mutex_;    // guards secrets_ and env_ (the pointers)
  std::shared_ptr<const AgentSecrets> secrets_;
  std::shared_ptr<const std::vector<std::string>> env_;
};

}  // namespace execmcp::plugins::docker_common
