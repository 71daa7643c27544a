// Exports the docker-cli backend as an execmcp plugin: the shared container backend driven
// through a docker-compatible CLI binary (docker, podman), for engines the socket API cannot
// reach (ssh://, docker contexts, Podman).
#include "execmcp/sdk/plugin.hpp"
#include "docker_cli/docker_cli_engine.hpp"
#include "docker_common/container_backend.hpp"
#include "docker_common/settings/settings_description.hpp"
#include "execmcp/sdk/settings_check.hpp"

namespace execmcp::plugins::docker_cli {

class DockerCliBackend final : public docker_common::ContainerBackend {
 public:
  explicit DockerCliBackend(const sdk::BackendInit& init)
      : DockerCliBackend(init, docker_common::parse_docker_settings(
                                   init.settings_json, docker_common::EngineKind::kCli)) {}

 private:
  DockerCliBackend(const sdk::BackendInit& init, docker_common::DockerSettings settings)
      : ContainerBackend(init, "docker-cli", settings,
                         std::make_unique<DockerCliEngine>(settings)) {}
};

// Each problem of the settings at the config line it was written on, before the backend is made.
void check_settings(const std::string& settings_json, std::vector<sdk::SettingsProblem>& problems) {
  docker_common::check_docker_settings(settings_json, docker_common::EngineKind::kCli, problems);
}

}  // namespace execmcp::plugins::docker_cli

EXECMCP_BACKEND_PLUGIN(execmcp::plugins::docker_cli::DockerCliBackend, "docker-cli", "0.1.0",
                       "one persistent container per agent, driven through the docker (or podman) "
                       "CLI: remote engines over SSH, docker contexts, Podman")
EXECMCP_SETTINGS_CHECK(execmcp::plugins::docker_cli::check_settings)
EXECMCP_SETTINGS_DESCRIPTION(execmcp::plugins::docker_common::describe_docker_settings)
