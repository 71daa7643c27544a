// ServiceLifecycle over a scripted engine: the calls and bodies of create (secret, network,
// service, wait, pin, connect), suspend, resume and remove; its errors (not a manager, an image
// missing on a node, unschedulable); the key sent once and nowhere else; the placement record
// read and written; a drained node's move with its notice; the orphan sweep.
#include "docker_swarm/service_lifecycle.hpp"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "execmcp/common/base64.hpp"
#include "fake_swarm_transport.hpp"

namespace execmcp::plugins::docker_swarm {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kTasks = "/v1.41/tasks";

json task(const std::string& id, const std::string& node, const std::string& state,
          const std::string& err = "", const std::string& network = "net1",
          const std::string& address = "10.0.1.5/24") {
  return {{"ID", id},
          {"NodeID", node},
          {"DesiredState", "running"},
          {"Status", {{"State", state}, {"Message", state}, {"Err", err}}},
          {"NetworksAttachments",
           json::array({{{"Network", {{"ID", network}}}, {"Addresses", json::array({address})}}})}};
}

json node(const std::string& id, const std::string& hostname, const std::string& state = "ready",
          const std::string& availability = "active") {
  return {{"ID", id},
          {"Description", {{"Hostname", hostname}}},
          {"Status", {{"State", state}}},
          {"Spec", {{"Availability", availability}, {"Role", "worker"}}}};
}

std::string service_answer(int version) {
  return json{
      {"ID", "svc1"},
      {"Version", {{"Index", version}}},
      {"Spec",
       {{"Name", "execmcp-a-i"},
        {"TaskTemplate",
         {{"Placement", {{"Constraints", json::array({"node.labels.x==y"})}}}, {"ForceUpdate", 3}}},
        {"Mode", {{"Replicated", {{"Replicas", 1}}}}}}}}
      .dump();
}

class ServiceLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("execmcp-swarm-lc-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  LifecycleConfig config() {
    LifecycleConfig c;
    c.service.name = "execmcp-a-i";
    c.service.agent_id = "a";
    c.service.instance_id = "i";
    c.service.owner_pid = ::getpid();
    c.service.owner_host = "owner-1";
    c.service.image = "execmcp/swarm-runtime:latest";
    c.service.user_key = "alice";
    c.service.constraints = {"node.labels.x==y"};
    c.server_container = "server";
    c.engine = "unix:///manager.sock";
    c.record_dir = dir.string();
    c.start_timeout = std::chrono::milliseconds(2000);
    c.poll_interval = std::chrono::milliseconds(1);
    c.unschedulable_after = std::chrono::milliseconds(50);
    c.removal_wait = std::chrono::milliseconds(50);
    return c;
  }
  std::unique_ptr<ServiceLifecycle> lifecycle(LifecycleConfig c) {
    return std::make_unique<ServiceLifecycle>(
        api, std::move(c),
        [this](sdk::LogLevel, const std::string& line) { logs.push_back(line); });
  }
  // The answers of a creation that goes well: the task runs on n2 (worker-2) at 10.0.1.5.
  void script_create() {
    engine.answer("POST", "/v1.41/secrets/create", 201, R"({"ID":"sec1"})");
    engine.answer("POST", "/v1.41/networks/create", 201, R"({"Id":"net1"})");
    engine.answer("POST", "/v1.41/services/create", 201, R"({"ID":"svc1"})");
    engine.answer_once("GET", kTasks, 200, json::array({task("t1", "n2", "running")}).dump());
    engine.answer("GET", "/v1.41/services/svc1", 200, service_answer(7));
    engine.answer("POST", "/v1.41/services/svc1/update", 200, "{}");
    engine.answer("POST", "/v1.41/networks/net1/connect", 200, "");
    engine.answer("GET", "/v1.41/nodes/n2", 200, node("n2", "worker-2").dump());
  }
  // The requests as "METHOD path-without-query".
  std::vector<std::string> calls() const {
    std::vector<std::string> out;
    for (const auto& r : engine.requests)
      out.push_back(r.method + " " + r.path.substr(0, r.path.find('?')));
    return out;
  }
  const FakeSwarmTransport::Request* find(const std::string& method, const std::string& prefix) {
    for (const auto& r : engine.requests)
      if (r.method == method && r.path.rfind(prefix, 0) == 0) return &r;
    return nullptr;
  }

