// SwarmApi and the ServiceSpec against a real swarm's manager: a secret, an internal overlay, a
// service of the runtime image (a stand-in command: the runner does not listen yet) placed on a
// worker by a constraint, its running task's node and overlay address, the secret as a file of
// mode 0400 whose value no inspect shows, the pin keeping the task, suspend and resume, and
// removal leaving no service, secret or network. On the swarm tests' cluster (swarm_fixture.hpp:
// three engines in containers, the runner's test image on every node); skips where it cannot be
// had.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "docker_client/docker_endpoint.hpp"
#include "docker_swarm/service_spec.hpp"
#include "docker_swarm/swarm_api.hpp"
#include "execmcp/common/base64.hpp"
#include "swarm_fixture.hpp"

namespace execmcp::plugins::docker_swarm {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string random_bytes(std::size_t n) {
  std::random_device rd;
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(rd() & 0xff);
  return out;
}

class SwarmApiLive : public ::testing::Test {
 protected:
  void SetUp() override {
    EXECMCP_REQUIRE_SWARM();
    const std::string host = tests::swarm::SwarmCluster::get().docker_host();
    transport_ = std::make_unique<EngineTransport>(docker_client::parse_docker_host(host));
    api_ = std::make_unique<SwarmApi>(*transport_);
  }
  void TearDown() override {
    if (!api_) return;
    if (!service_.empty()) {
      EXPECT_TRUE(api_->remove_service(service_).ok());
    }
    wait_no_tasks();
    if (!secret_.empty()) {
      EXPECT_TRUE(api_->remove_secret(secret_).ok());
    }
    if (!network_.empty()) {
      EXPECT_TRUE(api_->remove_network(network_).ok());
    }
  }

