// execmcp_egress_bench: what `network: egress` costs (issue 20): one curl of a 1 KiB file from an
// upstream container through a docker-api agent's egress proxy against the same curl from a
// container on the upstream network itself, in one run; then the proxy's memory and its start
// (see README.md). Loads the docker-api plugin the way the host does (Boost.DLL).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_plugin.hpp"
#include "bench_util.hpp"
#include "curl_bench_options.hpp"
#include "execmcp/sdk/plugin.hpp"

namespace execmcp::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using sdk::BackendInit;
using sdk::ExecRequest;
using sdk::ExecutorBackend;

constexpr const char* kEgressImage = "execmcp/egress:latest";

using Options = CurlBenchOptions;

// The upstream: a network of its own (--internal: nothing leaves the machine), a server of a
// 1 KiB file under the name files.test, and the baseline's container beside it; all removed at
// the end.
class Upstream {
 public:
  Upstream(const Options& opt, const fs::path& root)
      : prefix_("execmcp-egressbench-" + std::to_string(::getpid())) {
    std::ofstream(root / "kib") << std::string(1024, 'x');
    ::chmod(root.c_str(), 0755);
    ::chmod((root / "kib").c_str(), 0644);
    int status = 0;
    capture("docker network create --internal --label " + prefix_ + " " + network(), &status);
    if (status != 0) throw std::runtime_error("cannot create the network " + network());
    capture("docker run -d --name " + prefix_ + "-files --label " + prefix_ + " --network " +
                network() + " --network-alias files.test -v " + root.string() +
                ":/srv:ro --read-only --cap-drop ALL " + opt.image +
                " python3 -m http.server 80 -d /srv",
            &status);
    if (status != 0) throw std::runtime_error("cannot start the upstream server");
    capture("docker run -d --name " + baseline() + " --label " + prefix_ + " --network " +
                network() + " --read-only --cap-drop ALL " + opt.image + " sleep infinity",
            &status);
    if (status != 0) throw std::runtime_error("cannot start the baseline container");
  }
  ~Upstream() {
    capture("docker rm -f " + prefix_ + "-files " + baseline());
    capture("docker network rm " + network());
  }
  Upstream(const Upstream&) = delete;
  Upstream& operator=(const Upstream&) = delete;
  [[nodiscard]] std::string network() const { return prefix_ + "-up"; }
  [[nodiscard]] std::string baseline() const { return prefix_ + "-direct"; }

 private:
  std::string prefix_;
};

BackendInit init_for(const std::string& agent, const std::string& ws, const Options& opt,
                     const std::string& upstream) {
  BackendInit init;
  init.agent_id = agent;
  init.instance_id = "b" + std::to_string(::getpid());
  init.cwd = ws;
  init.paths = {{ws, true}};
  init.settings_json = upstream.empty()
                           ? R"({"image": ")" + opt.image + R"(", "network": "none"})"
                           : R"({"image": ")" + opt.image +
                                 R"(", "network": "egress", "egress": {"allow": ["files.test"], )"
                                 R"("upstream_network": ")" +
                                 upstream + R"("}})";
  return init;
}

std::string run_in(ExecutorBackend& agent, const std::string& command) {
  ExecRequest req;
  req.command = command;
  req.timeout = std::chrono::seconds(120);
  const auto r = agent.execute(req);
  if (!r.error.empty() || r.exit_code != 0)
    throw std::runtime_error("`" + command.substr(0, 60) + "...` in the agent: " + r.error +
                             " exit " + std::to_string(r.exit_code) + " " + r.stderr_data);
  return r.stdout_data;
}

// `n` curls of the file, each printing its own total time and name lookup time in seconds.
std::string curls(int n) {
  return "for i in $(seq " + std::to_string(n) +
         "); do curl -s -f -o /dev/null -w '%{time_total} %{time_namelookup}\\n' "
         "http://files.test/kib || exit 1; done";
}

