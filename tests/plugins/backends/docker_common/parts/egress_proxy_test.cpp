// Tests of `network: egress` in ContainerLifecycle against FakeEngine: the order in which the
// internal network, the proxy and the agent's container are made, brought back, stopped and
// removed, and the errors a start gives.
#include "docker_common/parts/egress_proxy.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "container_test_fixture.hpp"
#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "fake_engine.hpp"
#include "lifecycle_test_support.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using test_support::dead_pid;
using test_support::has;
using test_support::host_name;

class EgressLifecycleTest : public test_support::ContainerTest {
 protected:
  void SetUp() override {
    test_support::ContainerTest::SetUp();
    if (HasFatalFailure()) return;
    settings_.network = "egress";
    settings_.egress = EgressPolicy{};
    settings_.egress->allow.push_back({EgressEntry::Kind::kHost, "allowed.test", "allowed.test"});
    settings_.egress->upstream_network = "uplink";
    engine_.images.insert(settings_.image);
    engine_.images.insert(kEgressImage);
    engine_.networks["uplink"] = {"net-uplink", "uplink", "bridge", false, {}, {}, {}};
    name_ = container_name(init_.agent_id, init_.instance_id);
    net_ = name_ + "-egress-net";
    proxy_ = name_ + "-egress";
  }
  ContainerLifecycle make() { return ContainerLifecycle(init_, "docker-test", settings_, engine_); }
  // The calls after the start's own (from index `from`).
  std::vector<std::string> calls_from(std::size_t from) const {
    return {engine_.calls.begin() + static_cast<long>(from), engine_.calls.end()};
  }

  std::string name_, net_, proxy_;
};

TEST_F(EgressLifecycleTest, TheNetworkAndProxyAreUpBeforeTheAgentsContainerIsMade) {
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  // No leftover proxy: nothing to remove (its labels would be checked first).
  const std::vector<std::string> want = {
      "create_network " + net_, "create " + proxy_, "connect_network uplink " + proxy_,
      "start " + proxy_,        "create " + name_,  "start " + name_};
  EXPECT_EQ(engine_.calls, want);
  // The agent: on the internal network only, told where the proxy is.
  EXPECT_EQ(engine_.last_spec.network, net_);
  const auto& env = engine_.last_spec.env;
  // By its alias on the agent's network: a name of at most 63 characters, as DNS needs.
  const std::string url = std::string("http://") + kEgressProxyAlias + ":3128";
  for (const char* var : {"HTTP_PROXY=", "HTTPS_PROXY=", "http_proxy=", "https_proxy="})
    EXPECT_NE(std::find(env.begin(), env.end(), var + url), env.end()) << var;
  // The network is internal; it and the proxy carry the owner labels and a role.
  ASSERT_TRUE(engine_.networks.contains(net_));
  EXPECT_TRUE(engine_.networks[net_].internal);
  // ... and this machine has no address on it, so the agent has no gateway to the host's services.
  EXPECT_EQ(engine_.networks[net_].options,
            (std::map<std::string, std::string>{{kNoHostAddressOption, "true"}}));
  EXPECT_EQ(engine_.networks[net_].labels.at(kLabelRole), kRoleEgressNetwork);
  EXPECT_EQ(engine_.networks[net_].labels.at(kLabelOwnerPid), std::to_string(getpid()));
  const auto& proxy = engine_.containers.at(proxy_);
  EXPECT_EQ(proxy.labels.at(kLabelRole), kRoleEgressProxy);
  EXPECT_EQ(proxy.labels.at(kLabelManaged), "true");
  EXPECT_EQ(proxy.labels.at(kLabelOwnerHost), host_name());
  EXPECT_TRUE(proxy.state.running);
  EXPECT_TRUE(proxy.networks.contains("uplink"));
}

