// execmcp_swarm_bench: what placing sandboxes across machines by Docker Swarm costs (issue 33), in
// one run on a 3-node swarm of engines in containers (tests/docker/swarm/swarm_cluster.hpp):
// (a) the round trip of `true` through a RunnerChannel to the listening runner of a task on node 3
//     (connect_runner(), the key handshake, the overlay), from the server's seat (a container's
//     network namespace on node 1), against the same RunnerChannel to the runner on the host's
//     engine, exec'd through the Engine API (the docker-api backend's way, a hijacked exec
//     stream), and to the listening runner in a container on the host's engine over its bridge
//     (the same transport without the overlay), taking turns in rounds;
// (b) `service create` of the same image to a running task (the baseline of a new user's first
//     call), and a whole new sandbox (secret, overlay, the server's connect, service, running,
//     the runner's handshake) to its first `true`; and a new user's first call through a warm
//     sandbox of the docker-swarm backend (its claim: relocate_workspace(), then execute()), the
//     ratio of which to `service create` is the goal. See README.md.
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "docker_api_engine.hpp"
#include "docker_client/docker_endpoint.hpp"
#include "docker_swarm/service_spec.hpp"
#include "docker_swarm/swarm_api.hpp"
#include "docker_swarm/swarm_backend.hpp"
#include "execmcp/sdk/sandbox_control.hpp"
#include "runner_client/runner_channel.hpp"
#include "runner_client/runner_transport.hpp"
#include "supervision/runner_auth.hpp"
#include "supervision/runner_protocol.hpp"
#include "swarm_cluster.hpp"

namespace execmcp::bench {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using tests::swarm::SwarmCluster;
namespace sw = plugins::docker_swarm;
namespace rc = plugins::runner_client;
namespace ra = plugins::supervision::runner_auth;
namespace rp = plugins::supervision::runner;
namespace dc = plugins::docker_common;
namespace fs = std::filesystem;

struct Options {
  int calls = 400;  // round trips of `true` per row
  int rounds = 4;   // the rows take turns in this many rounds
  int creates = 5;  // service creates (and new sandboxes) to measure
  bool tcp = true;  // the host engine's listening runner row
};

void usage() {
  std::printf(
      "usage: execmcp_swarm_bench [--calls N] [--rounds N] [--creates N] [--no-local-tcp]\n"
      "  --calls N       round trips of `true` per row (default 400)\n"
      "  --rounds N      the rows take turns in N rounds (default 4)\n"
      "  --creates N     service creates to a running task, and new sandboxes (default 5)\n"
      "  --no-local-tcp  leave out the row of the listening runner on the host's engine\n"
      "Needs root and a Docker engine; starts its own 3-node swarm (scripts/swarm-cluster.sh)\n"
      "and stops it at the end. Exit 77 (skipped) where the cluster cannot be had.\n");
}

Options parse(int argc, char** argv) {
  Options opt;
  Args(usage)
      .count("--calls", opt.calls)
      .count("--rounds", opt.rounds)
      .count("--creates", opt.creates)
      .flag("--no-local-tcp", opt.tcp, false)
      .parse(argc, argv);
  opt.rounds = std::min(opt.rounds, opt.calls);
  return opt;
}

std::string key_bytes(const ra::RunnerKey& key) {
  return std::string(reinterpret_cast<const char*>(key.data()), ra::kKeySize);
}

void quiet_log(sdk::LogLevel, const std::string&) {}

// `true` through the channel; its milliseconds, or throws with why it did not end with 0.
double true_ms(rc::RunnerChannel& channel) {
  rp::RunSpec spec;
  spec.output_cap = 1 << 16;
  spec.work_dir = "/workspace";
  spec.shell = "/bin/sh";
  spec.command = "true";
  const auto t0 = Clock::now();
  std::string error;
  auto call = channel.start(spec, nullptr, error);
  if (!call) throw std::runtime_error("the runner did not take the call: " + error);
  std::vector<rc::RunnerCall::Chunk> chunks;
  const auto end = t0 + 30s;
  bool over = false;
  while (!over && Clock::now() < end) over = call->wait(1000ms, chunks);
  const double ms = ms_since(t0);
  if (!call->done() || call->done()->exit_code != 0)
    throw std::runtime_error("`true` did not end with 0: " + call->lost());
  return ms;
}

// A connected channel to a listening runner, retried while it is not up yet (within `limit`).
std::unique_ptr<rc::RunnerChannel> connect(const std::string& ip, const ra::RunnerKey& key,
                                           std::chrono::milliseconds limit) {
  rc::TransportError error;
  const auto end = Clock::now() + limit;
  for (;;) {
    auto ends = rc::connect_runner({ip, sw::kRunnerPort, "the runner at " + ip}, key, 5s, error);
    if (ends) {
      auto channel = std::make_unique<rc::RunnerChannel>(std::move(*ends), quiet_log);
      const std::string not_ready = channel->wait_ready(10s);
      if (!not_ready.empty()) throw std::runtime_error(ip + ": no hello: " + not_ready);
      return channel;
    }
    if (error.kind != rc::TransportError::Kind::kUnreachable || Clock::now() >= end)
      throw std::runtime_error(error.message);
    std::this_thread::sleep_for(20ms);
  }
}

// The swarm side: one secret and one internal overlay (the shim connected), services of the
// listening runner on them; everything labelled with `owner` and removed by remove_all().
class SwarmSide {
 public:
  SwarmSide(const SwarmCluster& cluster, std::string owner)
      : cluster_(cluster),
        owner_(std::move(owner)),
        transport_(plugins::docker_client::parse_docker_host(cluster.docker_host())),
        api_(transport_) {}
  ~SwarmSide() { remove_all(); }

