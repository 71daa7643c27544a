// See egress_secrets_part.hpp.
#include "docker_common/parts/egress_secrets_part.hpp"

#include <chrono>
#include <stdexcept>

#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "docker_common/parts/credentials.hpp"
#include "docker_common/parts/egress_ca.hpp"

namespace execmcp::plugins::docker_common {
namespace {

// Reads every value and makes this start's secrets: "" or why not.
std::string make_secrets(const EgressPolicy& policy, const ContainerLifecycle& lifecycle,
                         AgentSecrets& out, std::chrono::microseconds& mint_time) {
  AgentSecrets made;
  if (auto err = resolve_secret_values(policy, agent_visible_paths(lifecycle), server_environment(),
                                       openssl_random_bytes(), made);
      !err.empty())
    return err;
  auto& bundle = made.bundle();
  bundle.label = lifecycle.init()->agent_id;
  if (!policy.upstream_ca.empty())
    if (auto err = read_upstream_ca(policy.upstream_ca, bundle.upstream_ca_pem); !err.empty())
      return err;
  const auto started = std::chrono::steady_clock::now();
  try {
    auto certificates = mint_agent_certificates(made.hosts(), lifecycle.name());
    bundle.ca_cert_pem = std::move(certificates.ca_cert_pem);
    bundle.leaves = std::move(certificates.leaves);
  } catch (const std::exception& e) {
    return e.what();
  }
  mint_time = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  out = std::move(made);
  return {};
}

}  // namespace

std::vector<std::string> egress_trust_env() {
  std::vector<std::string> env;
  for (const char* name : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                           "GIT_SSL_CAINFO", "PIP_CERT", "CARGO_HTTP_CAINFO"})
    env.push_back(std::string(name) + "=" + kTrustBundlePath);
  env.push_back(std::string("NODE_EXTRA_CA_CERTS=") + kTrustCaPath);
  return env;
}

std::vector<std::string> agent_visible_paths(const ContainerLifecycle& lifecycle) {
  const auto init = lifecycle.init();
  std::vector<std::string> paths;
  for (const auto& grant : init->paths) paths.push_back(grant.path);
  for (const auto* dir : {&init->tools_dir, &init->skills_dir, &init->temp_workspace})
    if (!dir->empty()) paths.push_back(*dir);
  for (const auto& mount : lifecycle.settings().extra_mounts) paths.push_back(mount.source);
  return paths;
}

EgressSecretsPart::EgressSecretsPart(ContainerLifecycle& lifecycle, const EgressPolicy& policy)
    : lifecycle_(lifecycle),
      policy_(policy),
      secrets_(std::make_shared<const AgentSecrets>()),
      env_(std::make_shared<const std::vector<std::string>>()) {
  // What is missing fails the config check, as credentials do; the values are dropped again.
  AgentSecrets values;
  auto err = resolve_secret_values(policy_, agent_visible_paths(lifecycle_), server_environment(),
                                   openssl_random_bytes(), values);
  std::string pem;
  if (err.empty() && !policy_.upstream_ca.empty()) err = read_upstream_ca(policy_.upstream_ca, pem);
  if (!err.empty()) throw std::invalid_argument(err);
}

std::string EgressSecretsPart::prepare_start() {
  // A failed start leaves no secrets behind: nothing is delivered, no command gets a placeholder.
  {
    std::lock_guard lock(mutex_);
    secrets_ = std::make_shared<const AgentSecrets>();
    env_ = std::make_shared<const std::vector<std::string>>();
  }
  auto made = std::make_shared<AgentSecrets>();
  std::chrono::microseconds mint_time{0};
  if (auto err = make_secrets(policy_, lifecycle_, *made, mint_time); !err.empty()) return err;
  auto env = std::make_shared<std::vector<std::string>>(made->placeholder_env());
  const auto trust = egress_trust_env();
  env->insert(env->end(), trust.begin(), trust.end());
  // Names and counts only: values never reach a log.
  std::string names;
  for (const auto& rule : made->rules()) names += (names.empty() ? "" : ", ") + rule.name;
  lifecycle_.log(sdk::LogLevel::Info, "egress secrets: " + std::to_string(made->rules().size()) +
                                          " (" + names + ") held by the proxy for " +
                                          std::to_string(made->bundle().leaves.size()) +
                                          " host(s); CA and leaves made in " +
                                          std::to_string((mint_time.count() + 500) / 1000) + " ms");
  std::lock_guard lock(mutex_);
  secrets_ = std::move(made);
  env_ = std::move(env);
  return {};
}

void EgressSecretsPart::add_call_env(std::vector<std::string>& env) const {
  std::shared_ptr<const std::vector<std::string>> mine;
  {
    std::lock_guard lock(mutex_);
    mine = env_;
  }
  env.insert(env.end(), mine->begin(), mine->end());
}

std::shared_ptr<const AgentSecrets> EgressSecretsPart::secrets() const {
  std::lock_guard lock(mutex_);
  return secrets_;
}

}  // namespace execmcp::plugins::docker_common