TEST_F(EgressLifecycleTest, TheProxyIsHardenedAndCarriesThePolicy) {
  EgressProxy egress(engine_, name_, *settings_.egress, "agent", {"agent", "unit", ""});
  ASSERT_EQ(egress.start(container_labels("agent", "unit", getpid(), host_name())), "");
  const auto& spec = engine_.last_spec;
  EXPECT_EQ(spec.name, proxy_);
  EXPECT_EQ(spec.image, kEgressImage);
  EXPECT_EQ(spec.network, net_);
  EXPECT_TRUE(spec.read_only_rootfs);
  EXPECT_TRUE(spec.tmpfs.contains("/tmp"));
  EXPECT_FALSE(spec.sudo);
  EXPECT_TRUE(spec.user.empty());  // the image's own (proxy, uid 13)
  EXPECT_TRUE(spec.cmd.empty());   // the image's entrypoint
  ASSERT_TRUE(spec.memory_bytes);
  EXPECT_GT(spec.pids_limit, 0);
  // The policy, served to the agent's network only.
  const std::string subnet = engine_.networks.at(net_).subnets.at(0);
  const bool conf = std::any_of(spec.env.begin(), spec.env.end(), [&](const std::string& e) {
    return e.starts_with(std::string(kEgressConfVariable) + "=") && has(e, "allowed.test") &&
           has(e, subnet);
  });
  EXPECT_TRUE(conf);
}

TEST_F(EgressLifecycleTest, CleanupRemovesTheAgentThenTheProxyThenTheNetwork) {
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  const auto from = engine_.calls.size();
  lifecycle.remove_container();
  // Each once its labels said it is this agent's: the containers by id, the network by name (the
  // socket proxy removes networks only by an execmcp-… name).
  const std::vector<std::string> want = {"remove id-" + name_, "remove id-" + proxy_,
                                         "remove_network " + net_};
  EXPECT_EQ(calls_from(from), want);
  EXPECT_TRUE(engine_.containers.empty());
  EXPECT_FALSE(engine_.networks.contains(net_));
  EXPECT_TRUE(engine_.networks.contains("uplink"));  // not ours
}

TEST_F(EgressLifecycleTest, AnUpstreamNetworkTheEngineLacksIsAClearStartError) {
  settings_.egress->upstream_network = "nowhere";
  auto lifecycle = make();
  const auto err = lifecycle.start();
  EXPECT_TRUE(has(err, "egress.upstream_network 'nowhere' does not exist on the engine")) << err;
  EXPECT_EQ(engine_.count("create_network " + net_), 0u);
  EXPECT_TRUE(engine_.containers.empty());
}

// Podman 4 refuses the option that keeps this machine off the agent's network: the start fails
// and says why, rather than leaving the host's services reachable around the proxy.
TEST_F(EgressLifecycleTest, AnEngineWithoutTheNoHostAddressOptionIsAClearStartError) {
  engine_.unsupported_network_options.insert(kNoHostAddressOption);
  auto lifecycle = make();
  const auto err = lifecycle.start();
  EXPECT_TRUE(has(err,
                  "this engine does not take the bridge option "
                  "com.docker.network.bridge.inhibit_ipv4"))
      << err;
  EXPECT_TRUE(has(err, "network: egress needs Docker Engine")) << err;
  EXPECT_FALSE(engine_.networks.contains(net_));
  EXPECT_TRUE(engine_.containers.empty());
}

// preinstall with egress: the install container is on the agent's network, once its proxy is up,
// and the script (not the container's environment, which a commit would keep) sets the proxy.
TEST_F(EgressLifecycleTest, APreinstallGoesThroughTheAgentsProxy) {
  settings_.preinstall.python = {"tinypkg"};
  auto lifecycle = make();
  const auto err = lifecycle.start();
  EXPECT_TRUE(has(err, "not faked")) << err;  // the fake builds no image
  const auto proxy_started =
      std::find(engine_.calls.begin(), engine_.calls.end(), "start " + proxy_);
  const auto install = std::find_if(engine_.calls.begin(), engine_.calls.end(),
                                    [](const auto& c) { return c.starts_with("create_install "); });
  ASSERT_NE(install, engine_.calls.end());
  EXPECT_LT(proxy_started, install) << "the proxy is up before the install";
  EXPECT_EQ(engine_.last_install.network, net_);
  ASSERT_EQ(engine_.last_install.cmd.size(), 4u);
  const auto& script = engine_.last_install.cmd[3];
  EXPECT_TRUE(
      has(script, std::string("export 'HTTPS_PROXY=http://") + kEgressProxyAlias + ":3128'\n"))
      << script;
  EXPECT_LT(script.find("HTTPS_PROXY"), script.find("pip install")) << script;
  // A failed install leaves neither the proxy nor its network.
  EXPECT_FALSE(engine_.containers.contains(proxy_));
  EXPECT_FALSE(engine_.networks.contains(net_));
}

