// execmcp_bench: measures, in one run, bare process spawn latency against execmcp's
// execute_command round trip (sequential, concurrent, multi-process), the server's memory, and
// the Streamable HTTP transport against stdio on the same backend, and optionally the Docker
// backend against `docker exec`.
#include <poll.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "http_client.hpp"
#include "server_process.hpp"

extern char** environ;

namespace execmcp::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr double kTargetRatio = 1.5;
constexpr double kTargetRssMiB = 20.0;
constexpr int kConcurrency = 8;
constexpr int kHttpInFlight = 16;  // the issue's "16 in flight"
constexpr int kHttpRounds = 4;     // HTTP and stdio alternate, so both see the same machine load

struct Options {
  std::string bin;
  int iterations = 500;
  bool docker = false;
  std::string docker_config;  // optional: a config with a docker-api agent
  std::string docker_agent = "bench";
  std::string docker_image = "execmcp/runtime:latest";
  int docker_iterations = 100;
  bool http = true;
};

struct Stats {
  std::string name;
  std::size_t calls = 0;
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;  // milliseconds
  double per_second = 0;
};

Stats summarize(const std::string& name, std::vector<double> ms, double wall_seconds) {
  Stats s;
  s.name = name;
  s.calls = ms.size();
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) {
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(ms.size())));
    return ms[std::min(ms.size() - 1, rank == 0 ? 0 : rank - 1)];
  };
  s.p50 = pct(0.50);
  s.p90 = pct(0.90);
  s.p99 = pct(0.99);
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean = sum / static_cast<double>(ms.size());
  s.per_second = wall_seconds > 0 ? static_cast<double>(ms.size()) / wall_seconds : 0;
  return s;
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// (1) posix_spawn + waitpid of `argv`, `n` times.
Stats bench_spawn(const std::string& name, const std::vector<std::string>& argv, int n) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<double> lat;
  lat.reserve(static_cast<std::size_t>(n));
  const auto wall = Clock::now();
  for (int i = 0; i < n; ++i) {
    const auto t = Clock::now();
    pid_t pid = -1;
    if (posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0)
      throw std::runtime_error("posix_spawn " + argv[0] + " failed");
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw std::runtime_error(name + ": command failed");
    lat.push_back(ms_since(t));
  }
  return summarize(name, std::move(lat),
                   std::chrono::duration<double>(Clock::now() - wall).count());
}

std::string exec_request(long id, const std::string& command) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"execute_command","arguments":{"command":")" +
         command + R"("}}})";
}

// Samples the servers' VmRSS while a load runs; VmHWM at the end covers what sampling missed.
class RssSampler {
 public:
  explicit RssSampler(std::vector<pid_t> pids) : pids_(std::move(pids)) {
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        long total = 0;
        for (pid_t p : pids_) {
          std::ifstream in("/proc/" + std::to_string(p) + "/status");
          std::string line;
          while (std::getline(in, line))
            if (line.rfind("VmRSS:", 0) == 0) total += std::stol(line.substr(6));
        }
        peak_sum_kib_ = std::max(peak_sum_kib_.load(), total);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  ~RssSampler() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] long peak_sum_kib() const { return peak_sum_kib_.load(); }

 private:
  std::vector<pid_t> pids_;
  std::atomic<bool> stop_{false};
  std::atomic<long> peak_sum_kib_{0};
  std::thread thread_;
};

// Drives `servers`, keeping `in_flight` execute_command calls open on each, until each has
// completed `calls_per_server`. Returns per-call latencies (ms) and the wall time.
struct LoadResult {
  std::vector<double> latencies;
  double wall_seconds = 0;
  long peak_rss_kib = 0;  // highest VmHWM of one server
  long peak_sum_rss_kib = 0;
};

