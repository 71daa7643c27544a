// The per-agent container as `docker create` / `podman create` arguments: the second rendering of
// one ContainerSpec, beside container_create_body() (the Engine API's JSON), so both Docker
// plugins make the same container.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "docker_common/engine/engine.hpp"
#include "docker_common/lifecycle/container_spec.hpp"

namespace execmcp::plugins::docker_common {

// Which CLI reads the arguments: Podman's `create` differs where its defaults differ from
// Docker's (a pids limit of 4096, tmpfs over /run, /tmp and /var/tmp with --read-only) and has no
// per-container size limit.
enum class CliFlavor { kDocker, kPodman };

struct CreateArgs {
  std::vector<std::string> args;  // everything after "create", ending with the image and cmd
  std::string error;              // why this spec cannot be made with this CLI ("" when it can)
};

// Every flag has the form --flag=value, so no value is ever read as a flag of its own.
CreateArgs container_create_args(const ContainerSpec& spec, CliFlavor flavor);

// The install container of `preinstall` (see install_create_body(), preinstall.hpp).
CreateArgs install_create_args(const InstallSpec& spec, CliFlavor flavor);

// NanoCpus as the exact decimal --cpus reads back into the same value: 1500000000 -> "1.5",
// 1000000000 -> "1", 1 -> "0.000000001".
std::string exact_cpus(std::int64_t nano_cpus);

// One field of a --mount value, quoted as a CSV field when it holds ',', '"' or a line break (the
// CLI reads --mount with a CSV reader).
std::string mount_field(const std::string& field);

}  // namespace execmcp::plugins::docker_common
