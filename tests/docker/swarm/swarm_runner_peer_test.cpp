// The runner of a swarm sandbox refuses every peer but its key's holder (issue 33, design §3-§5),
// on a real 3-node swarm (swarm_fixture.hpp), through SwarmApi and the ServiceSpec directly (no
// backend): a per-sandbox internal overlay, a secret of 32 random bytes, a service whose task is
// the listening runner pinned to node 3, the shim (this process's network namespace, node 1)
// connected to the overlay. The holder runs commands from node 1 to node 3 over connect_runner()
// and a RunnerChannel; a container on node 2 attached to the same overlay (a thread of this test
// in its network namespace) connects to :7077 with no key, a wrong key and a replayed server
// answer, and runs nothing; the key is in no inspect; the holder's channel still works; removal
// leaves nothing with the test's owner id on any node.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "docker_client/docker_endpoint.hpp"
#include "docker_swarm/service_spec.hpp"
#include "docker_swarm/swarm_api.hpp"
#include "execmcp/common/base64.hpp"
#include "peer_io.hpp"
#include "runner_client/runner_channel.hpp"
#include "runner_client/runner_transport.hpp"
#include "supervision/runner_auth.hpp"
#include "supervision/runner_protocol.hpp"
#include "swarm_fixture.hpp"

namespace execmcp::plugins::docker_swarm {
namespace {

using tests::runner_peer::read_n;
using tests::runner_peer::read_until_closed;

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using tests::swarm::SwarmCluster;
namespace ra = supervision::runner_auth;
namespace rp = supervision::runner;
namespace rc = runner_client;

std::string key_bytes(const ra::RunnerKey& key) {
  return std::string(reinterpret_cast<const char*>(key.data()), ra::kKeySize);
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// A TCP connection to ip:port within `limit` (retried while refused: the runner may not listen
// yet); -1 when none.
int dial(const std::string& ip, std::uint16_t port, std::chrono::milliseconds limit) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) return -1;
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    ::close(fd);
    std::this_thread::sleep_for(100ms);
  }
  return -1;
}