LoadResult run_load(const std::vector<ServerProcess*>& servers, int in_flight, int calls_per_server,
                    const std::string& command) {
  LoadResult out;
  out.latencies.reserve(servers.size() * static_cast<std::size_t>(calls_per_server));
  std::vector<pid_t> pids;
  for (auto* s : servers) pids.push_back(s->pid());
  RssSampler sampler(pids);

  struct PerServer {
    int sent = 0;
    int done = 0;
    long next_id = 1000;
    std::map<long, Clock::time_point> open;
  };
  std::vector<PerServer> state(servers.size());
  auto send_one = [&](std::size_t i) {
    auto& st = state[i];
    const long id = st.next_id++;
    st.open[id] = Clock::now();
    servers[i]->send_line(exec_request(id, command));
    ++st.sent;
  };

  const auto wall = Clock::now();
  for (std::size_t i = 0; i < servers.size(); ++i)
    for (int k = 0; k < in_flight && state[i].sent < calls_per_server; ++k) send_one(i);

  std::size_t remaining = servers.size() * static_cast<std::size_t>(calls_per_server);
  std::vector<pollfd> pfds(servers.size());
  while (remaining > 0) {
    for (std::size_t i = 0; i < servers.size(); ++i) pfds[i] = {servers[i]->stdout_fd(), POLLIN, 0};
    const int ready = poll(pfds.data(), pfds.size(), 60000);
    if (ready == 0) throw std::runtime_error("no response from the server for 60 s");
    for (std::size_t i = 0; i < servers.size(); ++i) {
      if (pfds[i].revents == 0) continue;
      while (auto line = servers[i]->try_read_line()) {
        const long id = response_id(*line);
        auto it = state[i].open.find(id);
        if (it == state[i].open.end()) continue;  // a notification or a stray line
        out.latencies.push_back(ms_since(it->second));
        state[i].open.erase(it);
        expect_exec_ok(*line);
        ++state[i].done;
        --remaining;
        if (state[i].sent < calls_per_server) send_one(i);
      }
    }
  }
  out.wall_seconds = std::chrono::duration<double>(Clock::now() - wall).count();
  sampler.stop();
  out.peak_sum_rss_kib = sampler.peak_sum_kib();
  for (auto* s : servers) out.peak_rss_kib = std::max(out.peak_rss_kib, s->peak_rss_kib());
  return out;
}

