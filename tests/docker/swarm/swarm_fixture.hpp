// The docker-swarm tests' cluster, once per test binary: a gtest Environment (registered when
// swarm_fixture.cpp is linked in) that starts SwarmCluster::get() (swarm_cluster.hpp: three
// engines in containers, the runner's test image on every node, this process in the network
// namespace of a shim container on node 1) before the first test and stops it after the last.
//
// Every test calls EXECMCP_REQUIRE_SWARM() first: it skips, saying why, where the cluster cannot
// be had (no engine, node containers that cannot start here: exit 77 of the script, not root,
// EXECMCP_SWARM_TESTS=0 or EXECMCP_DOCKER_TESTS=0), and fails when setting it up went wrong.
#pragma once

#include <gtest/gtest.h>

#include "swarm_cluster.hpp"

// First line of every swarm test: skips (or fails) with the cluster's reason when it is not ready.
#define EXECMCP_REQUIRE_SWARM()                                                                  \
  do {                                                                                           \
    const auto& swarm_cluster_ = ::execmcp::tests::swarm::SwarmCluster::get();                   \
    if (!swarm_cluster_.ready()) {                                                               \
      if (swarm_cluster_.failed()) GTEST_FAIL() << "swarm cluster: " << swarm_cluster_.reason(); \
      GTEST_SKIP() << "swarm cluster: " << swarm_cluster_.reason();                              \
    }                                                                                            \
  } while (0)