  fs::path dir;
  FakeSwarmTransport engine;
  SwarmApi api{engine};
  std::vector<std::string> logs;
};

TEST_F(ServiceLifecycleTest, NotAManagerIsNamed) {
  engine.answer("GET", "/v1.41/info", 200,
                R"({"Swarm":{"LocalNodeState":"active","ControlAvailable":false}})");
  const auto why = lifecycle(config())->check_manager();
  EXPECT_NE(why.find("the engine at unix:///manager.sock is not a swarm manager"),
            std::string::npos)
      << why;
  engine.answers.clear();
  engine.answer("GET", "/v1.41/info", 200,
                R"({"Swarm":{"LocalNodeState":"active","ControlAvailable":true}})");
  EXPECT_EQ(lifecycle(config())->check_manager(), "");
}

TEST_F(ServiceLifecycleTest, CreateMakesSecretNetworkServiceThenPinsAndConnects) {
  script_create();
  auto lc = lifecycle(config());
  ASSERT_EQ(lc->create({}), "");
  const std::vector<std::string> expected = {
      "POST /v1.41/secrets/create",        "POST /v1.41/networks/create",
      "POST /v1.41/services/create",       "GET /v1.41/tasks",
      "GET /v1.41/services/svc1",          "POST /v1.41/services/svc1/update",
      "POST /v1.41/networks/net1/connect", "GET /v1.41/nodes/n2"};
  EXPECT_EQ(calls(), expected);
  // Unpinned at creation; the operator's constraint kept; secret, network and a new volume.
  const json created = json::parse(find("POST", "/v1.41/services/create")->body);
  EXPECT_EQ(created["TaskTemplate"]["Placement"]["Constraints"], json::array({"node.labels.x==y"}));
  EXPECT_EQ(created["TaskTemplate"]["ContainerSpec"]["Secrets"][0]["SecretID"], "sec1");
  EXPECT_EQ(created["TaskTemplate"]["Networks"][0]["Target"], "net1");
  const std::string volume = created["TaskTemplate"]["ContainerSpec"]["Mounts"][0]["Source"];
  EXPECT_EQ(volume.rfind("execmcp-a-alice-", 0), 0u) << volume;
  // Pinned to the node the task runs on, at the version it read.
  const auto* update = find("POST", "/v1.41/services/svc1/update");
  EXPECT_NE(update->path.find("version=7"), std::string::npos);
  EXPECT_EQ(json::parse(update->body)["TaskTemplate"]["Placement"]["Constraints"],
            json::array({"node.labels.x==y", "node.id==n2"}));
  EXPECT_EQ(json::parse(find("POST", "/v1.41/networks/net1/connect")->body)["Container"], "server");
  const json network = json::parse(find("POST", "/v1.41/networks/create")->body);
  EXPECT_EQ(network["Internal"], true);
  EXPECT_EQ(network["Attachable"], true);
  // A name of its own each creation (a lost node's network may not be removable yet).
  const std::string network_name = network["Name"];
  EXPECT_EQ(network_name.rfind("execmcp-a-i-net-", 0), 0u) << network_name;
  EXPECT_EQ(lc->address(), "10.0.1.5");
  EXPECT_EQ(lc->placement().node_id, "n2");
  EXPECT_EQ(lc->placement().hostname, "worker-2");
  EXPECT_EQ(lc->placement().volume, volume);
  EXPECT_EQ(lc->incarnation(), 1u);
}

