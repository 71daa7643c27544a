// The docker-swarm tests' and bench's cluster: three engines in
// containers of the host engine (scripts/swarm-cluster.sh, prefix execmcp-swarm-<pid>), node 1
// the manager, nodes 2 and 3 workers; the runner's test image (docker/build.sh --swarm-test:
// static busybox + execmcp-runner, a few MB) loaded on every node; a "shim" container on node 1
// on a bridge network of node 1's engine, whose network namespace this process joins, so that
// the test is where the server sits in a deployment (a container on a swarm node that the
// sandboxes' overlays are connected to; design §7) while it stays an ASan binary of the host.
// The cluster is stopped by stop(), also when the process dies first (a watchdog process).
// Plain C++ (no gtest): the tests' gtest Environment is swarm_fixture.hpp; bench/swarm_bench.cpp
// uses this class itself.
//
// Environment: EXECMCP_SWARM_TESTS=0 skips; EXECMCP_SWARM_KEEP=1 leaves the cluster running at the
// end (to look at it; stop it with EXECMCP_SWARM_PREFIX=... scripts/swarm-cluster.sh stop);
// EXECMCP_SWARM_TEST_IMAGE names another image to load (it must hold the runner as the test image).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace execmcp::tests::swarm {

// A finished command: its exit code (-1: it could not run, timed out or died of a signal).
struct CommandResult {
  int status = -1;
  std::string out;
  std::string err;
  [[nodiscard]] bool ok() const { return status == 0; }
  // "exit N: <stderr's end>", for assertion messages.
  [[nodiscard]] std::string describe() const;
};

// Runs argv (found in PATH) with `input` on its stdin, within `limit`; `env` adds KEY=VALUE.
// No thread: the caller's network namespace is the child's.
CommandResult run_command(const std::vector<std::string>& argv, const std::string& input = {},
                          std::chrono::seconds limit = std::chrono::seconds(120),
                          const std::vector<std::string>& env = {});

struct SwarmNode {
  int number = 0;    // 1 is the manager
  std::string name;  // the node container's name on the host engine, also its hostname
  std::string id;    // the swarm node id
  pid_t pid = 0;     // the node container's init on the host
};

class SwarmCluster {
 public:
  // The test binary's cluster (swarm_fixture.cpp: its gtest Environment starts and stops it).
  static SwarmCluster& get();

  SwarmCluster() = default;
  SwarmCluster(const SwarmCluster&) = delete;
  SwarmCluster& operator=(const SwarmCluster&) = delete;
  ~SwarmCluster() { stop(); }

  // Once, on the main thread before any other thread starts (it moves this thread's network
  // namespace): builds the image, starts the cluster, loads the image, starts the shim, joins its
  // network namespace. ready() after it, or reason() says why not. Prints a line either way.
  void start();
  // Stops the cluster (unless EXECMCP_SWARM_KEEP=1); again: nothing.
  void stop();
  // The network namespace this process was in before start() joined the shim's (an fd of
  // /proc/self/ns/net, -1 before): a thread may setns() back to it to reach the host's networks.
  [[nodiscard]] int host_netns_fd() const { return host_netns_fd_; }

  [[nodiscard]] bool ready() const { return ready_; }
  // Why not ready: a reason to skip (`failed()` false) or a failure.
  [[nodiscard]] const std::string& reason() const { return reason_; }
  [[nodiscard]] bool failed() const { return failed_; }

  [[nodiscard]] const std::string& prefix() const { return prefix_; }
  // The manager's engine from this process: unix:///proc/<node 1 pid>/root/run/docker.sock.
  [[nodiscard]] const std::string& docker_host() const { return docker_host_; }
  // The image loaded on every node (the listening runner at /usr/lib/execmcp/execmcp-runner).
  [[nodiscard]] const std::string& image() const { return image_; }
  // The container on node 1 whose network namespace this process is in (the backend's
  // `server_container`): its name and id on node 1's engine.
  [[nodiscard]] const std::string& shim_name() const { return shim_name_; }
  [[nodiscard]] const std::string& shim_id() const { return shim_id_; }
  [[nodiscard]] const std::vector<SwarmNode>& nodes() const { return nodes_; }
  [[nodiscard]] const SwarmNode& node(int number) const { return nodes_.at(number - 1); }
  [[nodiscard]] std::vector<SwarmNode> workers() const;

  // `docker ARGS` in node N (its engine), `input` on stdin.
  CommandResult docker(int node, const std::vector<std::string>& args,
                       const std::string& input = {}) const;
  // The network namespace of container `container` on node N, as a path of this host
  // (/proc/<node pid>/root/run/docker/netns/<key>); "" (and `error`) when it has none.
  std::string netns_path(int node, const std::string& container, std::string& error) const;

  // What carries execmcp.owner.host=<owner> anywhere: services and secrets (the manager),
  // networks and containers (every node). "" when nothing; else a line per kind and node.
  std::string leftovers(const std::string& owner) const;
  // leftovers() until it is "" or `limit` passed; its last answer.
  std::string wait_nothing_left(const std::string& owner, std::chrono::seconds limit) const;
  // Removes the volumes labelled owner.host=<owner> on every node (the server never removes a
  // workspace; a test does). "" or what failed.
  std::string remove_volumes(const std::string& owner) const;

  double start_seconds = 0;  // swarm-cluster.sh start
  double load_seconds = 0;   // the image into every node

 private:
  CommandResult script(const std::vector<std::string>& args, const std::string& input = {}) const;
  bool set_up();  // false: reason_ (and failed_) say why
  bool build_image();
  bool start_cluster();
  bool find_nodes();
  bool start_shim();
  bool join_shim_netns();
  void start_watchdog();
  void skip(std::string why) { reason_ = std::move(why); }
  void fail(std::string why) {
    reason_ = std::move(why);
    failed_ = true;
  }

  bool ready_ = false;
  bool failed_ = false;
  bool started_ = false;  // the cluster may exist: stop it at the end
  std::string reason_;
  std::string prefix_;
  std::string docker_host_;
  std::string image_;
  std::string shim_name_;
  std::string shim_id_;
  std::vector<SwarmNode> nodes_;
  int watchdog_fd_ = -1;  // write end: "done" tells the watchdog the cluster is stopped
  int host_netns_fd_ = -1;
};

}  // namespace execmcp::tests::swarm