TEST_F(EgressLifecycleTest, AMissingProxyImageSaysHowToBuildIt) {
  engine_.images.erase(kEgressImage);
  auto lifecycle = make();
  const auto err = lifecycle.start();
  EXPECT_TRUE(has(err, "image 'execmcp/egress:latest'")) << err;
  EXPECT_TRUE(has(err, "docker/build.sh --egress")) << err;
  EXPECT_TRUE(engine_.containers.empty());
  EXPECT_FALSE(engine_.networks.contains(net_));
}

TEST_F(EgressLifecycleTest, AFailedAgentCreateLeavesNoProxyOrNetwork) {
  engine_.refuse_create.insert(name_);
  auto lifecycle = make();
  const auto err = lifecycle.start();
  EXPECT_TRUE(has(err, "creating container '" + name_ + "'")) << err;
  EXPECT_EQ(engine_.count("start " + proxy_), 1u);  // it was up, and went again
  EXPECT_TRUE(engine_.containers.empty());
  EXPECT_FALSE(engine_.networks.contains(net_));
}

// Issue 28, finding 1: a user whose key made "<alice's container>-egress" and alice's proxy
// removed each other's proxy at each start. A proxy or network under our names that another
// sandbox made is now left alone, and the start says why.
TEST_F(EgressLifecycleTest, AProxyOrNetworkOfAnotherSandboxUnderOurNamesIsLeftAlone) {
  const std::map<std::string, std::string> bobs = {{kLabelManaged, "true"},
                                                   {kLabelAgent, init_.agent_id},
                                                   {kLabelInstance, "unit-u-bob"},
                                                   {kLabelRole, kRoleEgressProxy}};
  engine_.add_container(proxy_, true, bobs);
  auto err = make().start();
  EXPECT_TRUE(has(err, "an egress proxy named " + proxy_)) << err;
  EXPECT_TRUE(has(err, "is not this sandbox's")) << err;
  ASSERT_TRUE(engine_.containers.contains(proxy_));
  EXPECT_EQ(engine_.containers.at(proxy_).labels, bobs);
  EXPECT_TRUE(engine_.containers.at(proxy_).state.running);
  EXPECT_FALSE(engine_.containers.contains(name_));
  EXPECT_EQ(engine_.count("remove id-" + proxy_) + engine_.count("remove " + proxy_), 0u);

  engine_.containers.clear();
  auto net_labels = bobs;
  net_labels[kLabelRole] = kRoleEgressNetwork;
  engine_.networks[net_] = {"net-bob", net_, "bridge", true, net_labels, {"172.31.0.0/24"}, {}};
  err = make().start();
  EXPECT_TRUE(has(err, "egress network named " + net_)) << err;
  ASSERT_TRUE(engine_.networks.contains(net_));
  EXPECT_EQ(engine_.networks.at(net_).labels, net_labels);
}

// The default upstream is the engine's default bridge, which refuses a network-scoped alias: the
// proxy was connected with one, so `network: egress` with the default upstream never started.
TEST_F(EgressLifecycleTest, TheProxyJoinsTheDefaultBridgeWithoutAnAlias) {
  engine_.networks["bridge"] = {
      "net-bridge", "bridge", "bridge", false, {}, {}, {{kDefaultBridgeOption, "true"}}};
  settings_.egress->upstream_network = "bridge";
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  EXPECT_EQ(engine_.last_connect_alias, "");
  EXPECT_TRUE(engine_.containers.at(proxy_).networks.contains("bridge"));
  lifecycle.remove_container();
  // A network of the operator's own takes the proxy's name as its alias, as before.
  settings_.egress->upstream_network = "uplink";
  auto other = make();
  ASSERT_EQ(other.start(), "");
  EXPECT_EQ(engine_.last_connect_alias, proxy_);
}