TEST_F(ServiceLifecycleTest, SuspendResumeAndRemoveBodiesAndOrder) {
  script_create();
  auto lc = lifecycle(config());
  ASSERT_EQ(lc->create({}), "");
  engine.requests.clear();
  ASSERT_EQ(lc->suspend(), "");
  ASSERT_EQ(engine.requests.size(), 2u);
  EXPECT_EQ(json::parse(engine.requests[1].body)["Mode"]["Replicated"]["Replicas"], 0);
  EXPECT_EQ(lc->address(), "");

  // Resume: the old task t1 ends, a new one (t2) runs; only t2 counts.
  engine.answer_once("GET", kTasks, 200, json::array({task("t1", "n2", "shutdown")}).dump());
  engine.answer_once(
      "GET", kTasks, 200,
      json::array({task("t1", "n2", "running"), task("t2", "n2", "starting")}).dump());
  engine.answer_once("GET", kTasks, 200,
                     json::array({task("t1", "n2", "shutdown"),
                                  task("t2", "n2", "running", "", "net1", "10.0.1.9/24")})
                         .dump());
  engine.requests.clear();
  const auto before = lc->incarnation();
  ASSERT_EQ(lc->resume(), "");
  const auto* update = find("POST", "/v1.41/services/svc1/update");
  ASSERT_NE(update, nullptr);
  const json resumed = json::parse(update->body);
  EXPECT_EQ(resumed["Mode"]["Replicated"]["Replicas"], 1);
  EXPECT_EQ(resumed["TaskTemplate"]["ForceUpdate"], 4);
  EXPECT_EQ(lc->address(), "10.0.1.9");
  EXPECT_GT(lc->incarnation(), before);

  // Remove: service, its tasks gone, secret, the server's attachment, network; never a volume.
  engine.answer("DELETE", "/v1.41/services/svc1", 200, "");
  engine.answer("GET", kTasks, 200, "[]");
  engine.answer("DELETE", "/v1.41/secrets/sec1", 204, "");
  engine.answer("POST", "/v1.41/networks/net1/disconnect", 200, "");
  engine.answer("DELETE", "/v1.41/networks/net1", 204, "");
  engine.requests.clear();
  lc->remove();
  const std::vector<std::string> expected = {
      "DELETE /v1.41/services/svc1", "GET /v1.41/tasks", "DELETE /v1.41/secrets/sec1",
      "POST /v1.41/networks/net1/disconnect", "DELETE /v1.41/networks/net1"};
  EXPECT_EQ(calls(), expected);
  engine.requests.clear();
  lc->remove();  // idempotent: nothing left to remove
  EXPECT_TRUE(engine.requests.empty());
}

TEST_F(ServiceLifecycleTest, KeyOnlyInTheSecretsCreateBody) {
  script_create();
  engine.answer("DELETE", "/v1.41/services/svc1", 200, "");
  auto lc = lifecycle(config());
  ASSERT_EQ(lc->create({}), "");
  ASSERT_EQ(lc->suspend(), "");
  engine.answer_once("GET", kTasks, 200, json::array({task("t1", "n2", "shutdown")}).dump());
  engine.answer_once(
      "GET", kTasks, 200,
      json::array({task("t1", "n2", "shutdown"), task("t9", "n2", "running")}).dump());
  ASSERT_EQ(lc->resume(), "");
  const auto key = lc->key();
  ASSERT_TRUE(key.has_value());
  lc->remove();
  const std::string raw(reinterpret_cast<const char*>(key->data()),
                        supervision::runner_auth::kKeySize);
  const std::string encoded = common::base64_encode(raw);
  int carrying = 0;
  for (const auto& r : engine.requests) {
    const bool has = r.body.find(encoded) != std::string::npos ||
                     r.body.find(raw) != std::string::npos ||
                     r.path.find(encoded) != std::string::npos;
    if (has) {
      ++carrying;
      EXPECT_EQ(r.method + " " + r.path, "POST /v1.41/secrets/create");
      EXPECT_EQ(json::parse(r.body)["Data"], encoded);
    }
  }
  EXPECT_EQ(carrying, 1);
  for (const auto& line : logs) {
    EXPECT_EQ(line.find(encoded), std::string::npos) << line;
    EXPECT_EQ(line.find(raw), std::string::npos);
  }
  // Nor in the service's labels or environment.
  const std::string service = find("POST", "/v1.41/services/create")->body;
  EXPECT_EQ(service.find(encoded), std::string::npos);
}

