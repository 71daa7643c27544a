// The Engine's network calls (the egress proxy's networks) against the REAL engine, through both
// engines (docker-api: the Engine API; docker-cli: the docker binary): an internal network made
// with labels and found by them, a container made on it and joined to a second one with an
// address on each, removal refused while the container is on it, and gone after.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "docker_api_engine.hpp"
#include "docker_cli/docker_cli_engine.hpp"
#include "docker_common/lifecycle/container_spec.hpp"

namespace execmcp::plugins {
namespace {

namespace dc = docker_common;
using Kind = dc::EngineError::Kind;

class EngineNetworks : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const char* flag = std::getenv("EXECMCP_DOCKER_TESTS");
    if (flag != nullptr && std::string(flag) == "0") GTEST_SKIP() << "EXECMCP_DOCKER_TESTS=0";
    settings_ = dc::parse_docker_settings(
        "{}", GetParam() == "api" ? dc::EngineKind::kApi : dc::EngineKind::kCli);
    if (GetParam() == "api")
      engine_ = std::make_unique<docker_api::DockerApiEngine>(settings_.docker_host);
    else
      engine_ = std::make_unique<docker_cli::DockerCliEngine>(settings_);
    if (!engine_->connect().ok())
      GTEST_SKIP() << "no engine answers (scripts/docker-engine.sh start)";
    if (!engine_->check_image(settings_.image).ok())
      GTEST_SKIP() << settings_.image << " is missing (docker/build.sh)";
    prefix_ = "execmcp-nettest-" + GetParam() + "-" + std::to_string(::getpid());
  }
  void TearDown() override {
    if (!engine_) return;
    engine_->remove(prefix_);
    for (const auto& n : {prefix_ + "-net", prefix_ + "-up"}) engine_->remove_network(n);
  }

  dc::DockerSettings settings_;
  std::unique_ptr<dc::Engine> engine_;
  std::string prefix_;
};

TEST_P(EngineNetworks, AreMadeFoundJoinedAndRemoved) {
  const std::string net = prefix_ + "-net";
  const std::string upstream = prefix_ + "-up";
  const std::map<std::string, std::string> labels = {{"execmcp.test", net}};
  const std::map<std::string, std::string> options = {
      {"com.docker.network.bridge.inhibit_ipv4", "true"}};
  const auto made = engine_->create_network({net, true, labels, options});
  ASSERT_TRUE(made.ok()) << made.message;
  ASSERT_TRUE(engine_->create_network({upstream, false, {}, {}}).ok());
  dc::NetworkInfo info;
  ASSERT_TRUE(engine_->inspect_network(net, info).ok());
  EXPECT_EQ(info.name, net);
  EXPECT_TRUE(info.internal);
  EXPECT_EQ(info.labels, labels);
  EXPECT_EQ(info.options, options);  // the driver's options are passed on
  EXPECT_EQ(engine_->create_network({net, true, labels, options}).kind, Kind::kConflict);
  std::vector<dc::NetworkInfo> found;
  ASSERT_TRUE(engine_->list_networks(labels, found).ok());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].name, net);
  EXPECT_EQ(engine_->inspect_network(prefix_ + "-none", info).kind, Kind::kNotFound);

  dc::ContainerSpec spec;
  spec.name = prefix_;
  spec.image = settings_.image;
  spec.user = "1000:1000";
  spec.network = net;
  spec.cmd = {"sleep", "infinity"};
  spec.labels = {{"execmcp.test", net}};
  const auto created = engine_->create(spec);
  ASSERT_TRUE(created.ok()) << created.message;
  ASSERT_TRUE(engine_->start(prefix_).ok());
  const auto joined = engine_->connect_network(upstream, prefix_, "egress");
  ASSERT_TRUE(joined.ok()) << joined.message;
  dc::ContainerInfo c;
  ASSERT_TRUE(engine_->inspect(prefix_, c).ok());
  ASSERT_TRUE(c.networks.contains(net) && c.networks.contains(upstream));
  EXPECT_FALSE(c.networks[net].empty());  // an IPv4 address on each
  EXPECT_FALSE(c.networks[upstream].empty());
  EXPECT_EQ(engine_->remove_network(net).kind, Kind::kConflict);  // the container is on it
  ASSERT_TRUE(engine_->remove(prefix_).ok());
  EXPECT_TRUE(engine_->remove_network(net).ok());
  EXPECT_EQ(engine_->inspect_network(net, info).kind, Kind::kNotFound);
  EXPECT_EQ(engine_->remove_network(net).kind, Kind::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(BothEngines, EngineNetworks, ::testing::Values("api", "cli"));

}  // namespace
}  // namespace execmcp::plugins
