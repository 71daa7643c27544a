// SwarmApi over a scripted engine: the requests it sends, the answers it reads (task states,
// addresses, nodes), and its errors (404, 409, 500, no answer, not JSON, too long).
#include "docker_swarm/swarm_api.hpp"

#include <gtest/gtest.h>

#include "execmcp/common/base64.hpp"
#include "fake_swarm_transport.hpp"

namespace execmcp::plugins::docker_swarm {
namespace {

using nlohmann::json;

class SwarmApiTest : public ::testing::Test {
 protected:
  FakeSwarmTransport engine;
  SwarmApi api{engine};
};

json task(const std::string& id, const std::string& state, json extra = json::object()) {
  json t = {{"ID", id},
            {"NodeID", "node-" + id},
            {"DesiredState", "running"},
            {"Status", {{"State", state}, {"Message", state}}}};
  t.update(extra);
  return t;
}

TEST_F(SwarmApiTest, InfoTellsAManager) {
  engine.answer("GET", "/v1.41/info", 200,
                R"({"Swarm":{"NodeID":"n1","LocalNodeState":"active","ControlAvailable":true}})");
  ManagerInfo info;
  ASSERT_TRUE(api.info(info).ok());
  EXPECT_TRUE(info.is_manager());
  EXPECT_EQ(info.node_id, "n1");
}

TEST_F(SwarmApiTest, InfoTellsAWorkerAndAnEngineOutsideASwarm) {
  engine.answer("GET", "/v1.41/info", 200,
                R"({"Swarm":{"LocalNodeState":"active","ControlAvailable":false}})");
  ManagerInfo info;
  ASSERT_TRUE(api.info(info).ok());
  EXPECT_FALSE(info.is_manager());
  engine.answers.clear();
  engine.answer("GET", "/v1.41/info", 200, R"({"Swarm":{"LocalNodeState":"inactive"}})");
  ASSERT_TRUE(api.info(info).ok());
  EXPECT_FALSE(info.is_manager());
  engine.answers.clear();
  engine.answer("GET", "/v1.41/info", 200, R"({"Swarm":"odd"})");
  ManagerInfo odd;
  ASSERT_TRUE(api.info(odd).ok());
  EXPECT_FALSE(odd.is_manager());
}

TEST_F(SwarmApiTest, SecretSentBase64AndNeverInAnError) {
  const std::string key = "k3y-value-never-shown";
  engine.answer("POST", "/v1.41/secrets/create", 201, R"({"ID":"sec1"})");
  std::string id;
  ASSERT_TRUE(api.create_secret("s-key", {{"execmcp.managed", "true"}}, key, id).ok());
  EXPECT_EQ(id, "sec1");
  const json body = json::parse(engine.requests.back().body);
  EXPECT_EQ(body["Name"], "s-key");
  EXPECT_EQ(body["Data"], common::base64_encode(key));
  EXPECT_EQ(body["Labels"]["execmcp.managed"], "true");
  // 409 (a name taken) and a 500 whose message the engine gives: the call and the message, no key.
  engine.answers.clear();
  engine.answer(
      "POST", "/v1.41/secrets/create", 409,
      R"({"message":"rpc error: code = AlreadyExists desc = secret s-key already exists"})");
  auto e = api.create_secret("s-key", {}, key, id);
  EXPECT_TRUE(e.conflict());
  EXPECT_EQ(e.message,
            "POST /secrets/create: HTTP 409: rpc error: code = AlreadyExists desc = secret s-key "
            "already exists");
  EXPECT_EQ(e.message.find(key), std::string::npos);
  EXPECT_EQ(e.message.find(common::base64_encode(key)), std::string::npos);
}

TEST_F(SwarmApiTest, Base64) {
  EXPECT_EQ(common::base64_encode(""), "");
  EXPECT_EQ(common::base64_encode("f"), "Zg==");
  EXPECT_EQ(common::base64_encode("fo"), "Zm8=");
  EXPECT_EQ(common::base64_encode("foo"), "Zm9v");
  EXPECT_EQ(common::base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(common::base64_encode(std::string("\xff\x00\x80", 3)), "/wCA");
}

TEST_F(SwarmApiTest, RemovesAreIdempotent) {
  // Nothing scripted: every call gets 404.
  EXPECT_TRUE(api.remove_secret("s").ok());
  EXPECT_TRUE(api.remove_service("svc").ok());
  EXPECT_TRUE(api.remove_network("n").ok());
  EXPECT_TRUE(api.disconnect_network("n", "server").ok());
  ASSERT_EQ(engine.requests.size(), 4u);
  EXPECT_EQ(engine.requests[0].method, "DELETE");
  EXPECT_EQ(engine.requests[0].path, "/v1.41/secrets/s");
  EXPECT_EQ(engine.requests[1].path, "/v1.41/services/svc");
  EXPECT_EQ(engine.requests[3].path, "/v1.41/networks/n/disconnect");
  EXPECT_EQ(json::parse(engine.requests[3].body), (json{{"Container", "server"}, {"Force", true}}));
  // But a connect to a network that is gone is an error.
  auto e = api.connect_network("n", "server");
  EXPECT_TRUE(e.not_found());
  EXPECT_EQ(e.message, "POST /networks/n/connect: HTTP 404: no such object");
}

TEST_F(SwarmApiTest, NetworkAndServiceCreate) {
  engine.answer("POST", "/v1.41/networks/create", 201, R"({"Id":"net1","Warning":""})");
  engine.answer("POST", "/v1.41/services/create", 201, R"({"ID":"svc1"})");
  std::string net, svc;
  ASSERT_TRUE(api.create_network(json{{"Name", "x-net"}}, net).ok());
  EXPECT_EQ(net, "net1");
  ASSERT_TRUE(api.create_service(json{{"Name", "x"}}, svc).ok());
  EXPECT_EQ(svc, "svc1");
  EXPECT_EQ(json::parse(engine.requests.back().body), (json{{"Name", "x"}}));
  engine.answers.clear();
  engine.answer("POST", "/v1.41/services/create", 201, R"({"Warnings":null})");
  EXPECT_EQ(api.create_service(json::object(), svc).message,
            "POST /services/create: the engine's answer has no ID");
}

TEST_F(SwarmApiTest, InspectAndUpdateService) {
  engine.answer("GET", "/v1.41/services/svc1", 200,
                R"({"ID":"svc1","Version":{"Index":37},
                    "Spec":{"Name":"x","Labels":{"execmcp.managed":"true","n":7},
                            "Mode":{"Replicated":{"Replicas":1}}}})");
  engine.answer("POST", "/v1.41/services/svc1/update", 200, R"({"Warnings":null})");
  ServiceInfo s;
  ASSERT_TRUE(api.inspect_service("svc1", s).ok());
  EXPECT_EQ(s.version, 37u);
  EXPECT_EQ(s.name, "x");
  EXPECT_EQ(s.labels, (std::map<std::string, std::string>{{"execmcp.managed", "true"}}));
  ASSERT_TRUE(api.update_service("svc1", s.version, s.spec).ok());
  EXPECT_EQ(engine.requests.back().path, "/v1.41/services/svc1/update?version=37");
  EXPECT_EQ(json::parse(engine.requests.back().body), s.spec);
  // An out-of-date version: the engine's message, named.
  engine.answers.clear();
  engine.answer("POST", "/v1.41/services/svc1/update", 500,
                R"({"message":"rpc error: code = Unknown desc = update out of sequence"})");
  EXPECT_EQ(api.update_service("svc1", 36, s.spec).message,
            "POST /services/svc1/update: HTTP 500: rpc error: code = Unknown desc = update out of "
            "sequence");
  engine.answer("GET", "/v1.41/services/svc1", 200, R"({"ID":"svc1"})");
  EXPECT_EQ(api.inspect_service("svc1", s).message,
            "GET /services/svc1: the engine's answer has no service ID or Version.Index");
}

TEST_F(SwarmApiTest, ListServicesByLabel) {
  engine.answer("GET", "/v1.41/services?", 200,
                R"([{"ID":"a","Version":{"Index":1},"Spec":{"Name":"sa"}},{"junk":1},
                    {"ID":"b","Version":{"Index":2},"Spec":{"Name":"sb"}}])");
  std::vector<ServiceInfo> out;
  ASSERT_TRUE(
      api.list_services({{"execmcp.managed", "true"}, {"execmcp.owner.host", "h"}}, out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].name, "sb");
  // filters={"label":["execmcp.managed=true","execmcp.owner.host=h"]}, encoded.
  EXPECT_EQ(engine.requests.back().path,
            "/v1.41/services?filters=%7B%22label%22%3A%5B%22execmcp.managed%3Dtrue%22%2C%22"
            "execmcp.owner.host%3Dh%22%5D%7D");
  engine.answers.clear();
  engine.answer("GET", "/v1.41/services?", 200, R"({"not":"a list"})");
  EXPECT_EQ(api.list_services({}, out).message, "GET /services: the engine's answer is not a list");
}

TEST_F(SwarmApiTest, TaskStatesNewToRunning) {
  const json attached = {
      {"NetworksAttachments",
       {{{"Network", {{"ID", "ingress"}}}, {"Addresses", {"10.0.0.5/24"}}},
        {{"Network", {{"ID", "net1"}}}, {"Addresses", {"10.0.9.3/24", "10.0.9.4/24"}}}}}};
  json tasks = json::array();
  for (const char* s :
       {"new", "allocated", "assigned", "accepted", "preparing", "ready", "starting"})
    tasks.push_back(task(s, s));
  tasks.push_back(task("r", "running", attached));
  engine.answer("GET", "/v1.41/tasks?", 200, tasks.dump());
  std::vector<TaskInfo> out;
  ASSERT_TRUE(api.list_tasks("svc1", true, out).ok());
  EXPECT_EQ(engine.requests.back().path,
            "/v1.41/tasks?filters=%7B%22desired-state%22%3A%5B%22running%22%5D%2C%22service%22"
            "%3A%5B%22svc1%22%5D%7D");
  ASSERT_EQ(out.size(), 8u);
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(out[i].phase(), TaskPhase::kStarting) << out[i].state;
    EXPECT_EQ(out[i].address_on("net1"), "") << out[i].state;
  }
  EXPECT_EQ(out[7].phase(), TaskPhase::kRunning);
  EXPECT_EQ(out[7].address_on("net1"), "10.0.9.3");
  EXPECT_EQ(out[7].address_on("ingress"), "10.0.0.5");
  EXPECT_EQ(out[7].node_id, "node-r");
  EXPECT_EQ(out[7].desired_state, "running");
  EXPECT_EQ(task_phase("complete"), TaskPhase::kEnded);
  EXPECT_EQ(task_phase("shutdown"), TaskPhase::kEnded);
  EXPECT_EQ(task_phase("orphaned"), TaskPhase::kEnded);
  EXPECT_EQ(task_phase("exploded"), TaskPhase::kUnknown);
}