TEST_F(ServiceLifecycleTest, MissingImageSaysLoadItOnEveryNodeAndLeavesNothing) {
  engine.answer("POST", "/v1.41/secrets/create", 201, R"({"ID":"sec1"})");
  engine.answer("POST", "/v1.41/networks/create", 201, R"({"Id":"net1"})");
  engine.answer("POST", "/v1.41/services/create", 201, R"({"ID":"svc1"})");
  engine.answer_once(
      "GET", kTasks, 200,
      json::array({task("t1", "n3", "rejected", "No such image: execmcp/swarm-runtime:latest")})
          .dump());
  engine.answer("GET", kTasks, 200, "[]");
  engine.answer("DELETE", "/v1.41/services/svc1", 200, "");
  engine.answer("DELETE", "/v1.41/secrets/sec1", 204, "");
  engine.answer("DELETE", "/v1.41/networks/net1", 204, "");
  auto lc = lifecycle(config());
  const auto why = lc->create({});
  EXPECT_NE(why.find("rejected on node n3"), std::string::npos) << why;
  EXPECT_NE(why.find("No such image"), std::string::npos) << why;
  EXPECT_NE(why.find("load the image on every node"), std::string::npos) << why;
  EXPECT_NE(find("DELETE", "/v1.41/services/svc1"), nullptr);
  EXPECT_NE(find("DELETE", "/v1.41/secrets/sec1"), nullptr);
  EXPECT_NE(find("DELETE", "/v1.41/networks/net1"), nullptr);
  EXPECT_EQ(lc->address(), "");
}

TEST_F(ServiceLifecycleTest, PendingWithNoSuitableNodeIsUnschedulable) {
  engine.answer("POST", "/v1.41/secrets/create", 201, R"({"ID":"sec1"})");
  engine.answer("POST", "/v1.41/networks/create", 201, R"({"Id":"net1"})");
  engine.answer("POST", "/v1.41/services/create", 201, R"({"ID":"svc1"})");
  json pending = task("t1", "", "pending",
                      "no suitable node (scheduling constraints not satisfied on 3 nodes)");
  pending["NetworksAttachments"] = json::array();
  engine.answer("GET", kTasks, 200, json::array({pending}).dump());
  auto c = config();
  c.service.reserve_memory_bytes = 1LL << 40;
  auto lc = lifecycle(c);
  const auto started = std::chrono::steady_clock::now();
  const auto why = lc->create({});
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(1500));
  EXPECT_NE(why.find("no node can take the sandbox"), std::string::npos) << why;
  EXPECT_NE(why.find("node.labels.x==y"), std::string::npos) << why;
  EXPECT_NE(why.find("reserve_memory"), std::string::npos) << why;
  EXPECT_NE(why.find("scheduling constraints not satisfied"), std::string::npos) << why;
}

TEST_F(ServiceLifecycleTest, PlaceWritesTheRecordAndAReturningUserIsPinnedToIt) {
  script_create();
  std::vector<std::string> notices;
  ASSERT_EQ(lifecycle(config())->place(notices), "");
  EXPECT_TRUE(notices.empty());
  std::string error;
  const auto record = read_placement(dir.string(), error);
  ASSERT_TRUE(record.has_value()) << error;
  EXPECT_EQ(record->node_id, "n2");
  EXPECT_EQ(record->hostname, "worker-2");
  EXPECT_FALSE(record->volume.empty());

  engine.requests.clear();
  script_create();  // the task runs again (a once answer)
  ASSERT_EQ(lifecycle(config())->place(notices), "");
  EXPECT_TRUE(notices.empty());
  const json created = json::parse(find("POST", "/v1.41/services/create")->body);
  EXPECT_EQ(created["TaskTemplate"]["Placement"]["Constraints"],
            json::array({"node.labels.x==y", "node.id==n2"}));
  EXPECT_EQ(created["TaskTemplate"]["ContainerSpec"]["Mounts"][0]["Source"], record->volume);
  EXPECT_EQ(find("POST", "/v1.41/services/svc1/update"), nullptr);  // already pinned
}