// A host shell command that runs `script` in `container` (its `$` left to the container's shell).
std::string in_container(const std::string& container, const std::string& script) {
  std::string quoted;
  for (const char c : script) {
    if (c == '$' || c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return "docker exec " + container + " sh -c \"" + quoted + "\"";
}

// One side's curls, in milliseconds: the whole curl, and the curl without its name lookup (the
// direct curl asks the engine's DNS each time; through the proxy, curl looks up nothing and
// Squid keeps the name cached).
struct Samples {
  std::vector<double> total, after_lookup;
};

void add_times(const std::string& out, Samples& s) {
  std::istringstream in(out);
  for (double total = 0, lookup = 0; in >> total >> lookup;) {
    s.total.push_back(total * 1000.0);
    s.after_lookup.push_back((total - lookup) * 1000.0);
  }
}

// The proxy's memory: its cgroup's as `docker stats` reports it, and the sum of its processes'
// resident sizes (`docker top`), in MiB.
struct Memory {
  std::string cgroup;
  double rss_mib = 0;
  int processes = 0;
  std::string names;  // the processes' commands
};

Memory proxy_memory(const std::string& proxy) {
  Memory m;
  m.cgroup = output_of("docker stats --no-stream --format '{{.MemUsage}}' " + proxy);
  // `docker top` needs a pid column; the processes are Squid and its helpers.
  std::istringstream in(capture("docker top " + proxy + " -o pid,rss,comm"));
  std::string line;
  std::getline(in, line);  // the header
  for (long pid = 0, kib = 0; in >> pid >> kib && std::getline(in, line);) {
    m.rss_mib += static_cast<double>(kib) / 1024.0;
    m.names += (m.names.empty() ? "" : ",") + line.substr(line.find_first_not_of(' '));
    ++m.processes;
  }
  return m;
}

// start() of a plain agent (network: none) and of an egress one, and from the egress start()'s
// return to its first curl through the proxy that succeeds; medians of `opt.starts`.
struct Starts {
  double plain_ms = 0, egress_ms = 0, ready_ms = 0;
};

Starts measure_starts(Plugin& plugin, const Options& opt, const std::string& ws,
                      const std::string& upstream) {
  std::vector<double> plain, egress, ready;
  for (int i = 0; i < opt.starts; ++i) {
    for (const bool with_proxy : {false, true}) {
      auto agent = plugin.create(
          init_for((with_proxy ? "benchegstart" : "benchplainstart") + std::to_string(i), ws, opt,
                   with_proxy ? upstream : ""));
      const auto t0 = Clock::now();
      const std::string error = agent->start();
      (with_proxy ? egress : plain).push_back(ms_since(t0));
      if (error.empty() && with_proxy) {
        const auto t1 = Clock::now();
        run_in(*agent,
               "for i in $(seq 400); do curl -s -f -o /dev/null http://files.test/kib && exit 0; "
               "sleep 0.02; done; exit 1");
        ready.push_back(ms_since(t1));
      }
      agent->cleanup();
      if (!error.empty()) throw std::runtime_error("start: " + error);
    }
  }
  return {median(plain), median(egress), median(ready)};
}

void usage() {
  std::puts(
      "usage: execmcp_egress_bench [--plugin PATH] [--image REF] [--samples N] [--batch N]\n"
      "                            [--starts N]\n"
      "  --plugin PATH   the docker-api plugin (default: the one built with this program)\n"
      "  --image REF     image of the agent, the upstream and the baseline (default\n"
      "                  execmcp/runtime:latest: it has curl and python3)\n"
      "  --samples N     curls per side (default 200)\n"
      "  --batch N       curls per call; the two sides alternate call by call (default 10)\n"
      "  --starts N      agents started for the start-time medians (default 3)\n"
      "Exit 77 (skip) when no Docker engine answers or an image is missing.");
}

Options parse(int argc, char** argv) {
  return parse_curl_bench_options(argc, argv, usage);
}

bool can_run(const Options& opt) {
  const char* gate = std::getenv("EXECMCP_DOCKER_TESTS");
  if (gate != nullptr && std::string(gate) == "0") {
    std::puts("execmcp_egress_bench: skipped (EXECMCP_DOCKER_TESTS=0)");
    return false;
  }
  if (spawn_quiet({"docker", "info"}) != 0 ||
      spawn_quiet({"docker", "image", "inspect", opt.image}) != 0 ||
      spawn_quiet({"docker", "image", "inspect", kEgressImage}) != 0) {
    std::printf(
        "execmcp_egress_bench: skipped: no Docker engine answers, or image %s or %s is missing "
        "(scripts/docker-engine.sh start, docker/build.sh --egress)\n",
        opt.image.c_str(), kEgressImage);
    return false;
  }
  return true;
}

void print_row(const char* name, const Percentiles& p, const Percentiles& base) {
  std::printf("| %s | %zu | %.2f | %.2f | %.2f | %.2fx | %.2fx |\n", name, p.n, p.p50, p.p90, p.max,
              base.p50 > 0 ? p.p50 / base.p50 : 0, base.p90 > 0 ? p.p90 / base.p90 : 0);
}

// The table, then the issue's goal (through the proxy <= 1.5x direct + 2 ms) for each measure.
void print_latency(const Samples& proxy, const Samples& direct) {
  std::printf(
      "\n| curl of 1 KiB | curls | p50 ms | p90 ms | max ms | p50 / direct | p90 / direct |\n"
      "|---|---|---|---|---|---|---|\n");
  const std::vector<std::pair<const char*, const std::vector<double> Samples::*>> measures = {
      {"time_total", &Samples::total}, {"time_total - time_namelookup", &Samples::after_lookup}};
  for (const auto& [label, field] : measures) {
    const Percentiles b = percentiles(direct.*field), p = percentiles(proxy.*field);
    print_row(("direct, container on the upstream network: " + std::string(label)).c_str(), b, b);
    print_row(("egress agent, through its proxy: " + std::string(label)).c_str(), p, b);
  }
  for (const auto& [label, field] : measures) {
    const Percentiles b = percentiles(direct.*field), p = percentiles(proxy.*field);
    const double limit50 = 1.5 * b.p50 + 2.0, limit90 = 1.5 * b.p90 + 2.0;
    std::printf(
        "\n%s: goal <= 1.5x direct + 2 ms: p50 %.2f <= %.2f %s; p90 %.2f <= %.2f %s; "
        "added by the proxy: p50 %+.2f ms, p90 %+.2f ms\n",
        label, p.p50, limit50, p.p50 <= limit50 ? "MET" : "NOT MET", p.p90, limit90,
        p.p90 <= limit90 ? "MET" : "NOT MET", p.p50 - b.p50, p.p90 - b.p90);
  }
}

// RSS counts the shared libraries of each process again; the cgroup's figure is what one more
// agent costs the machine.
void print_memory(const Memory& idle, const Memory& loaded) {
  std::printf(
      "\n| the proxy of one agent | cgroup memory (docker stats) | RSS sum MiB | processes |\n"
      "|---|---|---|---|\n");
  for (const auto& [when, m] :
       {std::pair{"idle, after start", &idle}, std::pair{"after the measured curls", &loaded}})
    std::printf("| %s | %s | %.1f | %d (%s) |\n", when, m->cgroup.c_str(), m->rss_mib, m->processes,
                m->names.c_str());
}

int run(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  if (!can_run(opt)) return kSkipped;
  if (opt.plugin.empty() || !fs::exists(opt.plugin))
    throw std::runtime_error("no docker-api plugin (" + opt.plugin + "): give --plugin PATH");
  Plugin plugin(opt.plugin);
  const TempDir files("execmcp-egressbench-files-");
  const TempDir ws("execmcp-egressbench-ws-");
  ::chmod(ws.root.c_str(), 0755);  // the container user reaches its workspace through it
  std::printf("execmcp_egress_bench: image %s, %u cpus, load average at the start %s\n",
              opt.image.c_str(), std::thread::hardware_concurrency(), load_average().c_str());
  std::fflush(stdout);

  Upstream upstream(opt, files.root);
  auto agent = plugin.create(init_for("benchegress", ws.root.string(), opt, upstream.network()));
  struct Cleanup {
    ExecutorBackend& agent;
    ~Cleanup() { agent.cleanup(); }
  } cleanup{*agent};
  if (const auto error = agent->start(); !error.empty())
    throw std::runtime_error("start: " + error);
  const std::string proxy = "execmcp-benchegress-b" + std::to_string(::getpid()) + "-egress";
  const Memory idle = proxy_memory(proxy);

  // Warm-up (Squid's first request, the page cache), then the two sides call by call.
  run_in(*agent,
         "for i in $(seq 200); do curl -s -f -o /dev/null http://files.test/kib && exit 0; "
         "sleep 0.05; done; exit 1");
  const std::string direct = in_container(upstream.baseline(), curls(5));
  run_in(*agent, curls(5));
  capture(direct);
  Samples through_proxy, straight;
  for (int done = 0; done < opt.samples; done += opt.batch) {
    const int n = std::min(opt.batch, opt.samples - done);
    const bool proxy_first = (done / opt.batch) % 2 == 0;
    for (const bool side : {proxy_first, !proxy_first}) {
      if (side) {
        add_times(run_in(*agent, curls(n)), through_proxy);
      } else {
        int status = 0;
        const auto out = capture(in_container(upstream.baseline(), curls(n)), &status);
        if (status != 0)
          throw std::runtime_error("the baseline's curl exited " + std::to_string(status) + ": " +
                                   out);
        add_times(out, straight);
      }
    }
  }
  const Memory loaded = proxy_memory(proxy);
  std::fprintf(stderr, "  start times\n");
  const Starts starts = measure_starts(plugin, opt, ws.root.string(), upstream.network());

  print_latency(through_proxy, straight);
  print_memory(idle, loaded);

  std::printf("\n| start, median of %d | ms |\n|---|---|\n", opt.starts);
  std::printf("| start() of an agent, network: none | %.0f |\n", starts.plain_ms);
  std::printf("| start() of an agent, network: egress (its network and proxy too) | %.0f |\n",
              starts.egress_ms);
  std::printf("| egress start() - plain start() | %.0f |\n", starts.egress_ms - starts.plain_ms);
  std::printf("| after start(): until the first curl through the proxy succeeds | %.0f |\n",
              starts.ready_ms);
  std::printf("\nload average at the end: %s\n", load_average().c_str());
  return 0;
}

}  // namespace
}  // namespace execmcp::bench

int main(int argc, char** argv) {
  return execmcp::bench::run_main("execmcp_egress_bench",
                                  [&] { return execmcp::bench::run(argc, argv); });
}