TEST_F(SwarmApiTest, FailedPendingAndOddTasks) {
  const json tasks = {
      {{"ID", "f"},
       {"NodeID", "n2"},
       {"Status",
        {{"State", "failed"},
         {"Message", "started"},
         {"Err", "task: non-zero exit (137)"},
         {"ContainerStatus", {{"ExitCode", 137}}}}}},
      {{"ID", "rj"},
       {"Status", {{"State", "rejected"}, {"Err", "No such image: execmcp/runtime:latest"}}}},
      // As 20.10 shows a task no node fits: the reason in Err, not in Message.
      {{"ID", "p"},
       {"Status",
        {{"State", "pending"},
         {"Message", "pending task scheduling"},
         {"Err", "no suitable node (scheduling constraints not satisfied on 3 nodes)"}}}},
      // Running, but the attachments not there yet, or of the wrong shape.
      {{"ID", "r1"}, {"Status", {{"State", "running"}}}},
      {{"ID", "r2"}, {"Status", {{"State", "running"}}}, {"NetworksAttachments", "odd"}},
      {{"ID", "r3"},
       {"Status", {{"State", "running"}}},
       {"NetworksAttachments",
        {{{"Network", {{"ID", "net1"}}}, {"Addresses", json::array()}},
         {{"Addresses", {"10.0.9.9/24"}}},
         {{"Network", {{"ID", "net2"}}}, {"Addresses", {7}}}}}},
      {{"NoID", true}},
      {{"ID", "s"}, {"Status", "odd"}}};
  engine.answer("GET", "/v1.41/tasks?", 200, tasks.dump());
  std::vector<TaskInfo> out;
  ASSERT_TRUE(api.list_tasks("svc1", false, out).ok());
  EXPECT_EQ(engine.requests.back().path,
            "/v1.41/tasks?filters=%7B%22service%22%3A%5B%22svc1%22%5D%7D");
  ASSERT_EQ(out.size(), 7u);
  EXPECT_EQ(out[0].phase(), TaskPhase::kFailed);
  EXPECT_EQ(out[0].err, "task: non-zero exit (137)");
  EXPECT_EQ(out[0].exit_code, 137);
  EXPECT_EQ(out[1].phase(), TaskPhase::kFailed);
  EXPECT_EQ(out[1].err, "No such image: execmcp/runtime:latest");
  EXPECT_EQ(out[1].node_id, "");
  EXPECT_EQ(out[2].phase(), TaskPhase::kPending);
  EXPECT_EQ(out[2].err.rfind("no suitable node", 0), 0u);
  EXPECT_EQ(out[2].message, "pending task scheduling");
  for (std::size_t i = 3; i < 6; ++i) {
    EXPECT_EQ(out[i].phase(), TaskPhase::kRunning);
    EXPECT_TRUE(out[i].addresses.empty()) << out[i].id;
  }
  EXPECT_EQ(out[6].state, "");
  EXPECT_EQ(out[6].phase(), TaskPhase::kUnknown);
}

