// Golden checks of a swarm sandbox's ServiceSpec (API 1.41) and of its update bodies.
#include "docker_swarm/service_spec.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "docker_common/lifecycle/container_spec.hpp"

namespace execmcp::plugins::docker_swarm {
namespace {

using nlohmann::json;

ServiceSettings settings() {
  ServiceSettings s;
  s.name = "execmcp-a1-i1";
  s.agent_id = "a1";
  s.instance_id = "i1";
  s.owner_pid = 4242;
  s.owner_host = "execmcp-server";
  s.image = "execmcp/runtime:latest";
  s.env = {"LANG=C.UTF-8", "FOO=bar"};
  s.memory_bytes = 128LL << 20;
  s.pids_limit = 64;
  s.cpus = 0.5;
  s.reserve_memory_bytes = 64LL << 20;
  s.reserve_cpus = 0.25;
  s.constraints = {"node.role==worker", "node.labels.pool==sandbox"};
  s.network_id = "net123";
  s.secret = {"sec123", "execmcp-a1-i1-key-0a1b2c3d", "1000", "1000"};
  s.volume = "execmcp-ws-alice";
  s.user_key = "alice";
  s.tmpfs_bytes = 1 << 20;
  return s;
}

TEST(ServiceSpec, GoldenBody) {
  const json labels = {{"execmcp.managed", "true"},   {"execmcp.role", "agent"},
                       {"execmcp.agent", "a1"},       {"execmcp.instance", "i1"},
                       {"execmcp.owner.pid", "4242"}, {"execmcp.owner.host", "execmcp-server"}};
  json volume_labels = labels;
  volume_labels["execmcp.user"] = "alice";
  const json tmpfs_options = {{"SizeBytes", 1 << 20}, {"Mode", 01777}};
  const json expected = {
      {"Name", "execmcp-a1-i1"},
      {"Labels", labels},
      {"Mode", {{"Replicated", {{"Replicas", 1}}}}},
      {"EndpointSpec", {{"Mode", "dnsrr"}}},
      {"TaskTemplate",
       {{"ContainerSpec",
         {{"Image", "execmcp/runtime:latest"},
          {"Labels", labels},
          {"Command",
           {"/usr/lib/execmcp/execmcp-runner", "--execmcp-runner-listen=7077",
            "--execmcp-runner-key-file=/run/secrets/execmcp-runner-key"}},
          {"User", "1000:1000"},
          {"Dir", "/workspace"},
          {"Env", {"LANG=C.UTF-8", "FOO=bar"}},
          {"Init", true},
          {"ReadOnly", true},
          {"StopGracePeriod", 2000000000},
          {"CapabilityDrop", {"ALL"}},
          {"Mounts",
           {{{"Type", "volume"},
             {"Source", "execmcp-ws-alice"},
             {"Target", "/workspace"},
             {"VolumeOptions", {{"Labels", volume_labels}}}},
            {{"Type", "tmpfs"}, {"Target", "/tmp"}, {"TmpfsOptions", tmpfs_options}},
            {{"Type", "tmpfs"}, {"Target", "/var/tmp"}, {"TmpfsOptions", tmpfs_options}},
            {{"Type", "tmpfs"}, {"Target", "/home/execmcp"}, {"TmpfsOptions", tmpfs_options}}}},
          {"Secrets",
           {{{"File",
              {{"Name", "execmcp-runner-key"}, {"UID", "1000"}, {"GID", "1000"}, {"Mode", 256}}},
             {"SecretID", "sec123"},
             {"SecretName", "execmcp-a1-i1-key-0a1b2c3d"}}}}}},
        {"Resources",
         {{"Limits", {{"NanoCPUs", 500000000}, {"MemoryBytes", 134217728}, {"Pids", 64}}},
          {"Reservations", {{"NanoCPUs", 250000000}, {"MemoryBytes", 67108864}}}}},
        {"RestartPolicy", {{"Condition", "none"}}},
        {"Placement", {{"Constraints", {"node.role==worker", "node.labels.pool==sandbox"}}}},
        {"Networks", {{{"Target", "net123"}}}},
        {"LogDriver",
         {{"Name", "json-file"}, {"Options", {{"max-size", "1m"}, {"max-file", "2"}}}}}}}};
  EXPECT_EQ(service_spec(settings()), expected) << service_spec(settings()).dump(2);
}

TEST(ServiceSpec, LabelsAreTheContainerBackendsOwnership) {
  const auto s = settings();
  const auto labels = swarm_labels(s);
  EXPECT_EQ(labels, docker_common::container_labels("a1", "i1", 4242, "execmcp-server"));
  EXPECT_EQ(swarm_labels(s, kRoleSwarmNetwork).at(docker_common::kLabelRole), "swarm-network");
}

TEST(ServiceSpec, NoLimitsNoReservationsWhenUnset) {
  auto s = settings();
  s.memory_bytes = 0;
  s.pids_limit = 0;
  s.cpus = 0;
  s.reserve_cpus = 0;
  s.reserve_memory_bytes = 0;
  const json r = service_spec(s)["TaskTemplate"]["Resources"];
  EXPECT_EQ(r, (json{{"Limits", json::object()}, {"Reservations", json::object()}}));
}

TEST(ServiceSpec, PinnedNodeIsTheLastConstraint) {
  auto s = settings();
  s.pinned_node = "node42";
  EXPECT_EQ(service_spec(s)["TaskTemplate"]["Placement"]["Constraints"],
            (json{"node.role==worker", "node.labels.pool==sandbox", "node.id==node42"}));
  s.constraints.clear();
  EXPECT_EQ(placement_constraints(s), std::vector<std::string>{"node.id==node42"});
}

TEST(ServiceSpec, GivenCommandReplacesTheRunner) {
  auto s = settings();
  s.command = {"sleep", "infinity"};
  EXPECT_EQ(service_spec(s)["TaskTemplate"]["ContainerSpec"]["Command"],
            (json{"sleep", "infinity"}));
}

TEST(ServiceSpec, RequiredFieldsRefused) {
  for (auto clear :
       {+[](ServiceSettings& s) { s.name.clear(); }, +[](ServiceSettings& s) { s.image.clear(); },
        +[](ServiceSettings& s) { s.network_id.clear(); },
        +[](ServiceSettings& s) { s.secret.id.clear(); },
        +[](ServiceSettings& s) { s.secret.name.clear(); },
        +[](ServiceSettings& s) { s.volume.clear(); }}) {
    auto s = settings();
    clear(s);
    EXPECT_THROW(service_spec(s), std::invalid_argument);
  }
}

TEST(ServiceSpec, NoSecretValueAnywhere) {
  // The spec only knows the secret's id and name: nothing of a key can reach it. The runner reads
  // the key from the file the engine makes, and the command line names only the file.
  const std::string text = service_spec(settings()).dump();
  EXPECT_EQ(text.find("\"Data\""), std::string::npos);
  EXPECT_NE(text.find("--execmcp-runner-key-file=/run/secrets/execmcp-runner-key"),
            std::string::npos);
  EXPECT_EQ(text.find("--execmcp-runner-key="), std::string::npos);
}

TEST(ServiceSpec, NetworkBody) {
  const auto s = settings();
  json expected = {{"Name", "execmcp-a1-i1-net"}, {"Driver", "overlay"},
                   {"Attachable", true},          {"Internal", true},
                   {"CheckDuplicate", true},      {"Labels", swarm_labels(s, kRoleSwarmNetwork)}};
  EXPECT_EQ(network_create_body(s, "execmcp-a1-i1-net", false), expected);
  expected["Options"] = {{"encrypted", ""}};
  EXPECT_EQ(network_create_body(s, "execmcp-a1-i1-net", true), expected);
}

TEST(ServiceSpec, PinReplacesAnEarlierPinAndKeepsTheRest) {
  auto s = settings();
  s.pinned_node = "old";
  const json spec = service_spec(s);
  const json pinned = pinned_spec(spec, "new");
  EXPECT_EQ(pinned["TaskTemplate"]["Placement"]["Constraints"],
            (json{"node.role==worker", "node.labels.pool==sandbox", "node.id==new"}));
  json rest = pinned;
  rest["TaskTemplate"]["Placement"] = spec["TaskTemplate"]["Placement"];
  EXPECT_EQ(rest, spec);
  // A spec as the engine may show it, with no Placement at all.
  json bare = spec;
  bare["TaskTemplate"].erase("Placement");
  EXPECT_EQ(pinned_spec(bare, "n1")["TaskTemplate"]["Placement"]["Constraints"],
            (json{"node.id==n1"}));
  EXPECT_THROW(pinned_spec(spec, ""), std::invalid_argument);
}

TEST(ServiceSpec, SuspendAndResume) {
  const json spec = service_spec(settings());
  const json suspended = suspended_spec(spec);
  EXPECT_EQ(suspended["Mode"]["Replicated"]["Replicas"], 0);
  EXPECT_FALSE(suspended["TaskTemplate"].contains("ForceUpdate"));
  const json resumed = resumed_spec(suspended);
  EXPECT_EQ(resumed["Mode"]["Replicated"]["Replicas"], 1);
  EXPECT_EQ(resumed["TaskTemplate"]["ForceUpdate"], 1);
  EXPECT_EQ(resumed_spec(resumed)["TaskTemplate"]["ForceUpdate"], 2);
  json rest = resumed;
  rest["TaskTemplate"].erase("ForceUpdate");
  EXPECT_EQ(rest, spec);
}

}  // namespace
}  // namespace execmcp::plugins::docker_swarm
