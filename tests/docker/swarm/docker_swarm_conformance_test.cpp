// The SDK's backend conformance kit on the docker-swarm plugin, on a real 3-node swarm
// (swarm_cluster.hpp). The kit's backends are registered before GoogleTest reads them, and the
// settings name the cluster (its manager's socket, the shim container, the image), so this program
// starts the cluster in its own main() first (on the main thread, before any other thread: it
// joins the shim's network namespace) instead of the swarm tests' gtest Environment. The workspace
// is the sandbox's own volume (sandbox_workspace "/workspace"): the kit skips, saying so, the cases
// that look at it from the host. Where the cluster cannot be had, one case skips with the reason.
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "execmcp/conformance/backend_conformance.hpp"
#include "swarm_cluster.hpp"

namespace {

using execmcp::tests::swarm::SwarmCluster;

SwarmCluster& cluster() {
  static SwarmCluster c;
  return c;
}

std::string owner() {
  return "execmcp-swarm-conformance-" + std::to_string(::getpid());
}

TEST(DockerSwarmConformance, Cluster) {
  if (!cluster().ready()) {
    if (cluster().failed()) GTEST_FAIL() << "swarm cluster: " << cluster().reason();
    GTEST_SKIP() << "swarm cluster: " << cluster().reason();
  }
}

}  // namespace

int main(int argc, char** argv) {
  cluster().start();
  if (cluster().ready()) {
    execmcp::conformance::BackendUnderTest backend;
    backend.name = "docker_swarm";
    backend.factory = execmcp::conformance::plugin_backend_factory(EXECMCP_DOCKER_SWARM_PLUGIN);
    backend.settings_json = std::string(R"({"image":")") + cluster().image() +
                            R"(","docker_host":")" + cluster().docker_host() +
                            R"(","server_container":")" + cluster().shim_id() +
                            R"(","owner_id":")" + owner() +
                            R"(","pids_limit":256,"constraints":["node.role==worker"]})";
    backend.sandbox_workspace = "/workspace";
    execmcp::conformance::register_backend(std::move(backend));
  }
  ::testing::InitGoogleTest(&argc, argv);
  int status = RUN_ALL_TESTS();
  if (cluster().ready()) {
    // Nothing of this owner left once every case cleaned up; the volumes are the test's to remove.
    const auto left = cluster().wait_nothing_left(owner(), std::chrono::seconds(30));
    if (!left.empty()) {
      std::fprintf(stderr, "left behind by the docker-swarm backend:\n%s\n", left.c_str());
      status = 1;
    }
    if (const auto err = cluster().remove_volumes(owner()); !err.empty())
      std::fprintf(stderr, "cannot remove the test's volumes: %s\n", err.c_str());
  }
  cluster().stop();
  return status;
}
