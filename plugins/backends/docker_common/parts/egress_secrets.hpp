// The values of an agent's `egress.secrets`, read by the server at each agent start from its own
// environment or a file, with the placeholders the sandbox holds instead, kept in memory only and
// wiped when dropped.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "docker_common/parts/egress_policy.hpp"
#include "execmcp/egress_secrets/placeholder.hpp"
#include "execmcp/egress_secrets/secret_rule.hpp"

namespace execmcp::plugins::docker_common {

// Overwrites the bytes of `text` (OPENSSL_cleanse) and empties it.
void cleanse(std::string& text) noexcept;

// OpenSSL's RAND_bytes; throws std::runtime_error when the generator fails.
egress_secrets::RandomBytes openssl_random_bytes();

// An agent's secrets for one start, as the injector gets them: the rules (values and
// placeholders, from resolve_secret_values()), then the certificates and the upstream roots.
// The values and the leaves' private keys live only here and are wiped (OPENSSL_cleanse) when
// this is destroyed or assigned over. Movable, not copyable.
class AgentSecrets {
 public:
  AgentSecrets() = default;
  ~AgentSecrets();
  AgentSecrets(AgentSecrets&& other) noexcept;
  AgentSecrets& operator=(AgentSecrets&& other) noexcept;
  AgentSecrets(const AgentSecrets&) = delete;
  AgentSecrets& operator=(const AgentSecrets&) = delete;

  [[nodiscard]] const egress_secrets::SecretBundle& bundle() const { return bundle_; }
  [[nodiscard]] egress_secrets::SecretBundle& bundle() { return bundle_; }
  [[nodiscard]] const std::vector<egress_secrets::SecretRule>& rules() const {
    return bundle_.secrets;
  }
  // "NAME=<placeholder>" for each secret, in the settings' order: what every command gets.
  [[nodiscard]] std::vector<std::string> placeholder_env() const;
  // The hosts named by the secrets, each once, in the settings' order: one leaf each.
  [[nodiscard]] std::vector<std::string> hosts() const;

 private:
  void wipe() noexcept;

  egress_secrets::SecretBundle bundle_;
};

// Reads the value of each of `policy.secrets` (a variable of `server_env`, or a file whose one
// trailing newline is dropped) and makes its placeholder with `random`. "" or why not, naming the
// secret and its source, never a value: "secret GITHUB_TOKEN: env:GITHUB_TOKEN is not set",
// "secret T: file:/x: No such file or directory", a value placeholder_problem() refuses (with its
// sentence), or a file that lies in one of `agent_paths` (host paths the agent's sandbox can see:
// its grants, mounts, tools): the agent could read it (or choose it). Symlinks are resolved before
// that comparison. On success `out` holds the rules (label, certificates and roots unset).
std::string resolve_secret_values(const EgressPolicy& policy,
                                  const std::vector<std::string>& agent_paths,
                                  const std::map<std::string, std::string>& server_env,
                                  const egress_secrets::RandomBytes& random, AgentSecrets& out);

// The text of `egress.upstream_ca`: "" or why not (naming the file: missing, unreadable, larger
// than 1 MiB, or holding no PEM certificate that OpenSSL reads). `pem` is left empty on error.
std::string read_upstream_ca(const std::string& path, std::string& pem);

}  // namespace execmcp::plugins::docker_common