TEST_F(SwarmApiTest, TasksOfARemovedServiceAreNotFound) {
  // What 20.10 answers for a service filter naming no service.
  engine.answer("GET", "/v1.41/tasks?", 404, R"({"message":"service svc9 not found"})");
  std::vector<TaskInfo> out{TaskInfo{}};
  auto e = api.list_tasks("svc9", false, out);
  EXPECT_TRUE(e.not_found());
  EXPECT_EQ(e.message, "GET /tasks: HTTP 404: service svc9 not found");
}

TEST_F(SwarmApiTest, Nodes) {
  engine.answer("GET", "/v1.41/nodes/n2", 200,
                R"({"ID":"n2","Description":{"Hostname":"worker-2"},
                    "Status":{"State":"ready"},"Spec":{"Availability":"drain","Role":"worker"}})");
  engine.answer("GET", "/v1.41/nodes/n3", 200,
                R"({"ID":"n3","Status":{"State":"down"},"Spec":{"Availability":"active"}})");
  engine.answer("GET", "/v1.41/nodes/n4", 200, R"({"ID":"n4"})");
  NodeInfo n;
  ASSERT_TRUE(api.inspect_node("n2", n).ok());
  EXPECT_EQ(n.hostname, "worker-2");
  EXPECT_EQ(n.availability, "drain");
  EXPECT_EQ(n.role, "worker");
  EXPECT_FALSE(n.usable());
  ASSERT_TRUE(api.inspect_node("n3", n).ok());
  EXPECT_EQ(n.state, "down");
  EXPECT_FALSE(n.usable());
  EXPECT_EQ(api.inspect_node("n4", n).message,
            "GET /nodes/n4: the engine's answer has no node ID or Status.State");
  auto gone = api.inspect_node("n9", n);
  EXPECT_TRUE(gone.not_found());
  EXPECT_EQ(gone.message, "GET /nodes/n9: HTTP 404: no such object");
}

