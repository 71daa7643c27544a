// Exports the docker-api backend as an execmcp plugin.
#include "execmcp/sdk/plugin.hpp"
#include "docker_api_backend.hpp"

EXECMCP_BACKEND_PLUGIN(execmcp::plugins::docker_api::DockerApiBackend, "docker-api", "0.1.0",
                       "one persistent Docker container per agent, driven over the Engine API")