TEST_F(ServiceLifecycleTest, DrainedNodeMeansANewPlacementAndANoticeNamingIt) {
  Placement old{"n1", "old-node", "execmcp-a-alice-old", 1700000000};
  ASSERT_EQ(write_placement(dir.string(), old), "");
  engine.answer("GET", "/v1.41/nodes/n1", 200, node("n1", "old-node", "ready", "drain").dump());
  script_create();
  std::vector<std::string> notices;
  ASSERT_EQ(lifecycle(config())->place(notices), "");
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("node old-node is drained"), std::string::npos) << notices[0];
  EXPECT_NE(notices[0].find("started on worker-2"), std::string::npos) << notices[0];
  EXPECT_NE(notices[0].find("Your files stayed on old-node in volume execmcp-a-alice-old"),
            std::string::npos)
      << notices[0];
  const json created = json::parse(find("POST", "/v1.41/services/create")->body);
  EXPECT_EQ(created["TaskTemplate"]["Placement"]["Constraints"], json::array({"node.labels.x==y"}));
  const std::string volume = created["TaskTemplate"]["ContainerSpec"]["Mounts"][0]["Source"];
  EXPECT_NE(volume, old.volume);
  std::string error;
  const auto record = read_placement(dir.string(), error);
  ASSERT_TRUE(record.has_value()) << error;
  EXPECT_EQ(record->node_id, "n2");
  EXPECT_EQ(record->volume, volume);
}

TEST_F(ServiceLifecycleTest, RecoverMovesASandboxWhoseNodeWentDown) {
  script_create();
  auto lc = lifecycle(config());
  std::vector<std::string> notices;
  ASSERT_EQ(lc->place(notices), "");
  const auto first_volume = lc->placement().volume;
  // Node n2 is down now; the new sandbox lands on n3.
  engine.answers.clear();
  engine.answer("GET", "/v1.41/nodes/n2", 200, node("n2", "worker-2", "down").dump());
  engine.answer_once("GET", kTasks, 200, json::array({task("t1", "n2", "running")}).dump());
  engine.answer("DELETE", "/v1.41/services/svc1", 200, "");
  engine.answer("POST", "/v1.41/secrets/create", 201, R"({"ID":"sec2"})");
  engine.answer("POST", "/v1.41/networks/create", 201, R"({"Id":"net2"})");
  engine.answer("POST", "/v1.41/services/create", 201, R"({"ID":"svc2"})");
  engine.answer_once("GET", kTasks, 200,
                     json::array({task("t5", "n3", "running", "", "net2", "10.0.2.3/24")}).dump());
  engine.answer("GET", "/v1.41/services/svc2", 200, service_answer(3));
  engine.answer("POST", "/v1.41/services/svc2/update", 200, "{}");
  engine.answer("POST", "/v1.41/networks/net2/connect", 200, "");
  engine.answer("GET", "/v1.41/nodes/n3", 200, node("n3", "worker-3").dump());
  const auto before = lc->incarnation();
  ASSERT_EQ(lc->recover(notices), "");
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("node worker-2 is down"), std::string::npos) << notices[0];
  EXPECT_NE(notices[0].find(first_volume), std::string::npos) << notices[0];
  EXPECT_EQ(lc->address(), "10.0.2.3");
  EXPECT_EQ(lc->placement().hostname, "worker-3");
  EXPECT_GT(lc->incarnation(), before);
  EXPECT_NE(find("DELETE", "/v1.41/services/svc1"), nullptr);
}

TEST_F(ServiceLifecycleTest, RecoverStartsAnEndedTaskInPlace) {
  script_create();
  auto lc = lifecycle(config());
  ASSERT_EQ(lc->create({}), "");
  engine.answer_once("GET", kTasks, 200, "[]");  // state(): no task wants to run
  engine.answer_once("GET", kTasks, 200, json::array({task("t1", "n2", "failed")}).dump());
  engine.answer_once("GET", kTasks, 200,
                     json::array({task("t1", "n2", "failed"), task("t2", "n2", "running")}).dump());
  std::vector<std::string> notices;
  ASSERT_EQ(lc->recover(notices), "");
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("started again on node worker-2"), std::string::npos) << notices[0];
  EXPECT_EQ(lc->placement().node_id, "n2");
}