  sw::ServiceSettings settings(const std::string& name, const std::string& constraint) const {
    sw::ServiceSettings s;
    s.name = name;
    s.agent_id = "bench";
    s.instance_id = std::to_string(::getpid());
    s.owner_pid = ::getpid();
    s.owner_host = owner_;
    s.image = cluster_.image();
    s.memory_bytes = 256LL << 20;
    s.pids_limit = 256;
    s.constraints = {constraint};
    s.volume = name + "-ws";
    s.user_key = "bench";
    return s;
  }

  // A secret holding `key` and an overlay with the shim on it, named after `name`.
  void make_network(const std::string& name, const ra::RunnerKey& key, sw::ServiceSettings& s) {
    std::string secret, network;
    check(api_.create_secret(name + "-key", sw::swarm_labels(s, sw::kRoleSwarmSecret),
                             key_bytes(key), secret));
    secrets_.push_back(secret);
    check(api_.create_network(sw::network_create_body(s, name + "-net", false), network));
    networks_.push_back(network);
    check(api_.connect_network(network, cluster_.shim_id()));
    s.network_id = network;
    s.secret = {secret, name + "-key", "1000", "1000"};
  }

  // Creates the service; returns its task's address once running.
  std::string create_running(const sw::ServiceSettings& s, double* create_to_running_ms) {
    std::string id;
    const auto t0 = Clock::now();
    check(api_.create_service(sw::service_spec(s), id));
    services_.push_back(id);
    for (const auto end = t0 + 60s; Clock::now() < end;) {
      std::vector<sw::TaskInfo> tasks;
      check(api_.list_tasks(id, true, tasks));
      if (!tasks.empty() && tasks[0].phase() == sw::TaskPhase::kRunning) {
        if (create_to_running_ms) *create_to_running_ms = ms_since(t0);
        return tasks[0].address_on(s.network_id);
      }
      if (!tasks.empty() && tasks[0].phase() == sw::TaskPhase::kFailed)
        throw std::runtime_error("the task failed: " + tasks[0].err);
      std::this_thread::sleep_for(10ms);
    }
    throw std::runtime_error("service " + s.name + " did not run within 60 s");
  }

  // Services, then secrets, then the shim's attachments and the networks (design §5's order).
  void remove_all() {
    for (const auto& id : services_) {
      api_.remove_service(id);
      std::vector<sw::TaskInfo> tasks;
      for (const auto end = Clock::now() + 20s; Clock::now() < end;) {
        const auto e = api_.list_tasks(id, false, tasks);
        if (e.not_found() || (e.ok() && tasks.empty())) break;
        std::this_thread::sleep_for(100ms);
      }
    }
    services_.clear();
    for (const auto& id : secrets_) api_.remove_secret(id);
    secrets_.clear();
    for (const auto& id : networks_) {
      api_.disconnect_network(id, cluster_.shim_id());
      for (const auto end = Clock::now() + 15s; Clock::now() < end;) {
        if (api_.remove_network(id).ok()) break;
        std::this_thread::sleep_for(250ms);
      }
    }
    networks_.clear();
  }

