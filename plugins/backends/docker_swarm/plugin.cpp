// Exports the docker-swarm backend as an execmcp plugin: sandboxes as Swarm services, reached
// through their listening runners.
#include "execmcp/sdk/plugin.hpp"
#include "docker_swarm/swarm_backend.hpp"
#include "docker_swarm/swarm_settings.hpp"
#include "execmcp/sdk/settings_check.hpp"

EXECMCP_BACKEND_PLUGIN(execmcp::plugins::docker_swarm::SwarmBackend, "docker-swarm", "0.1.0",
                       "each sandbox a Docker Swarm service of one task, placed across the "
                       "swarm's nodes and reached through its runner")
EXECMCP_SETTINGS_CHECK(execmcp::plugins::docker_swarm::check_swarm_settings)
EXECMCP_SETTINGS_DESCRIPTION(execmcp::plugins::docker_swarm::describe_swarm_settings)