TEST_F(ServiceLifecycleTest, OrphanSweepTouchesOnlyThisOwnersObjectsOfDeadPids) {
  const std::string dead = "2147480000";  // no such pid
  const std::string alive = std::to_string(::getppid());
  auto labels = [](const std::string& owner, const std::string& pid) {
    return json{
        {"execmcp.managed", "true"}, {"execmcp.owner.host", owner}, {"execmcp.owner.pid", pid}};
  };
  auto service = [&](const std::string& id, const std::string& owner, const std::string& pid) {
    return json{{"ID", id},
                {"Version", {{"Index", 1}}},
                {"Spec", {{"Name", "execmcp-" + id}, {"Labels", labels(owner, pid)}}}};
  };
  engine.answer(
      "GET", "/v1.41/services?", 200,
      json::array({service("s-dead", "owner-1", dead), service("s-alive", "owner-1", alive),
                   service("s-other", "owner-2", dead)})
          .dump());
  engine.answer(
      "GET", "/v1.41/secrets?", 200,
      json::array(
          {{{"ID", "k-dead"}, {"Spec", {{"Name", "k"}, {"Labels", labels("owner-1", dead)}}}},
           {{"ID", "k-other"}, {"Spec", {{"Name", "k2"}, {"Labels", labels("owner-2", dead)}}}}})
          .dump());
  engine.answer(
      "GET", "/v1.41/networks?", 200,
      json::array({{{"Id", "n-dead"}, {"Name", "n"}, {"Labels", labels("owner-1", dead)}},
                   {{"Id", "n-alive"}, {"Name", "n2"}, {"Labels", labels("owner-1", alive)}}})
          .dump());
  engine.answer("DELETE", "/v1.41/", 200, "");
  engine.answer("GET", kTasks, 200, "[]");
  engine.answer("POST", "/v1.41/networks/", 200, "");
  EXPECT_EQ(lifecycle(config())->sweep_orphans(), 3u);
  std::vector<std::string> deleted;
  for (const auto& r : engine.requests)
    if (r.method == "DELETE") deleted.push_back(r.path);
  const std::vector<std::string> expected = {"/v1.41/services/s-dead", "/v1.41/secrets/k-dead",
                                             "/v1.41/networks/n-dead"};
  EXPECT_EQ(deleted, expected);
  // The filter asked of the engine names this owner id.
  EXPECT_NE(engine.requests[0].path.find("owner-1"), std::string::npos);
}

// A server in a container gets the same pid in each new container (the PID namespace is new), so
// its predecessor's pid is often its own, or that of a live process of another namespace: the
// owner's run (a token per server process) and PID namespace decide, the pid only within one
// namespace (docker_swarm_stack found the first case: a restarted server kept the dead one's
// sandbox).
TEST_F(ServiceLifecycleTest, OrphanSweepKnowsAPredecessorByItsRunNotItsPid) {
  const std::string me = std::to_string(::getpid());
  const std::string parent = std::to_string(::getppid());
  auto labels = [](const std::string& pid, const std::string& run, const std::string& ns) {
    return json{{"execmcp.managed", "true"},
                {"execmcp.owner.host", "owner-1"},
                {"execmcp.owner.pid", pid},
                {"execmcp.owner.run", run},
                {"execmcp.owner.pidns", ns}};
  };
  auto service = [&](const std::string& id, const json& l) {
    return json{{"ID", id},
                {"Version", {{"Index", 1}}},
                {"Spec", {{"Name", "execmcp-" + id}, {"Labels", l}}}};
  };
  engine.answer("GET", "/v1.41/services?", 200,
                json::array({
                                // a dead predecessor whose pid this process got again
                                service("s-reused", labels(me, "run-old", "pid:[1]")),
                                // this process's own
                                service("s-mine", labels(me, "run-now", "pid:[1]")),
                                // a live server of this namespace (another process)
                                service("s-live", labels(parent, "run-other", "pid:[1]")),
                                // a server of another PID namespace (another container), whose
                                // pid means nothing here
                                service("s-elsewhere", labels(parent, "run-gone", "pid:[2]")),
                            })
                    .dump());
  engine.answer("GET", "/v1.41/secrets?", 200, "[]");
  engine.answer("GET", "/v1.41/networks?", 200, "[]");
  engine.answer("DELETE", "/v1.41/", 200, "");
  engine.answer("GET", kTasks, 200, "[]");
  auto c = config();
  c.service.owner_run = "run-now";
  c.service.owner_pidns = "pid:[1]";
  EXPECT_EQ(lifecycle(c)->sweep_orphans(), 2u);
  std::vector<std::string> deleted;
  for (const auto& r : engine.requests)
    if (r.method == "DELETE") deleted.push_back(r.path);
  const std::vector<std::string> expected = {"/v1.41/services/s-reused",
                                             "/v1.41/services/s-elsewhere"};
  EXPECT_EQ(deleted, expected);
}

