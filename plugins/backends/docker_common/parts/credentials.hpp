// The `credentials` setting made real: the credential files of the server's $HOME bound read-only
// into the image user's home, and the secret environment given to each command (never to the
// container's config, labels or logs); and the part that does it for the container's lifecycle.
#pragma once

#include <sys/types.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "docker_common/lifecycle/container_part.hpp"
#include "docker_common/settings/docker_settings.hpp"

namespace execmcp::plugins::docker_common {

// One `credentials.mount` kind: a file or directory of the server's $HOME, bound read-only at the
// same place under the image user's home (MassGen's targets, under /home/execmcp).
struct CredentialKind {
  const char* name;
  const char* home_path;  // relative to $HOME
  const char* target;     // in the container
};
inline constexpr std::array<CredentialKind, 5> kCredentialKinds = {{
    {"ssh_keys", ".ssh", "/home/execmcp/.ssh"},
    {"git_config", ".gitconfig", "/home/execmcp/.gitconfig"},
    {"gh_config", ".config/gh", "/home/execmcp/.config/gh"},
    {"npm_config", ".npmrc", "/home/execmcp/.npmrc"},
    {"pypi_config", ".pypirc", "/home/execmcp/.pypirc"},
}};

// nullptr for an unknown kind.
const CredentialKind* find_credential_kind(std::string_view name);
// "ssh_keys, git_config, gh_config, npm_config, pypi_config".
std::string credential_kind_names();

// "NAME=value" entries appended to every command's environment. Immutable once made, shared by the
// calls that use it.
using SecretEnv = std::vector<std::string>;

struct ResolvedCredentials {
  std::vector<MountSpec> mounts;         // the kinds' read-only binds (canonical host sources)
  std::shared_ptr<const SecretEnv> env;  // never null
  std::vector<std::string> names;        // the variables' names, sorted: for logs (never values)
  std::string error;                     // "" or why; names files and variables, never a value
};

// Reads what `credentials` names: every named file must exist and every named variable must be
// set, else `error`. Env order, later wins: env_file (only env_vars_from_file when given),
// pass_all_env (less the variables of skipped_by_pass_all_env()), env_vars. A whole env_file and
// pass_all_env leave out `credentials.withheld` (the egress secrets' names and sources).
// `server_env` is the server's environment ($HOME among it).
ResolvedCredentials resolve_credentials(const CredentialsSettings& credentials,
                                        const std::map<std::string, std::string>& server_env);

// The variables pass_all_env leaves out: the server's own (PATH, HOME, USER, LOGNAME, SHELL, PWD,
// OLDPWD, TERM, TMPDIR, LD_*, DOCKER_*, EXECMCP_*), which would break or mislead the container.
bool skipped_by_pass_all_env(std::string_view name);

// This process's environment.
std::map<std::string, std::string> server_environment();

// "" when uid:gid can read every credential mount (and enter it, for a directory); else an error
// naming the kind's file and the fix. The container user cannot read what it cannot read on the
// host: a 0600 key of another uid would fail at the first `git push`, so it fails the start.
std::string check_credentials_readable(const std::vector<MountSpec>& mounts, uid_t uid, gid_t gid);

class ContainerLifecycle;

// Credentials as a part of the container's lifecycle: read when the settings are (missing files
// and variables are a config error), again at each managed start (then checked readable by the
// container user), and the secrets given to each command's environment.
class CredentialsPart final : public ContainerPart {
 public:
  // Throws std::invalid_argument when a named file or variable is missing.
  CredentialsPart(ContainerLifecycle& lifecycle, const CredentialsSettings& settings);

  // The read-only mounts, for the container's `extra_mounts` (so the mount checks see them).
  [[nodiscard]] const std::vector<MountSpec>& mounts() const { return mounts_; }

  std::string prepare_start() override;
  void add_call_env(std::vector<std::string>& env) const override;

 private:
  ContainerLifecycle& lifecycle_;
  const CredentialsSettings& settings_;  // the lifecycle's, which outlives this part
  std::vector<MountSpec> mounts_;
  mutable std::mutex mutex_;  // guards env_ (the pointer; what it points to never changes)
  std::shared_ptr<const SecretEnv> env_;
};

}  // namespace execmcp::plugins::docker_common