bool send_all(int fd, const std::string& bytes) {
  return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

std::string frame(rp::FrameType type, std::uint32_t call, std::string_view payload = {}) {
  std::string f;
  rp::append_frame(f, type, call, payload);
  return f;
}

constexpr const char* kMarker = "/workspace/peer-marker";

// Frames of a call that would write the marker, as a peer without the key would send them.
std::string touch_frames() {
  rp::RunSpec spec;
  spec.output_cap = 1024;
  spec.work_dir = "/workspace";
  spec.shell = "/bin/sh";
  spec.command = std::string("touch ") + kMarker;
  return frame(rp::FrameType::kRun, 1, rp::encode_run(spec)) + frame(rp::FrameType::kStdinEnd, 1);
}

struct Ran {
  std::string out;
  std::optional<rp::DoneReport> done;
  std::string lost;
};

Ran run(rc::RunnerChannel& channel, const std::string& command) {
  rp::RunSpec spec;
  spec.output_cap = 1 << 20;
  spec.work_dir = "/workspace";
  spec.shell = "/bin/sh";
  spec.command = command;
  std::string error;
  auto call = channel.start(spec, nullptr, error);
  Ran ran;
  if (!call) {
    ran.lost = error;
    return ran;
  }
  std::vector<rc::RunnerCall::Chunk> chunks;
  const auto end = Clock::now() + 20s;
  bool over = false;
  while (!over && Clock::now() < end) over = call->wait(100ms, chunks);
  for (auto& c : chunks)
    if (c.kind == sdk::StreamKind::Stdout) ran.out += c.data;
  ran.done = call->done();
  ran.lost = call->lost();
  return ran;
}

// What the peer on node 2 saw.
struct PeerReport {
  std::string setns_error;
  std::size_t no_key_bytes = 0;  // what the runner sent a peer that sent frames at once
  bool no_key_closed = false;
  rc::TransportError wrong_key;
  bool wrong_key_connected = false;
  std::size_t replay_hello = 0;  // the hello it got before replaying (proves it reached the runner)
  std::string replay_after;      // what came after the replayed answer
  bool replay_closed = false;
};

class SwarmRunnerPeer : public ::testing::Test {
 protected:
  void SetUp() override {
    EXECMCP_REQUIRE_SWARM();
    transport_ = std::make_unique<EngineTransport>(
        docker_client::parse_docker_host(cluster().docker_host()));
    api_ = std::make_unique<SwarmApi>(*transport_);
  }
  void TearDown() override {
    if (!api_) return;
    channel_.reset();
    remove_all();
  }
  static const SwarmCluster& cluster() { return SwarmCluster::get(); }

  // The service's first task once running (or failed), within `limit`.
  TaskInfo wait_running(std::chrono::seconds limit) {
    TaskInfo task;
    for (const auto end = Clock::now() + limit; Clock::now() < end;) {
      std::vector<TaskInfo> tasks;
      const auto e = api_->list_tasks(service_, true, tasks);
      EXPECT_TRUE(e.ok()) << e.message;
      if (!tasks.empty()) task = tasks[0];
      if (task.phase() == TaskPhase::kRunning || task.phase() == TaskPhase::kFailed) break;
      std::this_thread::sleep_for(50ms);
    }
    return task;
  }

  // Best effort, in the order the backend removes (design §5): service (and its task), secret,
  // the shim's attachment, the peer, the network; then the workspace volume.
  void remove_all() {
    if (!service_.empty()) {
      EXPECT_TRUE(api_->remove_service(service_).ok());
      const auto end = Clock::now() + 20s;
      std::vector<TaskInfo> tasks;
      while (Clock::now() < end) {
        const auto e = api_->list_tasks(service_, false, tasks);
        if (e.not_found() || (e.ok() && tasks.empty())) break;
        std::this_thread::sleep_for(100ms);
      }
      service_.clear();
    }
    if (!secret_.empty()) {
      const auto e = api_->remove_secret(secret_);
      EXPECT_TRUE(e.ok()) << e.message;
      secret_.clear();
    }
    if (!peer_.empty()) {
      EXPECT_TRUE(cluster().docker(2, {"rm", "-f", peer_}).ok());
      peer_.clear();
    }
    if (!network_.empty()) {
      if (shim_connected_) {
        const auto e = api_->disconnect_network(network_, cluster().shim_id());
        EXPECT_TRUE(e.ok()) << e.message;
        shim_connected_ = false;
      }
      // "in use by task" for a few seconds after the service went (design §11.9).
      SwarmError e;
      const auto end = Clock::now() + 15s;
      do {
        e = api_->remove_network(network_);
        if (e.ok()) break;
        std::this_thread::sleep_for(250ms);
      } while (Clock::now() < end);
      EXPECT_TRUE(e.ok()) << e.message;
      network_.clear();
    }
  }

  std::unique_ptr<EngineTransport> transport_;
  std::unique_ptr<SwarmApi> api_;
  std::unique_ptr<rc::RunnerChannel> channel_;
  std::string service_, secret_, network_, peer_;
  bool shim_connected_ = false;
};

// The peer's part, on a thread of its own in the network namespace of a container on node 2 that
// is attached to the sandbox's overlay: its sockets are that container's.
PeerReport play_peer(const std::string& netns, const std::string& address,
                     const std::string& recorded_answer) {
  PeerReport report;
  const int ns = ::open(netns.c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0 || ::setns(ns, CLONE_NEWNET) != 0) {
    report.setns_error = "cannot join " + netns + ": " + std::strerror(errno);
    if (ns >= 0) ::close(ns);
    return report;
  }
  ::close(ns);
  // No key: frames at once, no handshake.
  if (const int fd = dial(address, kRunnerPort, 10s); fd >= 0) {
    send_all(fd, touch_frames());
    report.no_key_bytes = read_until_closed(fd, 8s, report.no_key_closed).size();
    ::close(fd);
  }
  // A wrong key, through the real client.
  const auto wrong = ra::RunnerKey::random();
  auto ends = rc::connect_runner({address, kRunnerPort, "the sandbox's runner"}, wrong, 10s,
                                 report.wrong_key);
  report.wrong_key_connected = ends.has_value();
  if (ends) {
    rc::RunnerChannel dropped(std::move(*ends), [](sdk::LogLevel, const std::string&) {});
  }
  // A server answer recorded from another connection, replayed with frames behind it.
  if (const int fd = dial(address, kRunnerPort, 10s); fd >= 0) {
    report.replay_hello = read_n(fd, ra::kRunnerHelloSize).size();
    send_all(fd, recorded_answer + touch_frames());
    report.replay_after = read_until_closed(fd, 8s, report.replay_closed);
    ::close(fd);
  }
  return report;
}

// A genuine handshake with the key on a connection of its own: the server's answer ("" when the
// runner did not answer within 20 s).
std::string record_answer(const std::string& address, const ra::RunnerKey& key) {
  const int fd = dial(address, kRunnerPort, 20s);
  if (fd < 0) return {};
  ra::HelloError hello_error;
  const auto nonce_r = ra::parse_runner_hello(read_n(fd, ra::kRunnerHelloSize), hello_error);
  std::string answer;
  if (nonce_r) {
    answer = ra::server_answer(key, *nonce_r, ra::random_nonce());
    if (!send_all(fd, answer) || read_n(fd, ra::kRunnerAnswerSize).size() != ra::kRunnerAnswerSize)
      answer.clear();
  }
  ::close(fd);
  return answer;
}

TEST_F(SwarmRunnerPeer, OnlyTheKeysHolderRunsACommandAcrossNodes) {
  const std::string tag = "execmcp-peer-" + std::to_string(::getpid());
  const std::string owner = "swarm-peer-test-" + std::to_string(::getpid());
  const auto& target = cluster().node(3);
  ServiceSettings s;
  s.name = tag;
  s.agent_id = "peer";
  s.instance_id = std::to_string(::getpid());
  s.owner_pid = ::getpid();
  s.owner_host = owner;
  s.image = cluster().image();
  s.memory_bytes = 128LL << 20;
  s.pids_limit = 64;
  s.constraints = {"node.hostname==" + target.name};
  s.volume = tag + "-ws";
  s.user_key = "peer";

  const auto key = ra::RunnerKey::random();
  const auto t0 = Clock::now();
  auto e =
      api_->create_secret(tag + "-key", swarm_labels(s, kRoleSwarmSecret), key_bytes(key), secret_);
  ASSERT_TRUE(e.ok()) << e.message;
  e = api_->create_network(network_create_body(s, tag + "-net", false), network_);
  ASSERT_TRUE(e.ok()) << e.message;
  s.network_id = network_;
  s.secret = {secret_, tag + "-key", "1000", "1000"};
  e = api_->create_service(service_spec(s), service_);
  ASSERT_TRUE(e.ok()) << e.message;
  e = api_->connect_network(network_, cluster().shim_id());
  ASSERT_TRUE(e.ok()) << e.message;
  shim_connected_ = true;

  const TaskInfo task = wait_running(60s);
  ASSERT_EQ(task.phase(), TaskPhase::kRunning) << task.state << " " << task.err << task.message;
  EXPECT_EQ(task.node_id, target.id);
  const std::string address = task.address_on(network_);
  ASSERT_FALSE(address.empty());
  std::printf("task %s on %s at %s: running %.2f s after the secret's create\n", task.id.c_str(),
              target.name.c_str(), address.c_str(),
              std::chrono::duration<double>(Clock::now() - t0).count());

  // An onlooker's record of a genuine server answer (made here with the key; the overlay is not
  // encrypted on this kernel, so it is what a sniffer would get), on a connection of its own.
  const std::string recorded = record_answer(address, key);
  ASSERT_EQ(recorded.size(), ra::kServerAnswerSize) << "nothing listens on " << address;

  // The holder: node 1 (the shim's namespace) to node 3.
  rc::TransportError error;
  std::optional<rc::ChannelEnds> ends;
  for (const auto end = Clock::now() + 20s; !ends && Clock::now() < end;) {
    ends = rc::connect_runner({address, kRunnerPort, "the sandbox's runner"}, key, 5s, error);
    if (!ends && error.kind != rc::TransportError::Kind::kUnreachable) break;
    if (!ends) std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(ends) << error.message;
  channel_ = std::make_unique<rc::RunnerChannel>(std::move(*ends),
                                                 [](sdk::LogLevel, const std::string&) {});
  ASSERT_EQ(channel_->wait_ready(10s), "");
  Ran ran = run(*channel_, "echo hello; id -u; stat -c '%u %a' /run/secrets/execmcp-runner-key");
  ASSERT_TRUE(ran.done) << ran.lost;
  EXPECT_EQ(ran.done->exit_code, 0);
  EXPECT_EQ(ran.out, "hello\n1000\n1000 400\n");

  // The peer: a container on node 2 on the same overlay.
  peer_ = tag + "-peer";
  const auto started =
      cluster().docker(2, {"run", "-d", "--name", peer_, "--label", "execmcp.owner.host=" + owner,
                           "--network", tag + "-net", cluster().image(), "sleep", "600"});
  ASSERT_TRUE(started.ok()) << started.describe();
  std::string netns_error;
  const std::string netns = cluster().netns_path(2, peer_, netns_error);
  ASSERT_FALSE(netns.empty()) << netns_error;
  PeerReport peer;
  const auto p0 = Clock::now();
  std::thread([&] { peer = play_peer(netns, address, recorded); }).join();
  std::printf(
      "peer on node 2: no key: %zu bytes then %s; wrong key: %s; replay: hello %zu bytes, "
      "then %zu bytes and %s (%.2f s)\n",
      peer.no_key_bytes, peer.no_key_closed ? "closed" : "open", peer.wrong_key.message.c_str(),
      peer.replay_hello, peer.replay_after.size(), peer.replay_closed ? "closed" : "open",
      std::chrono::duration<double>(Clock::now() - p0).count());
  ASSERT_EQ(peer.setns_error, "");
  EXPECT_LE(peer.no_key_bytes, ra::kRunnerHelloSize);
  EXPECT_TRUE(peer.no_key_closed);
  EXPECT_FALSE(peer.wrong_key_connected);
  EXPECT_EQ(peer.wrong_key.kind, rc::TransportError::Kind::kRefused) << peer.wrong_key.message;
  EXPECT_EQ(peer.replay_hello, ra::kRunnerHelloSize) << "the peer did not reach the runner";
  EXPECT_EQ(peer.replay_after, "");
  EXPECT_TRUE(peer.replay_closed);

  // Nothing ran for the peer; the holder's channel still works.
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(channel_->alive());
  ran = run(*channel_, std::string("test ! -e ") + kMarker + " && echo absent");
  ASSERT_TRUE(ran.done) << ran.lost;
  EXPECT_EQ(ran.out, "absent\n");

  // The runner logged each refusal, never the key; no inspect shows the key.
  const auto container = cluster().docker(
      3, {"ps", "-q", "--no-trunc", "--filter", "label=com.docker.swarm.task.id=" + task.id});
  ASSERT_TRUE(container.ok() && !container.out.empty()) << container.describe();
  const std::string cid = container.out.substr(0, container.out.find('\n'));
  const auto logs = cluster().docker(3, {"logs", cid});
  const std::string log = logs.out + logs.err;
  std::size_t refused = 0;
  for (auto at = log.find("refused a connection"); at != std::string::npos;
       at = log.find("refused a connection", at + 1))
    ++refused;
  EXPECT_GE(refused, 3u) << log;
  const std::vector<std::pair<int, std::vector<std::string>>> inspects = {
      {1, {"service", "inspect", service_}}, {1, {"inspect", task.id}}, {3, {"inspect", cid}}};
  for (const auto& [node, args] : inspects) {
    const auto shown = cluster().docker(node, args);
    ASSERT_TRUE(shown.ok()) << shown.describe();
    for (const std::string& form :
         {key_bytes(key), common::base64_encode(key_bytes(key)), hex(key_bytes(key))})
      EXPECT_EQ(shown.out.find(form), std::string::npos)
          << "docker " << args[0] << " shows the key";
    if (node == 1) {
      EXPECT_NE(shown.out.find(secret_), std::string::npos);  // by its id only
    }
  }
  EXPECT_EQ(log.find(common::base64_encode(key_bytes(key))), std::string::npos);

  ran = run(*channel_, "echo still");
  ASSERT_TRUE(ran.done) << ran.lost;
  EXPECT_EQ(ran.out, "still\n");

  // Removal: nothing with this owner id anywhere, then the workspace volume (the test's to remove).
  const std::string before = cluster().leftovers(owner);
  EXPECT_NE(before.find("services"), std::string::npos) << before;  // the check sees ours
  EXPECT_NE(before.find("node 3 containers"), std::string::npos) << before;
  channel_.reset();
  const auto r0 = Clock::now();
  remove_all();
  EXPECT_EQ(cluster().wait_nothing_left(owner, 30s), "");
  std::printf("removed, nothing left, in %.2f s\n",
              std::chrono::duration<double>(Clock::now() - r0).count());
  EXPECT_EQ(cluster().remove_volumes(owner), "");
}

}  // namespace
}  // namespace execmcp::plugins::docker_swarm