// A removed service's tasks are no longer listed (404) while their containers still stop and hold
// the network: the sweep tries the network again instead of leaving it (docker_swarm_stack found
// a crashed server's network left after the restarted one's sweep).
TEST_F(ServiceLifecycleTest, OrphanSweepWaitsForANetworkItsStoppingTaskHolds) {
  auto labels = json{{"execmcp.managed", "true"},
                     {"execmcp.owner.host", "owner-1"},
                     {"execmcp.owner.pid", "2147480000"}};
  engine.answer("GET", "/v1.41/services?", 200,
                json::array({{{"ID", "s-dead"},
                              {"Version", {{"Index", 1}}},
                              {"Spec", {{"Name", "execmcp-s"}, {"Labels", labels}}}}})
                    .dump());
  engine.answer("GET", "/v1.41/secrets?", 200, "[]");
  engine.answer("GET", "/v1.41/networks?", 200,
                json::array({{{"Id", "n-dead"}, {"Name", "n"}, {"Labels", labels}}}).dump());
  engine.answer("DELETE", "/v1.41/services/", 200, "");
  engine.answer("GET", kTasks, 404, R"({"message":"service s-dead not found"})");
  engine.answer("POST", "/v1.41/networks/", 200, "");
  for (int i = 0; i < 3; ++i)
    engine.answer_once(
        "DELETE", "/v1.41/networks/n-dead", 403,
        R"({"message":"error while removing network: network n id n-dead has active endpoints"})");
  engine.answer("DELETE", "/v1.41/networks/n-dead", 204, "");
  EXPECT_EQ(lifecycle(config())->sweep_orphans(), 2u);
  int tries = 0;
  for (const auto& r : engine.requests)
    if (r.method == "DELETE" && r.path == "/v1.41/networks/n-dead") ++tries;
  EXPECT_EQ(tries, 4);
}

TEST(ServiceSpecOwner, TheRunAndPidNamespaceAreLabelsOfEverythingMade) {
  ServiceSettings s;
  s.agent_id = "a";
  s.instance_id = "i";
  s.owner_pid = 7;
  s.owner_host = "h";
  s.owner_run = "0123456789abcdef";
  s.owner_pidns = "pid:[4026531836]";
  const auto l = swarm_labels(s, kRoleSwarmSecret);
  EXPECT_EQ(l.at("execmcp.owner.run"), "0123456789abcdef");
  EXPECT_EQ(l.at("execmcp.owner.pidns"), "pid:[4026531836]");
}

TEST_F(ServiceLifecycleTest, AWarmSandboxsVolumeIsNamedWithoutItsDirectorysDot) {
  script_create();
  auto c = config();
  c.service.user_key = ".warm-12-3";
  auto lc = lifecycle(c);
  ASSERT_EQ(lc->create({}), "");
  const std::string volume = lc->placement().volume;
  EXPECT_EQ(volume.rfind("execmcp-a-warm-12-3-", 0), 0u) << volume;
}

TEST(BoundedName, KeepsShortNamesAndHashesLongOnes) {
  EXPECT_EQ(bounded_name("execmcp-a-i", 63), "execmcp-a-i");
  const std::string long_name(100, 'x');
  const auto a = bounded_name(long_name, 63);
  EXPECT_EQ(a.size(), 63u);
  EXPECT_NE(a, bounded_name(long_name + "y", 63));
}

}  // namespace
}  // namespace execmcp::plugins::docker_swarm