 private:
  static void check(const sw::SwarmError& e) {
    if (!e.ok()) throw std::runtime_error(e.message);
  }
  const SwarmCluster& cluster_;
  std::string owner_;
  sw::EngineTransport transport_;
  sw::SwarmApi api_;
  std::vector<std::string> services_, secrets_, networks_;
};

// Containers on the host's engine, removed at the end.
class HostContainers {
 public:
  ~HostContainers() {
    for (const auto& name : names_) spawn_quiet({"docker", "rm", "-f", "-v", name});
  }
  void run(const std::string& name, const std::vector<std::string>& args) {
    std::vector<std::string> argv{"docker", "run", "-d", "--name", name};
    argv.insert(argv.end(), args.begin(), args.end());
    names_.push_back(name);
    if (spawn_quiet(argv) != 0) throw std::runtime_error("docker run " + name + " failed");
  }

 private:
  std::vector<std::string> names_;
};

// The runner exec'd into a container on the host's engine through the Engine API, as the
// docker-api backend opens its channel (Engine::open_channel: POST /exec, a hijacked stream).
std::unique_ptr<rc::RunnerChannel> exec_channel(dc::Engine& engine, const std::string& container) {
  dc::ExecOptions options;
  options.cmd = {sw::kSwarmRunnerPath, rp::kChannelArg};
  options.user = "1000:1000";
  options.work_dir = "/";
  options.attach_stdin = true;
  dc::EngineError error;
  auto ends = engine.open_channel(container, options, error);
  if (!ends) throw std::runtime_error("open_channel: " + error.message);
  auto channel = std::make_unique<rc::RunnerChannel>(std::move(*ends), quiet_log);
  const std::string not_ready = channel->wait_ready(30s);
  if (!not_ready.empty()) throw std::runtime_error("the exec'd runner: " + not_ready);
  return channel;
}

// The listening runner in a container on the host's bridge, reached from the host's network
// namespace (a thread that goes back there makes the socket; the channel then works from any).
std::unique_ptr<rc::RunnerChannel> host_tcp_channel(const SwarmCluster& cluster,
                                                    const std::string& ip,
                                                    const ra::RunnerKey& key) {
  std::unique_ptr<rc::RunnerChannel> channel;
  std::string error;
  std::thread([&] {
    try {
      if (::setns(cluster.host_netns_fd(), CLONE_NEWNET) != 0)
        throw std::runtime_error("setns to the host's network namespace failed");
      channel = connect(ip, key, 20s);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }).join();
  if (!channel) throw std::runtime_error("the host's listening runner: " + error);
  return channel;
}

struct Row {
  std::string label;
  rc::RunnerChannel* channel = nullptr;
  std::vector<double> ms;
};

void print_rows(const std::vector<Row>& rows) {
  std::printf(
      "\n| `true` round trip | n | p50 ms | p90 ms | p99 ms | max ms | p50 / exec'd |\n"
      "|---|---|---|---|---|---|---|\n");
  const double base = percentiles(rows[1].ms).p50;
  for (const auto& row : rows) {
    const auto p = percentiles(row.ms);
    std::printf("| %s | %zu | %.3f | %.3f | %.3f | %.3f | %.2fx |\n", row.label.c_str(), p.n, p.p50,
                p.p90, p.p99, p.max, base > 0 ? p.p50 / base : 0.0);
  }
  const double swarm = percentiles(rows[0].ms).p50;
  std::printf(
      "\nratio p50(swarm, node 1 -> node 3) / p50(runner on the local engine, exec'd): "
      "%.2fx (goal <= 1.5x)\n",
      base > 0 ? swarm / base : 0.0);
}

// The round trips: `calls` per row, the rows taking turns in `rounds` rounds after a warm-up.
void measure_round_trips(std::vector<Row>& rows, const Options& opt) {
  for (auto& row : rows)
    for (int i = 0; i < 20; ++i) true_ms(*row.channel);
  for (int r = 0; r < opt.rounds; ++r) {
    const int n = opt.calls / opt.rounds + (r < opt.calls % opt.rounds ? 1 : 0);
    for (auto& row : rows)
      for (int i = 0; i < n; ++i) row.ms.push_back(true_ms(*row.channel));
  }
}

// The warm pool's first call: what the host does when a new user claims a warm sandbox of a
// per-user docker-swarm agent (host/src/agent/warm_pool.cpp): the sandbox was made and its runner
// connected ahead (start() of a backend whose workspace is a `.warm-<n>` directory; not timed);
// the claim renames that directory to the user's, tells the backend (relocate_workspace(): the
// placement record moves with it) and runs the user's first command. Timed: the rename, the
// relocation and the first execute() of `true`, through the docker-swarm backend itself.
std::vector<double> measure_warm_first_call(const SwarmCluster& cluster, int users) {
  const TempDir root("execmcp-swarmbench-warm-");
  struct Log : sdk::LogSink {
    void log(sdk::LogLevel level, std::string_view message) noexcept override {
      if (level >= sdk::LogLevel::Warn)
        std::fprintf(stderr, "  [docker-swarm] %.*s\n", static_cast<int>(message.size()),
                     message.data());
    }
  } log;
  const std::string owner = "execmcp-swarmbench-" + std::to_string(::getpid());
  const std::string settings = nlohmann::json{
      {"image", cluster.image()},
      {"docker_host", cluster.docker_host()},
      {"server_container", cluster.shim_id()},
      {"owner_id", owner},
      {"constraints",
       {"node.role==worker"}}}.dump();
  std::vector<double> out;
  for (int i = 0; i < users; ++i) {
    const auto warm = root.root / (".warm-" + std::to_string(i));
    const auto user = root.root / ("user-" + std::to_string(i));
    fs::create_directories(warm);
    sdk::BackendInit init;
    init.agent_id = "bench";
    init.instance_id = "w" + std::to_string(i);
    init.cwd = warm.string();
    init.paths = {{init.cwd, true}};
    init.sandbox_cwd = "/workspace";
    init.settings_json = settings;
    init.log = &log;
    sw::SwarmBackend backend(init);
    struct Cleanup {
      sw::SwarmBackend& b;
      ~Cleanup() { b.cleanup(); }
    } cleanup{backend};
    if (const auto error = backend.start(); !error.empty())
      throw std::runtime_error("a warm sandbox did not start: " + error);
    auto* control = sdk::sandbox_control(backend);
    if (control == nullptr) throw std::runtime_error("docker-swarm offers no execmcp.sandbox/1");
    sdk::ExecRequest request;
    request.command = "true";
    request.timeout = 30s;
    const auto t0 = Clock::now();
    fs::rename(warm, user);
    if (const auto error = control->relocate_workspace(user.string()); !error.empty())
      throw std::runtime_error("relocate_workspace: " + error);
    const auto result = backend.execute(request);
    out.push_back(ms_since(t0));
    if (result.exit_code != 0 || !result.error.empty())
      throw std::runtime_error("a warm sandbox's first call failed: " + result.error);
    std::printf("  warm sandbox %d: claim and first `true` %.1f ms\n", i + 1, out.back());
    std::fflush(stdout);
  }
  return out;
}

struct Creates {
  std::vector<double> service_to_running;  // POST /services/create until the task runs
  std::vector<double> sandbox_to_true;     // secret .. first `true` answered
};

// `creates` new sandboxes, one at a time, each removed before the next (not timed).
Creates measure_creates(const SwarmCluster& cluster, const std::string& owner, int creates) {
  Creates out;
  for (int i = 0; i < creates; ++i) {
    SwarmSide side(cluster, owner);
    const std::string name =
        "execmcp-bench-" + std::to_string(::getpid()) + "-c" + std::to_string(i);
    auto s = side.settings(name, "node.role==worker");
    const auto key = ra::RunnerKey::random();
    const auto t0 = Clock::now();
    side.make_network(name, key, s);
    double running = 0;
    const std::string ip = side.create_running(s, &running);
    auto channel = connect(ip, key, 20s);
    true_ms(*channel);
    out.sandbox_to_true.push_back(ms_since(t0));
    out.service_to_running.push_back(running);
    std::printf(
        "  new sandbox %d: service create -> running %.0f ms, all -> first `true` %.0f ms\n", i + 1,
        running, out.sandbox_to_true.back());
    std::fflush(stdout);
  }
  return out;
}

void print_creates(const Creates& c, const std::vector<double>& warm) {
  const auto svc = percentiles(c.service_to_running);
  const auto all = percentiles(c.sandbox_to_true);
  std::printf(
      "\n| a new user's first call | n | p50 ms | p90 ms | max ms |\n|---|---|---|---|---|\n");
  std::printf("| `service create` (API) to task running | %zu | %.0f | %.0f | %.0f |\n", svc.n,
              svc.p50, svc.p90, svc.max);
  std::printf(
      "| new sandbox (secret, overlay, server connect, service, running, handshake) to "
      "first `true` | %zu | %.0f | %.0f | %.0f |\n",
      all.n, all.p50, all.p90, all.max);
  const auto w = percentiles(warm);
  std::printf(
      "| warm pool (docker-swarm backend): claim (rename, relocate_workspace) and first `true` | "
      "%zu | %.1f | %.1f | %.1f |\n",
      w.n, w.p50, w.p90, w.max);
  std::printf(
      "\nratio p50(warm first call) / p50(service create to running): %.3fx (goal <= 0.1x)\n",
      svc.p50 > 0 ? w.p50 / svc.p50 : 0.0);
}

int run(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  SwarmCluster cluster;  // before any thread: it moves this one's network namespace
  cluster.start();
  if (!cluster.ready()) {
    std::printf("skipped: %s\n", cluster.reason().c_str());
    return cluster.failed() ? 1 : kSkipped;
  }
  const std::string owner = "swarm-bench-" + std::to_string(::getpid());
  std::printf("execmcp_swarm_bench: image %s, %u cores, load average %s\n", cluster.image().c_str(),
              std::thread::hardware_concurrency(), load_average().c_str());
  {
    // (a) the steady round trip.
    SwarmSide side(cluster, owner);
    const std::string name = "execmcp-bench-" + std::to_string(::getpid());
    auto s = side.settings(name, "node.hostname==" + cluster.node(3).name);
    const auto key = ra::RunnerKey::random();
    side.make_network(name, key, s);
    auto swarm = connect(side.create_running(s, nullptr), key, 20s);

    HostContainers host;
    plugins::docker_api::DockerApiEngine engine("");
    if (const auto e = engine.connect(); !e.ok()) throw std::runtime_error(e.message);
    const std::string exec_name = name + "-exec";
    host.run(exec_name, {"--network", "none", "--user", "1000:1000", "--init", cluster.image(),
                         "sleep", "86400"});
    auto exec = exec_channel(engine, exec_name);
    std::vector<Row> rows{
        {"swarm: listening runner on node 3, from node 1 over the overlay", swarm.get(), {}},
        {"local engine: runner exec'd (Engine API exec stream)", exec.get(), {}}};
    TempDir dir("execmcp-swarm-bench-");
    std::unique_ptr<rc::RunnerChannel> tcp;
    if (opt.tcp) {
      const auto local_key = ra::RunnerKey::random();
      const auto key_file = dir.root / "key";
      std::ofstream(key_file, std::ios::binary) << key_bytes(local_key);
      ::chown(key_file.c_str(), 1000, 1000);
      ::chmod(key_file.c_str(), 0400);
      host.run(name + "-tcp",
               {"--network", "bridge", "--user", "1000:1000", "-v",
                key_file.string() + ":/run/execmcp-key:ro", cluster.image(), sw::kSwarmRunnerPath,
                "--execmcp-runner-listen=7077", "--execmcp-runner-key-file=/run/execmcp-key"});
      const std::string ip =
          output_of("docker inspect -f '{{.NetworkSettings.IPAddress}}' " + name + "-tcp");
      tcp = host_tcp_channel(cluster, ip, local_key);
      rows.push_back({"local engine: listening runner over its bridge (TCP, key handshake once)",
                      tcp.get(),
                      {}});
    }
    measure_round_trips(rows, opt);
    print_rows(rows);
  }
  // (b) a new user's first call.
  std::printf("\n%d new sandboxes, Swarm placing each on a worker:\n", opt.creates);
  const Creates creates = measure_creates(cluster, owner, opt.creates);
  print_creates(creates, measure_warm_first_call(cluster, opt.creates));
  const std::string left = cluster.wait_nothing_left(owner, 30s);
  if (!left.empty()) std::printf("\nWARNING: left behind:\n%s", left.c_str());
  cluster.remove_volumes(owner);
  std::printf("\nload average at the end: %s\n", load_average().c_str());
  cluster.stop();
  return 0;
}

}  // namespace
}  // namespace execmcp::bench

int main(int argc, char** argv) {
  return execmcp::bench::run_main("execmcp_swarm_bench",
                                  [&] { return execmcp::bench::run(argc, argv); });
}