  // The first task Swarm wants running, once its state is `running` (or failed), within `limit`.
  TaskInfo wait_running(std::chrono::seconds limit, const std::string& not_id = {}) {
    const auto end = Clock::now() + limit;
    TaskInfo last;
    while (Clock::now() < end) {
      std::vector<TaskInfo> tasks;
      auto e = api_->list_tasks(service_, true, tasks);
      EXPECT_TRUE(e.ok()) << e.message;
      for (const auto& t : tasks) {
        if (t.id == not_id) continue;
        last = t;
        if (t.phase() == TaskPhase::kRunning || t.phase() == TaskPhase::kFailed) return t;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return last;
  }
  void wait_no_tasks() {
    if (service_.empty()) return;
    const auto end = Clock::now() + std::chrono::seconds(20);
    std::vector<TaskInfo> tasks;
    while (Clock::now() < end) {
      // A removed service's tasks: 404 once the service is gone.
      auto e = api_->list_tasks(service_, false, tasks);
      if (e.not_found() || (e.ok() && tasks.empty())) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  std::unique_ptr<EngineTransport> transport_;
  std::unique_ptr<SwarmApi> api_;
  std::string service_, secret_, network_;
};

TEST_F(SwarmApiLive, ServiceOnAWorkerWithItsSecretAndNetwork) {
  ManagerInfo info;
  auto e = api_->info(info);
  ASSERT_TRUE(e.ok()) << e.message;
  ASSERT_TRUE(info.is_manager()) << info.local_node_state;

  const std::string tag = "execmcp-live-" + std::to_string(getpid());
  ServiceSettings s;
  s.name = tag;
  s.agent_id = "live";
  s.instance_id = std::to_string(getpid());
  s.owner_pid = getpid();
  s.owner_host = "swarm-api-live-test";
  s.image = tests::swarm::SwarmCluster::get().image();
  // The runner does not listen yet: a shell that proves the key file is there and readable by
  // the commands' uid (a file of mode 0400 it owns), then waits.
  s.command = {"/bin/sh", "-c",
               "test \"$(stat -c '%u %a' /run/secrets/execmcp-runner-key)\" = '1000 400' && "
               "test -s /run/secrets/execmcp-runner-key && exec sleep 600"};
  s.memory_bytes = 128LL << 20;
  s.pids_limit = 64;
  s.cpus = 0.5;
  s.reserve_memory_bytes = 16LL << 20;
  s.constraints = {"node.role==worker"};
  s.volume = tag + "-ws";
  s.user_key = "live";

  const std::string key = random_bytes(32);
  const auto t0 = Clock::now();
  e = api_->create_secret(tag + "-key", swarm_labels(s, kRoleSwarmSecret), key, secret_);
  ASSERT_TRUE(e.ok()) << e.message;
  e = api_->create_network(network_create_body(s, tag + "-net", false), network_);
  ASSERT_TRUE(e.ok()) << e.message;
  s.network_id = network_;
  s.secret = {secret_, tag + "-key", "1000", "1000"};
  e = api_->create_service(service_spec(s), service_);
  ASSERT_TRUE(e.ok()) << e.message;

  TaskInfo task = wait_running(std::chrono::seconds(60));
  const auto ran = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_EQ(task.phase(), TaskPhase::kRunning) << task.state << " " << task.err << task.message;
  std::printf("secret + network + service create to task running: %.2f s\n", ran);
  ASSERT_FALSE(task.node_id.empty());
  const std::string address = task.address_on(network_);
  EXPECT_FALSE(address.empty());
  EXPECT_EQ(address.find('/'), std::string::npos);
  NodeInfo node;
  e = api_->inspect_node(task.node_id, node);
  ASSERT_TRUE(e.ok()) << e.message;
  EXPECT_EQ(node.role, "worker");
  EXPECT_TRUE(node.usable());
  std::printf("task %s on %s (%s), address %s\n", task.id.c_str(), node.hostname.c_str(),
              node.id.c_str(), address.c_str());

  // Nothing of the key in the service as the engine keeps it.
  ServiceInfo svc;
  e = api_->inspect_service(service_, svc);
  ASSERT_TRUE(e.ok()) << e.message;
  const std::string shown = svc.spec.dump();
  EXPECT_EQ(shown.find(common::base64_encode(key)), std::string::npos);
  EXPECT_EQ(svc.labels.at("execmcp.owner.host"), "swarm-api-live-test");
  std::vector<ServiceInfo> listed;
  e = api_->list_services(
      {{"execmcp.owner.host", "swarm-api-live-test"}, {"execmcp.instance", s.instance_id}}, listed);
  ASSERT_TRUE(e.ok()) << e.message;
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].id, service_);

  // Pinned to its node: the same task runs on.
  e = api_->update_service(service_, svc.version, pinned_spec(svc.spec, task.node_id));
  ASSERT_TRUE(e.ok()) << e.message;
  std::this_thread::sleep_for(std::chrono::seconds(3));
  TaskInfo after_pin = wait_running(std::chrono::seconds(10));
  EXPECT_EQ(after_pin.id, task.id);
  // Still running 3 s on: the command's check of the key file held (else it exits, and restart
  // none leaves the task failed).
  EXPECT_EQ(after_pin.phase(), TaskPhase::kRunning) << after_pin.state << " " << after_pin.err;

  // Suspend: no task wanted running; resume: a new task on the same node.
  ASSERT_TRUE(api_->inspect_service(service_, svc).ok());
  e = api_->update_service(service_, svc.version, suspended_spec(svc.spec));
  ASSERT_TRUE(e.ok()) << e.message;
  std::vector<TaskInfo> running;
  const auto end = Clock::now() + std::chrono::seconds(20);
  do {
    ASSERT_TRUE(api_->list_tasks(service_, true, running).ok());
    if (running.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (Clock::now() < end);
  EXPECT_TRUE(running.empty());
  ASSERT_TRUE(api_->inspect_service(service_, svc).ok());
  const auto r0 = Clock::now();
  e = api_->update_service(service_, svc.version, resumed_spec(svc.spec));
  ASSERT_TRUE(e.ok()) << e.message;
  TaskInfo resumed = wait_running(std::chrono::seconds(60), task.id);
  ASSERT_EQ(resumed.phase(), TaskPhase::kRunning) << resumed.state << " " << resumed.err;
  EXPECT_NE(resumed.id, task.id);
  EXPECT_EQ(resumed.node_id, task.node_id);
  std::printf("resume to running: %.2f s\n",
              std::chrono::duration<double>(Clock::now() - r0).count());

  // Removal: service, its tasks, secret, network; nothing of ours listed after.
  ASSERT_TRUE(api_->remove_service(service_).ok());
  wait_no_tasks();
  std::vector<TaskInfo> left;
  e = api_->list_tasks(service_, false, left);
  EXPECT_TRUE(e.not_found()) << e.message;
  EXPECT_TRUE(left.empty());
  service_.clear();
  e = api_->remove_secret(secret_);
  EXPECT_TRUE(e.ok()) << e.message;
  secret_.clear();
  e = api_->remove_network(network_);
  EXPECT_TRUE(e.ok()) << e.message;
  network_.clear();
  ASSERT_TRUE(api_->list_services({{"execmcp.owner.host", "swarm-api-live-test"}}, listed).ok());
  EXPECT_TRUE(listed.empty());
}

TEST_F(SwarmApiLive, UnschedulableIsPendingWithItsReason) {
  // No node has this label: the task waits in `pending`, Status.Err saying why.
  const std::string tag = "execmcp-live-p-" + std::to_string(getpid());
  ServiceSettings s;
  s.name = tag;
  s.agent_id = "live";
  s.instance_id = std::to_string(getpid());
  s.owner_pid = getpid();
  s.owner_host = "swarm-api-live-test";
  s.image = tests::swarm::SwarmCluster::get().image();
  s.command = {"sleep", "600"};
  s.constraints = {"node.labels.execmcp-none==1"};
  s.volume = tag + "-ws";
  auto e = api_->create_secret(tag + "-key", swarm_labels(s, kRoleSwarmSecret), "k", secret_);
  ASSERT_TRUE(e.ok()) << e.message;
  e = api_->create_network(network_create_body(s, tag + "-net", false), network_);
  ASSERT_TRUE(e.ok()) << e.message;
  s.network_id = network_;
  s.secret = {secret_, tag + "-key", "1000", "1000"};
  e = api_->create_service(service_spec(s), service_);
  ASSERT_TRUE(e.ok()) << e.message;
  TaskInfo pending;
  const auto end = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < end) {
    std::vector<TaskInfo> tasks;
    ASSERT_TRUE(api_->list_tasks(service_, true, tasks).ok());
    if (!tasks.empty() && tasks[0].phase() == TaskPhase::kPending &&
        tasks[0].err.find("no suitable node") != std::string::npos) {
      pending = tasks[0];
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(pending.phase(), TaskPhase::kPending);
  std::printf("pending: %s: %s\n", pending.message.c_str(), pending.err.c_str());
  // A second secret of the same name: 409, named.
  std::string twice;
  e = api_->create_secret(tag + "-key", {}, "k", twice);
  EXPECT_TRUE(e.conflict()) << e.message;
  std::printf("conflict: %s\n", e.message.c_str());
}

}  // namespace
}  // namespace execmcp::plugins::docker_swarm
