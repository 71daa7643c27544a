// The test binary's swarm cluster as a gtest Environment (swarm_fixture.hpp).
#include "swarm_fixture.hpp"

namespace execmcp::tests::swarm {
namespace {

class SwarmEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { SwarmCluster::get().start(); }
  void TearDown() override { SwarmCluster::get().stop(); }
};

// Registered when this file is linked in (gtest owns it).
[[maybe_unused]] ::testing::Environment* const g_environment =
    ::testing::AddGlobalTestEnvironment(new SwarmEnvironment);

}  // namespace

SwarmCluster& SwarmCluster::get() {
  static SwarmCluster cluster;
  return cluster;
}

}  // namespace execmcp::tests::swarm