TEST_F(EgressLifecycleTest, RecoveryBringsAGoneProxyBackBeforeTheAgent) {
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  engine_.containers.erase(proxy_);
  engine_.containers.at(name_).state.running = false;
  const auto from = engine_.calls.size();
  std::vector<std::string> notices;
  ASSERT_EQ(lifecycle.recover(notices), "");
  const std::vector<std::string> want = {"create " + proxy_, "connect_network uplink " + proxy_,
                                         "start " + proxy_, "start id-" + name_};
  EXPECT_EQ(calls_from(from), want);
}

TEST_F(EgressLifecycleTest, SuspendStopsTheProxyAndResumeStartsItFirst) {
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  auto from = engine_.calls.size();
  ASSERT_EQ(lifecycle.stop_container(std::chrono::seconds(1)), "");
  EXPECT_EQ(calls_from(from), (std::vector<std::string>{"stop id-" + name_, "stop id-" + proxy_}));
  from = engine_.calls.size();
  std::vector<std::string> notices;
  ASSERT_EQ(lifecycle.recover(notices, /*expected=*/true), "");
  EXPECT_EQ(calls_from(from),
            (std::vector<std::string>{"start id-" + proxy_, "start id-" + name_}));
  // A running proxy is left alone.
  from = engine_.calls.size();
  engine_.containers.at(name_).state.running = false;
  ASSERT_EQ(lifecycle.recover(notices), "");
  EXPECT_EQ(calls_from(from), std::vector<std::string>{"start id-" + name_});
}

TEST_F(EgressLifecycleTest, ADeadOwnersNetworksAreRemovedAtStartAndLiveOnesKept) {
  const long dead = dead_pid();
  auto labels = [&](long pid, const std::string& host) {
    return std::map<std::string, std::string>{{kLabelManaged, "true"},
                                              {kLabelOwnerHost, host},
                                              {kLabelOwnerPid, std::to_string(pid)},
                                              {kLabelRole, kRoleEgressNetwork}};
  };
  engine_.networks["orphan-net"] = {
      "n1", "orphan-net", "bridge", true, labels(dead, host_name()), {}, {}};
  engine_.networks["live-net"] = {"n2", "live-net", "bridge", true, labels(getpid(), host_name()),
                                  {},   {}};
  engine_.networks["far-net"] = {"n3", "far-net", "bridge", true, labels(dead, "another-host"),
                                 {},   {}};
  engine_.add_container("orphan-egress", true, labels(dead, host_name()));
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  EXPECT_FALSE(engine_.networks.contains("orphan-net"));
  EXPECT_FALSE(engine_.containers.contains("orphan-egress"));
  EXPECT_TRUE(engine_.networks.contains("live-net"));
  EXPECT_TRUE(engine_.networks.contains("far-net"));
  // The containers first: a network is removed only once nothing is on it.
  const auto at = [&](const std::string& call) {
    return std::find(engine_.calls.begin(), engine_.calls.end(), call) - engine_.calls.begin();
  };
  EXPECT_LT(at("remove id-orphan-egress"), at("remove_network orphan-net"));
}

TEST_F(EgressLifecycleTest, AnAgentWithoutEgressSweepsADeadOwnersNetworkWithItsProxy) {
  settings_.network = "none";
  settings_.egress.reset();
  const long dead = dead_pid();
  const std::map<std::string, std::string> labels = {{kLabelManaged, "true"},
                                                     {kLabelOwnerHost, host_name()},
                                                     {kLabelOwnerPid, std::to_string(dead)}};
  engine_.networks["orphan-net"] = {"n1", "orphan-net", "bridge", true, labels, {}, {}};
  engine_.add_container("orphan-egress", false, labels);
  auto lifecycle = make();
  ASSERT_EQ(lifecycle.start(), "");
  EXPECT_FALSE(engine_.containers.contains("orphan-egress"));
  EXPECT_FALSE(engine_.networks.contains("orphan-net"));
  EXPECT_EQ(engine_.last_spec.network, "none");
  EXPECT_EQ(engine_.count("create_network " + net_), 0u);
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
