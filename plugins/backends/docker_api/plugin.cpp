// Exports the docker-api backend as an execmcp plugin: the shared container backend over the
// Engine API.
#include "execmcp/sdk/plugin.hpp"
#include "docker_api_engine.hpp"
#include "docker_common/container_backend.hpp"
#include "docker_common/settings/settings_description.hpp"
#include "execmcp/sdk/settings_check.hpp"

namespace execmcp::plugins::docker_api {

class DockerApiBackend final : public docker_common::ContainerBackend {
 public:
  explicit DockerApiBackend(const sdk::BackendInit& init)
      : DockerApiBackend(init, docker_common::parse_docker_settings(init.settings_json)) {}

 private:
  DockerApiBackend(const sdk::BackendInit& init, docker_common::DockerSettings settings)
      : ContainerBackend(init, "docker-api", settings,
                         std::make_unique<DockerApiEngine>(settings.docker_host)) {}
};

// Each problem of the settings at the config line it was written on, before the backend is made.
void check_settings(const std::string& settings_json, std::vector<sdk::SettingsProblem>& problems) {
  docker_common::check_docker_settings(settings_json, docker_common::EngineKind::kApi, problems);
}

}  // namespace execmcp::plugins::docker_api

EXECMCP_BACKEND_PLUGIN(execmcp::plugins::docker_api::DockerApiBackend, "docker-api", "0.1.0",
                       "one persistent Docker container per agent, driven over the Engine API")
EXECMCP_SETTINGS_CHECK(execmcp::plugins::docker_api::check_settings)
EXECMCP_SETTINGS_DESCRIPTION(execmcp::plugins::docker_common::describe_docker_settings)