TEST_F(SwarmApiTest, TransportAndBodyErrors) {
  engine.fail("GET", "/v1.41/info", "cannot reach the Docker engine at unix:///x.sock");
  ManagerInfo info;
  auto e = api.info(info);
  EXPECT_EQ(e.status, 0);
  EXPECT_EQ(e.message, "GET /info: cannot reach the Docker engine at unix:///x.sock");

  engine.answer("GET", "/v1.41/nodes/", 200, "{not json");
  NodeInfo n;
  EXPECT_EQ(api.inspect_node("n1", n).message, "GET /nodes/n1: the engine's answer is not JSON");

  std::string huge = "[" + std::string(kMaxAnswerBytes, ' ') + "]";
  engine.answer("GET", "/v1.41/tasks?", 200, huge);
  std::vector<TaskInfo> tasks;
  e = api.list_tasks("svc1", true, tasks);
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.message, "GET /tasks: the engine's answer of " + std::to_string(huge.size()) +
                           " bytes is over the " + std::to_string(kMaxAnswerBytes) + " this reads");

  // A 500 with a plain body, and one with a huge body: the message is bounded.
  engine.answer("POST", "/v1.41/services/create", 500, std::string(1 << 20, 'x'));
  std::string id;
  e = api.create_service(json::object(), id);
  EXPECT_EQ(e.status, 500);
  EXPECT_LT(e.message.size(), 5000u);
  EXPECT_EQ(e.message.rfind("POST /services/create: HTTP 500: ", 0), 0u);
}

}  // namespace
}  // namespace execmcp::plugins::docker_swarm
