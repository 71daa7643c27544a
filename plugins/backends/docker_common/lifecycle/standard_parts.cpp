// The parts every agent's container has (container_lifecycle.hpp, add_standard_parts()), in the
// order they are asked: what a step needs first comes first (the user is chosen before the
// credentials are checked readable by it; the proxy is up before preinstall goes through it).
#include <memory>
#include <stdexcept>

#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "docker_common/parts/attached_container.hpp"
#include "docker_common/parts/credentials.hpp"
#include "docker_common/parts/egress_part.hpp"
#include "docker_common/parts/egress_secrets_part.hpp"
#include "docker_common/parts/egress_trust.hpp"
#include "docker_common/parts/preinstall_part.hpp"
#include "docker_common/parts/protected_paths.hpp"
#include "docker_common/parts/workspace_access.hpp"

namespace execmcp::plugins::docker_common {

void add_standard_parts(ContainerLifecycle& lifecycle, DockerSettings& settings) {
  auto protected_paths = std::make_unique<ProtectedPathsPart>(lifecycle);
  if (lifecycle.attached())
    lifecycle.parts().adopt(std::make_unique<AttachedContainerPart>(lifecycle, *protected_paths));
  lifecycle.parts().adopt(std::move(protected_paths));
  if (!lifecycle.attached())
    lifecycle.parts().adopt(std::make_unique<WorkspaceAccessPart>(lifecycle));
  // Its mounts join the container's extra mounts, so every mount check sees them.
  auto credentials = std::make_unique<CredentialsPart>(lifecycle, settings.credentials);
  settings.extra_mounts.insert(settings.extra_mounts.end(), credentials->mounts().begin(),
                               credentials->mounts().end());
  lifecycle.parts().adopt(std::move(credentials));
  // Where the workspace is mounted: after the credentials, whose mounts it must not clash with.
  if (auto err = check_sandbox_cwd(*lifecycle.init(), settings); !err.empty())
    throw std::invalid_argument(err);
  auto preinstall =
      settings.preinstall.empty() ? nullptr : std::make_unique<PreinstallPart>(lifecycle);
  // The secrets are read and the certificates made before the proxy that is given them starts.
  const EgressSecretsPart* secrets = nullptr;
  if (settings.egress && !settings.egress->secrets.empty() && !lifecycle.attached()) {
    auto part = std::make_unique<EgressSecretsPart>(lifecycle, *settings.egress);
    secrets = part.get();
    lifecycle.parts().adopt(std::move(part));
    // The sandbox trusts this start's CA: its files are put in each container made.
    lifecycle.parts().adopt(std::make_unique<EgressTrustPart>(
        lifecycle, [secrets] { return secrets->bundle().ca_cert_pem; }));
  }
  if (settings.egress && !lifecycle.attached())
    lifecycle.parts().adopt(std::make_unique<EgressPart>(lifecycle, *settings.egress, secrets));
  if (preinstall) lifecycle.parts().adopt(std::move(preinstall));
}

}  // namespace execmcp::plugins::docker_common