struct Workspace {
  fs::path root;
  fs::path ws;
  Workspace() {
    std::string tmpl = (fs::temp_directory_path() / "execmcp-bench-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    root = tmpl;
    ws = root / "ws";
    fs::create_directories(ws / "tools");
  }
  ~Workspace() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  [[nodiscard]] std::string write_config(const std::string& name, const std::string& agent,
                                         const std::string& backend,
                                         const std::string& filters) const {
    const fs::path file = root / name;
    std::ofstream out(file);
    out << "execmcp: 1\nagents:\n  - id: " << agent << "\n    cwd: \"" << ws.string() << "\"\n"
        << "    backend: " << backend << "\n    filters: " << filters << "\n    timeout: 60\n";
    return file.string();
  }
};

const char* kNoFilters = "[]";
const char* kDefaultFilters =
    R"([{plugin: sanitize}, {plugin: patterns, settings: {deny: ["^curl "]}}])";
const char* kLocalBackend = "{plugin: local, settings: {}}";

struct ServerSection {
  Stats sequential;
  // Bare spawns and server calls alternated one by one, so both see the same machine load.
  Stats paired_spawn;
  Stats paired_server;
  Stats concurrent;
  Stats multi;                      // kConcurrency servers, one client each
  long multi_peak_sum_rss_kib = 0;  // all kConcurrency servers together, sampled
  long idle_rss_kib = 0;
  long peak_rss_kib = 0;
  double start_to_ready_ms = 0;
};

// Reads the server's stderr log, for error messages.
std::string read_log(const std::string& log) {
  std::ifstream in(log);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Starts a server and completes initialize; on failure the message includes its stderr.
std::unique_ptr<ServerProcess> start_server(const Options& opt, const std::string& config,
                                            const std::string& agent, const std::string& log,
                                            const std::string& label,
                                            const std::vector<std::string>& extra_args = {}) {
  auto server = std::make_unique<ServerProcess>(opt.bin, config, agent, log, extra_args);
  try {
    server->initialize();
  } catch (const std::exception& e) {
    throw std::runtime_error(label + ": " + e.what() + "\n--- server stderr ---\n" + read_log(log));
  }
  return server;
}

// run_load, with the server's stderr in the message when it fails.
LoadResult checked_load(const std::vector<ServerProcess*>& servers, int in_flight, int calls,
                        const std::string& log, const std::string& label) {
  try {
    return run_load(servers, in_flight, calls, "true");
  } catch (const std::exception& e) {
    throw std::runtime_error(label + ": " + e.what() + "\n--- server stderr ---\n" + read_log(log));
  }
}

// Alternates one bare `sh -c true` spawn and one execute_command("true") call, `n` times.
void paired(ServerProcess& server, int n, const std::string& log, const std::string& label,
            ServerSection& r) {
  const std::vector<std::string> bare = {"/bin/sh", "-c", "true"};
  std::vector<double> spawn_ms;
  std::vector<double> call_ms;
  double spawn_wall = 0;
  double call_wall = 0;
  try {
    for (int i = 0; i < n; ++i) {
      auto t = Clock::now();
      if (spawn_and_wait(bare) != 0) throw std::runtime_error("sh -c true failed");
      spawn_ms.push_back(ms_since(t));
      spawn_wall += spawn_ms.back() / 1000.0;
      const long id = 900000 + i;
      t = Clock::now();
      server.send_line(exec_request(id, "true"));
      for (;;) {
        const std::string line = server.read_line(std::chrono::seconds(60));
        if (response_id(line) != id) continue;
        call_ms.push_back(ms_since(t));
        expect_exec_ok(line);
        break;
      }
      call_wall += call_ms.back() / 1000.0;
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(label + ": " + e.what() + "\n--- server stderr ---\n" + read_log(log));
  }
  r.paired_spawn = summarize("paired: bare spawn (" + label + " run)", spawn_ms, spawn_wall);
  r.paired_server = summarize("paired: execmcp sequential, " + label, call_ms, call_wall);
}

ServerSection bench_server(const Options& opt, const Workspace& w, const std::string& label,
                           const std::string& config, const std::string& agent, int iterations,
                           bool with_multi) {
  ServerSection r;
  const std::string log = (w.root / (label + ".stderr.log")).string();
  const auto t0 = Clock::now();
  auto owned = start_server(opt, config, agent, log, label);
  ServerProcess& server = *owned;
  r.start_to_ready_ms = ms_since(t0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  r.idle_rss_kib = server.rss_kib();

  // A few warm-up calls so one-time costs (first exec, page faults) are not in the percentiles.
  checked_load({&server}, 1, std::min(iterations, 10), log, label);
  auto seq = checked_load({&server}, 1, iterations, log, label);
  r.sequential = summarize("execmcp sequential, " + label, seq.latencies, seq.wall_seconds);
  paired(server, iterations, log, label, r);
  auto conc = checked_load({&server}, kConcurrency, iterations, log, label);
  r.concurrent = summarize("execmcp 8 in flight, " + label, conc.latencies, conc.wall_seconds);
  r.peak_rss_kib = std::max(seq.peak_rss_kib, conc.peak_rss_kib);
  server.shutdown();

  if (with_multi) {
    std::vector<std::unique_ptr<ServerProcess>> many;
    std::vector<ServerProcess*> ptrs;
    for (int i = 0; i < kConcurrency; ++i) {
      many.push_back(start_server(opt, config, agent, log, label));
      ptrs.push_back(many.back().get());
    }
    checked_load(ptrs, 1, 5, log, label);
    const int per = std::max(1, iterations / kConcurrency);
    auto multi = checked_load(ptrs, 1, per, log, label);
    r.multi = summarize("8 servers x 1 client, " + label, multi.latencies, multi.wall_seconds);
    r.multi_peak_sum_rss_kib = multi.peak_sum_rss_kib;
    for (auto& s : many) s->shutdown();
  }
  return r;
}

void print_row(const Stats& s) {
  std::printf("%-44s %7zu %9.3f %9.3f %9.3f %10.1f\n", s.name.c_str(), s.calls, s.p50, s.p90, s.p99,
              s.per_second);
}

void print_header() {
  std::printf("%-44s %7s %9s %9s %9s %10s\n", "measurement", "calls", "p50 ms", "p90 ms", "p99 ms",
              "calls/s");
  std::printf("%s\n", std::string(92, '-').c_str());
}

// `in_flight` keep-alive connections, each sending its next execute_command("true") as soon as
// the previous one is answered, until `calls` are done in all. Returns latencies and wall time.
LoadResult http_load(std::uint16_t port, const std::string& agent, int in_flight, int calls) {
  std::atomic<int> next{0};
  std::vector<std::vector<double>> lat(static_cast<std::size_t>(in_flight));
  std::vector<std::string> errors(static_cast<std::size_t>(in_flight));
  const auto headers = stateless_exec_headers();
  const std::string path = "/mcp/" + agent;
  std::vector<std::thread> threads;
  const auto wall = Clock::now();
  for (int t = 0; t < in_flight; ++t) {
    threads.emplace_back([&, t] {
      try {
        HttpConnection conn(port);
        for (int i = next++; i < calls; i = next++) {
          const auto start = Clock::now();
          const HttpResponse r = conn.post(path, headers, stateless_exec_body(i + 1, "true"),
                                           std::chrono::seconds(60));
          lat[static_cast<std::size_t>(t)].push_back(ms_since(start));
          if (r.status != 200)
            throw std::runtime_error("HTTP " + std::to_string(r.status) + ": " +
                                     r.body.substr(0, 300));
          const std::string rpc = rpc_of_body(r.body);
          if (response_id(rpc) != i + 1) throw std::runtime_error("wrong id in " + rpc);
          expect_exec_ok(rpc);
        }
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(t)] = e.what();
        next = calls;  // the others stop too
      }
    });
  }
  for (auto& th : threads) th.join();
  LoadResult out;
  out.wall_seconds = std::chrono::duration<double>(Clock::now() - wall).count();
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error("HTTP load: " + e);
  for (auto& l : lat) out.latencies.insert(out.latencies.end(), l.begin(), l.end());
  return out;
}

// execute_command("true") over Streamable HTTP (2026-07-28 stateless requests, keep-alive
// connections) against stdio, one local-backend server each, at 1 and kHttpInFlight in flight.
// The four loads alternate in kHttpRounds rounds so that each sees the same machine load.
void bench_http(const Options& opt, const Workspace& w) {
  const fs::path config = w.root / "http.yaml";
  {
    std::ofstream out(config);
    out << "execmcp: 1\nagents:\n  - id: default\n    cwd: \"" << w.ws.string()
        << "\"\n    backend: " << kLocalBackend << "\n    filters: " << kNoFilters
        << "\n    timeout: 60\nserver:\n  allow_local_agents: true\n";
  }
  const std::vector<std::string> limits = {"--max-concurrent", std::to_string(kHttpInFlight)};
  const std::string stdio_log = (w.root / "stdio.stderr.log").string();
  const std::string http_log = (w.root / "http.stderr.log").string();
  auto stdio = start_server(opt, config.string(), "default", stdio_log, "stdio", limits);
  HttpServerProcess http(opt.bin, config.string(), limits, http_log);

  const int rounds = std::min(kHttpRounds, opt.iterations);
  const int per_round = std::max(1, opt.iterations / rounds);
  struct Row {
    std::vector<double> ms;
    double wall = 0;
    void add(const LoadResult& r) {
      ms.insert(ms.end(), r.latencies.begin(), r.latencies.end());
      wall += r.wall_seconds;
    }
  };
  Row stdio1, http1, stdio16, http16;
  try {
    // Warm-up: first spawns, the HTTP connections' first accept. The HTTP agent starts its
    // backend at its first call, one call alone: the server answers calls beyond the few that may
    // wait for a start "still starting" rather than hold their workers (a busy machine, a slow
    // start).
    checked_load({stdio.get()}, 1, std::min(opt.iterations, 10), stdio_log, "stdio");
    http_load(http.port(), "default", 1, 1);
    http_load(http.port(), "default", kHttpInFlight, std::min(opt.iterations, 32));
    for (int r = 0; r < rounds; ++r) {
      stdio1.add(checked_load({stdio.get()}, 1, per_round, stdio_log, "stdio"));
      http1.add(http_load(http.port(), "default", 1, per_round));
      stdio16.add(checked_load({stdio.get()}, kHttpInFlight, per_round, stdio_log, "stdio"));
      http16.add(http_load(http.port(), "default", kHttpInFlight, per_round));
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + "\n--- http server stderr ---\n" +
                             read_log(http_log));
  }
  const long stdio_hwm = stdio->peak_rss_kib();
  const long http_hwm = http.peak_rss_kib();
  stdio->shutdown();
  const int http_exit = http.stop();

  const Stats s1 = summarize("stdio, 1 in flight", stdio1.ms, stdio1.wall);
  const Stats h1 = summarize("http, 1 in flight", http1.ms, http1.wall);
  const Stats s16 = summarize("stdio, 16 in flight", stdio16.ms, stdio16.wall);
  const Stats h16 = summarize("http, 16 in flight", http16.ms, http16.wall);
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  std::printf("\n== HTTP vs stdio: execute_command(\"true\"), local backend, no filters ==\n");
  std::printf("%-28s %7s %9s %9s %10s\n", "transport", "calls", "p50 ms", "p99 ms", "calls/s");
  std::printf("%s\n", std::string(67, '-').c_str());
  for (const Stats* s : {&s1, &h1, &s16, &h16})
    std::printf("%-28s %7zu %9.3f %9.3f %10.1f\n", s->name.c_str(), s->calls, s->p50, s->p99,
                s->per_second);
  std::printf("%-28s %7s %8.2fx %8.2fx %9.2fx\n", "ratio http/stdio, 1", "", ratio(h1.p50, s1.p50),
              ratio(h1.p99, s1.p99), ratio(h1.per_second, s1.per_second));
  std::printf("%-28s %7s %8.2fx %8.2fx %9.2fx\n", "ratio http/stdio, 16", "",
              ratio(h16.p50, s16.p50), ratio(h16.p99, s16.p99),
              ratio(h16.per_second, s16.per_second));
  std::printf(
      "server RSS peak (VmHWM): stdio %.1f MiB, http %.1f MiB; http server exit %d on "
      "SIGTERM\n",
      static_cast<double>(stdio_hwm) / 1024.0, static_cast<double>(http_hwm) / 1024.0, http_exit);
  if (http_exit != 0)
    throw std::runtime_error("the HTTP server exited " + std::to_string(http_exit));
}

bool docker_ready(const std::string& image) {
  return spawn_and_wait({"sh", "-c", "docker info >/dev/null 2>&1"}) == 0 &&
         spawn_and_wait({"sh", "-c", "docker image inspect '" + image + "' >/dev/null 2>&1"}) == 0;
}

void bench_docker(const Options& opt, const Workspace& w, const Stats& spawn_stats) {
  std::printf("\n== docker (image %s) ==\n", opt.docker_image.c_str());
  if (!docker_ready(opt.docker_image)) {
    std::printf("skipped: no Docker engine answers or image %s is missing (docker/build.sh)\n",
                opt.docker_image.c_str());
    return;
  }
  const int n = opt.docker_iterations;
  // Our own container for the CLI baseline, so the comparison does not depend on the backend's
  // naming; same image and network as the backend's default.
  const std::string ctr = "execmcp-bench-cli-" + std::to_string(getpid());
  if (spawn_and_wait({"sh", "-c",
                      "docker run -d --rm --network none --name " + ctr + " '" + opt.docker_image +
                          "' sleep infinity >/dev/null"}) != 0)
    throw std::runtime_error("docker run of the baseline container failed");
  Stats cli;
  try {
    bench_spawn("warm-up", {"docker", "exec", ctr, "true"}, 3);
    cli = bench_spawn("docker exec <ctr> true (CLI)", {"docker", "exec", ctr, "true"}, n);
  } catch (...) {
    spawn_and_wait({"docker", "rm", "-f", ctr});
    throw;
  }
  spawn_and_wait({"sh", "-c", "docker rm -f " + ctr + " >/dev/null 2>&1"});

  std::string config = opt.docker_config;
  std::string agent = opt.docker_agent;
  if (config.empty()) {
    agent = "bench" + std::to_string(getpid());
    config = w.write_config("docker.yaml", agent,
                            "{plugin: docker-api, settings: {image: \"" + opt.docker_image + "\"}}",
                            kNoFilters);
  }

  // First call for a new agent: server start -> initialize -> first execute_command result,
  // container creation included.
  const std::string log = (w.root / "docker.stderr.log").string();
  const auto t0 = Clock::now();
  auto owned = start_server(opt, config, agent, log, "docker-api");
  ServerProcess& server = *owned;
  const double ready_ms = ms_since(t0);
  auto first = checked_load({&server}, 1, 1, log, "docker-api first call");
  const double first_ms = ms_since(t0);
  const long idle_rss = server.rss_kib();
  checked_load({&server}, 1, 5, log, "docker-api warm-up");
  auto seq = checked_load({&server}, 1, n, log, "docker-api sequential");
  const Stats api = summarize("execmcp docker-api sequential", seq.latencies, seq.wall_seconds);
  auto conc = checked_load({&server}, kConcurrency, n, log, "docker-api 8 in flight");
  const Stats api_conc =
      summarize("execmcp docker-api 8 in flight", conc.latencies, conc.wall_seconds);
  const double stop_s = server.shutdown();

  print_header();
  print_row(spawn_stats);
  print_row(cli);
  print_row(api);
  print_row(api_conc);
  std::printf(
      "\nfirst call, new agent (start -> first result, container create): %.1f ms "
      "(server ready after %.1f ms, first call %.1f ms)\n",
      first_ms, ready_ms, first.latencies.empty() ? 0.0 : first.latencies.front());
  std::printf("ratio p50(docker-api)/p50(docker exec CLI) = %.2fx\n",
              cli.p50 > 0 ? api.p50 / cli.p50 : 0.0);
  std::printf("server RSS with docker-api agent: idle %.1f MiB, peak %.1f MiB\n",
              static_cast<double>(idle_rss) / 1024.0,
              static_cast<double>(std::max(seq.peak_rss_kib, conc.peak_rss_kib)) / 1024.0);
  std::printf("server shutdown (container cleanup) took %.2f s\n", stop_s);
}

void usage() {
  std::puts(
      "usage: execmcp_bench [--bin PATH] [--iterations N] [--no-http] [--docker]\n"
      "                     [--config FILE --agent ID]\n"
      "                     [--image REF] [--docker-iterations N]\n"
      "  --bin PATH            execmcp binary (default: execmcp next to this program)\n"
      "  --iterations N        calls per measurement (default 500)\n"
      "  --no-http             skip the HTTP vs stdio section\n"
      "  --docker              also measure the docker-api backend against `docker exec`\n"
      "  --config FILE         docker section: use this config's agent instead of a generated one\n"
      "  --agent ID            agent id within --config (default: bench)\n"
      "  --image REF           runtime image (default execmcp/runtime:latest)\n"
      "  --docker-iterations N calls per docker measurement (default 100)");
}

Options parse(int argc, char** argv) {
  Options opt;
  opt.bin = sibling_execmcp();
  Args(usage)
      .text("--bin", opt.bin)
      .count("--iterations", opt.iterations)
      .flag("--no-http", opt.http, false)
      .flag("--docker", opt.docker)
      .value("--config",
             [&](const std::string& v) {
               opt.docker_config = v;
               opt.docker = true;
             })
      .text("--agent", opt.docker_agent)
      .text("--image", opt.docker_image)
      .count("--docker-iterations", opt.docker_iterations)
      .parse(argc, argv);
  opt.docker_iterations = std::min(opt.docker_iterations, opt.iterations);
  return opt;
}

int run(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  if (!fs::exists(opt.bin))
    throw std::runtime_error("no execmcp binary at " + opt.bin + " (--bin)");
  // The build tree keeps plugins in ../lib/execmcp/plugins beside bin/; tell the server if unset.
  const fs::path plugin_dir =
      fs::absolute(opt.bin).parent_path().parent_path() / "lib" / "execmcp" / "plugins";
  if (!getenv("EXECMCP_PLUGIN_PATH") && fs::exists(plugin_dir))
    setenv("EXECMCP_PLUGIN_PATH", plugin_dir.c_str(), 1);

  const Workspace w;
  std::printf("execmcp_bench: bin %s, %d iterations, %u cpus\n\n", opt.bin.c_str(), opt.iterations,
              std::thread::hardware_concurrency());

  bench_spawn("warm-up", {"/bin/sh", "-c", "true"}, std::min(opt.iterations, 20));
  const Stats spawn_stats =
      bench_spawn("bare posix_spawn sh -c true", {"/bin/sh", "-c", "true"}, opt.iterations);

  const ServerSection none = bench_server(
      opt, w, "no filters", w.write_config("none.yaml", "default", kLocalBackend, kNoFilters),
      "default", opt.iterations, false);
  const ServerSection filtered =
      bench_server(opt, w, "default filters",
                   w.write_config("filters.yaml", "default", kLocalBackend, kDefaultFilters),
                   "default", opt.iterations, true);

  std::printf("== local backend ==\n");
  print_header();
  print_row(spawn_stats);
  print_row(none.sequential);
  print_row(filtered.sequential);
  print_row(none.concurrent);
  print_row(filtered.concurrent);
  print_row(filtered.multi);

  print_row(none.paired_spawn);
  print_row(none.paired_server);
  print_row(filtered.paired_spawn);
  print_row(filtered.paired_server);

  auto ratio_of = [](const ServerSection& s) {
    return s.paired_spawn.p50 > 0 ? s.paired_server.p50 / s.paired_spawn.p50 : 0.0;
  };
  const double ratio = ratio_of(none);
  const double ratio_f = ratio_of(filtered);
  const double idle_mib =
      static_cast<double>(std::max(none.idle_rss_kib, filtered.idle_rss_kib)) / 1024.0;
  const double peak_mib =
      static_cast<double>(std::max(none.peak_rss_kib, filtered.peak_rss_kib)) / 1024.0;
  std::printf(
      "\nlatency ratio p50(server)/p50(bare spawn), paired: no filters %.2fx, default "
      "filters %.2fx  (target <= %.1fx: %s)\n",
      ratio, ratio_f, kTargetRatio, ratio_f <= kTargetRatio ? "met" : "NOT met");
  std::printf(
      "overhead p50(server) - p50(bare spawn), paired: no filters %.3f ms, default "
      "filters %.3f ms\n",
      none.paired_server.p50 - none.paired_spawn.p50,
      filtered.paired_server.p50 - filtered.paired_spawn.p50);
  std::printf(
      "server RSS: idle after initialize %.1f MiB, peak under load (VmHWM) %.1f MiB  "
      "(target < %.0f MiB: %s)\n",
      idle_mib, peak_mib, kTargetRssMiB, peak_mib < kTargetRssMiB ? "met" : "NOT met");
  std::printf("8 servers together under load: %.1f MiB RSS (sampled every 5 ms)\n",
              static_cast<double>(filtered.multi_peak_sum_rss_kib) / 1024.0);
  std::printf("server start -> initialized: %.1f ms\n", filtered.start_to_ready_ms);

  if (opt.http) bench_http(opt, w);
  if (opt.docker) bench_docker(opt, w, spawn_stats);
  return 0;
}

}  // namespace
}  // namespace execmcp::bench

int main(int argc, char** argv) {
  try {
    return execmcp::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "execmcp_bench: %s\n", e.what());
    return 1;
  }
}
