// execmcp_docker_bench: execute_command("true") on every executor backend side by side (local,
// docker-api and docker-cli, each Docker one in exec_mode agent and exec) against the `docker exec`
// CLI, in one run, at 1 and N calls in flight, plus the first call of a new agent per backend (see
// README.md), and the file tools (docker_files_bench.hpp). Loads the plugins the way the host does
// (Boost.DLL).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_plugin.hpp"
#include "bench_util.hpp"
#include "docker_files_bench.hpp"
#include "execmcp/sdk/plugin.hpp"

namespace execmcp::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using sdk::BackendInit;
using sdk::ExecRequest;
using sdk::ExecutorBackend;

// The other plugins built with this program (docker-api's is in bench_plugin.hpp); the docker-cli
// one only when its target exists.
#ifdef EXECMCP_LOCAL_PLUGIN
constexpr const char* kLocalPlugin = EXECMCP_LOCAL_PLUGIN;
#else
constexpr const char* kLocalPlugin = "";
#endif
#ifdef EXECMCP_DOCKER_CLI_PLUGIN
constexpr const char* kDockerCliPlugin = EXECMCP_DOCKER_CLI_PLUGIN;
#else
constexpr const char* kDockerCliPlugin = "";
#endif

// A backend the bench can measure: one plugin in one exec_mode ("" for local).
struct BackendKind {
  std::string key;     // its name in --backends
  std::string label;   // its name in the table
  std::string plugin;  // "local", "docker-api" or "docker-cli"
  std::string mode;    // "agent", "exec" or "" (local has no exec_mode)
};

// Table order; the baseline (`docker exec`, key "docker-exec") is not a backend and comes first.
const std::vector<BackendKind>& all_backends() {
  static const std::vector<BackendKind> kinds = {
      {"local", "local", "local", ""},
      {"api-agent", "docker-api agent", "docker-api", "agent"},
      {"api-exec", "docker-api exec", "docker-api", "exec"},
      {"cli-agent", "docker-cli agent", "docker-cli", "agent"},
      {"cli-exec", "docker-cli exec", "docker-cli", "exec"},
  };
  return kinds;
}

constexpr const char* kBaselineKey = "docker-exec";

struct Options {
  std::map<std::string, std::string> plugins;  // plugin name -> file ("" when not built)
  std::string plugin_dir;                      // --plugin-dir: where unset plugins are looked up
  std::set<std::string> backends;              // keys of all_backends() and kBaselineKey
  std::string image = "execmcp/runtime:latest";
  int calls_1 = 200;     // calls per row at 1 in flight
  int calls_n = 400;     // calls per row at `in_flight`
  int in_flight = 8;     // the issue's "8 in flight"
  int rounds = 4;        // the ways alternate in rounds, so all see the same machine load
  int first_calls = 5;   // new agents per backend for "first call"
  int file_calls = 200;  // calls per file-tools row (0: none)
  bool only_files = false;
};

struct Stats {
  std::size_t calls = 0;
  double p50 = 0, p99 = 0;  // milliseconds
  double per_second = 0;
};

// Nearest-rank percentiles, as execmcp_bench.
Stats summarize(std::vector<double> ms, double wall_seconds) {
  Stats s;
  const Percentiles p = percentiles(ms);
  s.calls = p.n;
  s.p50 = p.p50;
  s.p99 = p.p99;
  s.per_second = wall_seconds > 0 && p.n > 0 ? static_cast<double>(p.n) / wall_seconds : 0;
  return s;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "execmcp-docker-bench-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    ::chmod(tmpl.c_str(), 0755);  // the container user reaches its workspace through it
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// One way to run `true`: a backend, or the `docker exec` CLI.
struct Way {
  std::string name;
  std::function<void()> call;  // throws when the call did not succeed
};

// Calls `way` `calls` times with `in_flight` threads each making the next call as soon as its last
// one returns. Appends the latencies and adds the wall time.
void drive(const Way& way, int in_flight, int calls, std::vector<double>& latencies,
           double& wall_seconds) {
  std::atomic<int> next{0};
  std::mutex mu;
  std::string failure;
  std::vector<std::vector<double>> per_thread(static_cast<std::size_t>(in_flight));
  const auto wall = Clock::now();
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < in_flight; ++t) {
      threads.emplace_back([&, t] {
        while (next.fetch_add(1) < calls) {
          const auto start = Clock::now();
          try {
            way.call();
          } catch (const std::exception& e) {
            const std::lock_guard lock(mu);
            if (failure.empty()) failure = e.what();
            next = calls;  // the others stop too
            return;
          }
          per_thread[static_cast<std::size_t>(t)].push_back(ms_since(start));
        }
      });
    }
  }
  wall_seconds += std::chrono::duration<double>(Clock::now() - wall).count();
  if (!failure.empty()) throw std::runtime_error(way.name + ": " + failure);
  for (const auto& v : per_thread) latencies.insert(latencies.end(), v.begin(), v.end());
}

// Counts the results that carry a notice (agent mode's fallback to exec says so in one).
struct NoticeCount {
  std::atomic<int> results{0};
  std::atomic<int> with_notice{0};
  std::mutex mu;
  std::string first;
};

// Throws unless the result is a command that ran and exited 0.
void check_result(const sdk::ExecResult& r) {
  if (!r.error.empty()) throw std::runtime_error(r.error);
  if (r.exit_code != 0)
    throw std::runtime_error("exit code " + std::to_string(r.exit_code) + ": " +
                             r.stderr_data.substr(0, 200));
}

Way backend_way(const std::string& name, ExecutorBackend& backend, NoticeCount& notices) {
  return {name, [&backend, &notices] {
            ExecRequest req;
            req.command = "true";
            req.timeout = std::chrono::seconds(60);
            const auto r = backend.execute(req);
            check_result(r);
            ++notices.results;
            if (!r.notices.empty()) {
              ++notices.with_notice;
              const std::lock_guard lock(notices.mu);
              if (notices.first.empty()) notices.first = r.notices.front();
            }
          }};
}

// The container label value that tells this process's agents from other servers' ones.
std::string instance_id() {
  return "b" + std::to_string(::getpid());
}

// An agent id is a name: letters and digits only ("api-agent" -> "apiagent").
std::string agent_id(const std::string& prefix, const BackendKind& kind) {
  std::string id = prefix;
  for (const char c : kind.key)
    if (c != '-') id += c;
  return id;
}

BackendInit init_for(const std::string& agent, const std::string& ws, const Options& opt,
                     const BackendKind& kind) {
  BackendInit init;
  init.agent_id = agent;
  init.instance_id = instance_id();
  init.cwd = ws;
  init.paths = {{ws, true}};
  init.log_dir = ws + "/.logs";
  // local: its defaults (/bin/sh, no prefix, no venv in the empty workspace); Docker: both plugins
  // read the same settings, and docker-cli's own (docker_binary, ...) keep their defaults.
  init.settings_json = kind.plugin == "local" ? std::string("{}")
                                              : R"({"image": ")" + opt.image +
                                                    R"(", "exec_mode": ")" + kind.mode + "\"}";
  return init;
}

// Construct + start() + the first execute("true") of a brand-new agent (for Docker, its container
// created), `n` times per backend; cleanup (container removal) is not timed.
struct FirstCall {
  double total_ms = 0, start_ms = 0, execute_ms = 0;  // medians
};

FirstCall first_call(Plugin& plugin, const Options& opt, const BackendKind& kind,
                     const std::string& ws) {
  std::vector<double> total, start, execute;
  for (int i = 0; i < opt.first_calls; ++i) {
    const auto t0 = Clock::now();
    auto backend =
        plugin.create(init_for(agent_id("benchfirst", kind) + std::to_string(i), ws, opt, kind));
    const std::string error = backend->start();
    const double start_ms = ms_since(t0);
    if (!error.empty()) {
      backend->cleanup();
      throw std::runtime_error("first call (" + kind.label + "): start: " + error);
    }
    const auto t1 = Clock::now();
    ExecRequest req;
    req.command = "true";
    req.timeout = std::chrono::seconds(60);
    const auto r = backend->execute(req);
    const double execute_ms = ms_since(t1);
    const double total_ms = ms_since(t0);
    backend->cleanup();
    try {
      check_result(r);
    } catch (const std::exception& e) {
      throw std::runtime_error("first call (" + kind.label + "): " + e.what());
    }
    total.push_back(total_ms);
    start.push_back(start_ms);
    execute.push_back(execute_ms);
  }
  return {median(total), median(start), median(execute)};
}

std::string ratio(double x, double baseline, const char* format) {
  if (baseline <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, x / baseline);
  return buf;
}

void usage() {
  std::puts(
      "usage: execmcp_docker_bench [--backends LIST] [--plugin-dir DIR] [--local-plugin PATH]\n"
      "                            [--api-plugin PATH] [--cli-plugin PATH] [--image REF]\n"
      "                            [--calls-1 N] [--calls-n N] [--in-flight N] [--rounds N]\n"
      "                            [--first-calls N] [--file-calls N] [--only-files]\n"
      "  --backends LIST    comma-separated subset of: local, api-agent, api-exec, cli-agent,\n"
      "                     cli-exec, docker-exec (the baseline); docker-api and docker-cli mean\n"
      "                     both modes; default all\n"
      "  --plugin-dir DIR   load execmcp_local.so, execmcp_docker_api.so, execmcp_docker_cli.so\n"
      "                     from DIR (default: the plugins built with this program)\n"
      "  --local-plugin PATH, --api-plugin PATH (or --plugin PATH), --cli-plugin PATH\n"
      "                     one plugin's file, over --plugin-dir\n"
      "  --image REF        image of the agents' containers (default execmcp/runtime:latest)\n"
      "  --calls-1 N        calls per row at 1 in flight (default 200)\n"
      "  --calls-n N        calls per row at --in-flight (default 400)\n"
      "  --in-flight N      calls kept open in the concurrent rows (default 8)\n"
      "  --rounds N         the backends alternate in N rounds per load (default 4)\n"
      "  --first-calls N    new agents per backend for the first-call median (default 5)\n"
      "  --file-calls N     calls per file-tools row: read_file and write_file of 1 KiB and\n"
      "                     1 MiB, and execute(\"true\") beside them (default 200; 0: none)\n"
      "  --only-files       only the file-tools rows\n"
      "Exit 77 (skip) when a Docker backend is chosen and no Docker engine answers or the image\n"
      "is missing. A plugin that was not built is left out with a line saying so.");
}

std::set<std::string> parse_backends(const std::string& list) {
  std::set<std::string> out;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const std::size_t comma = std::min(list.find(',', pos), list.size());
    const std::string item = list.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) continue;
    bool known = false;
    for (const auto& k : all_backends()) {
      if (item == "all" || item == k.key || item == k.plugin) {
        out.insert(k.key);
        known = true;
      }
    }
    if (item == "all" || item == kBaselineKey) {
      out.insert(kBaselineKey);
      known = true;
    }
    if (!known) throw std::invalid_argument("--backends: unknown backend '" + item + "'");
  }
  if (out.empty()) throw std::invalid_argument("--backends: the list is empty");
  return out;
}

Options parse(int argc, char** argv) {
  Options opt;
  opt.backends = parse_backends("all");
  std::map<std::string, std::string> explicit_plugins;
  auto plugin = [&](const char* name) {
    return [&explicit_plugins, name](const std::string& v) { explicit_plugins[name] = v; };
  };
  Args(usage)
      .value("--plugin", plugin("docker-api"))
      .value("--api-plugin", plugin("docker-api"))
      .value("--cli-plugin", plugin("docker-cli"))
      .value("--local-plugin", plugin("local"))
      .text("--plugin-dir", opt.plugin_dir)
      .value("--backends", [&](const std::string& v) { opt.backends = parse_backends(v); })
      .text("--image", opt.image)
      .count("--calls-1", opt.calls_1)
      .count("--calls-n", opt.calls_n)
      .count("--in-flight", opt.in_flight)
      .count("--rounds", opt.rounds)
      .count("--first-calls", opt.first_calls)
      .count("--file-calls", opt.file_calls, 0)
      .flag("--only-files", opt.only_files)
      .parse(argc, argv);
  // An explicit file wins over --plugin-dir, which wins over the files built with the program.
  const std::map<std::string, std::pair<std::string, std::string>> built = {
      {"local", {kLocalPlugin, "execmcp_local.so"}},
      {"docker-api", {kDockerApiPlugin, "execmcp_docker_api.so"}},
      {"docker-cli", {kDockerCliPlugin, "execmcp_docker_cli.so"}},
  };
  for (const auto& [name, where] : built) {
    if (const auto it = explicit_plugins.find(name); it != explicit_plugins.end())
      opt.plugins[name] = it->second;
    else if (!opt.plugin_dir.empty())
      opt.plugins[name] = (fs::path(opt.plugin_dir) / where.second).string();
    else
      opt.plugins[name] = where.first;
  }
  return opt;
}

// One measured backend: its kind, its long-lived agent and the notices its results carried.
struct Measured {
  const BackendKind* kind = nullptr;
  std::unique_ptr<ExecutorBackend> backend;
  std::unique_ptr<NoticeCount> notices = std::make_unique<NoticeCount>();
};

// Leaves out what cannot be measured here (a plugin not built, no engine, no image); false when
// nothing is left, or the Docker tests are switched off, and the bench is skipped.
bool choose_backends(Options& opt) {
  // Leave out the backends whose plugin was not built (docker-cli may not exist yet).
  std::set<std::string> not_built;
  for (const auto& k : all_backends()) {
    if (opt.backends.count(k.key) == 0) continue;
    const std::string& file = opt.plugins[k.plugin];
    if (file.empty() || !fs::exists(file)) {
      if (not_built.insert(k.plugin).second)
        std::printf("%s: not built%s, its rows are left out\n", k.plugin.c_str(),
                    file.empty() ? "" : (" (no " + file + ")").c_str());
      opt.backends.erase(k.key);
    }
  }
  bool any_docker = false;
  for (const auto& k : all_backends())
    if (opt.backends.count(k.key) != 0 && k.plugin != "local") any_docker = true;
  if (opt.backends.count(kBaselineKey) != 0 && !any_docker) {
    std::puts("docker exec: runs in a Docker backend's container; none is chosen, left out");
    opt.backends.erase(kBaselineKey);
  }
  if (opt.backends.empty()) {
    std::puts("execmcp_docker_bench: skipped: nothing left to measure");
    return false;
  }

  if (any_docker) {
    const char* gate = std::getenv("EXECMCP_DOCKER_TESTS");
    if (gate != nullptr && std::string(gate) == "0") {
      std::puts("execmcp_docker_bench: skipped (EXECMCP_DOCKER_TESTS=0)");
      return false;
    }
    if (spawn_quiet({"docker", "info"}) != 0 ||
        spawn_quiet({"docker", "image", "inspect", opt.image}) != 0) {
      std::printf(
          "execmcp_docker_bench: skipped: no Docker engine answers or image %s is missing "
          "(scripts/docker-engine.sh start, docker/build.sh)\n",
          opt.image.c_str());
      return false;
    }
  }

  return true;
}

// One way's calls at one load.
struct Row {
  std::vector<double> latencies;
  double wall = 0;
};

// Markdown tables: they read in a terminal and go into README.md as they are.
void print_results(const Options& opt, const std::vector<Way>& ways, const std::vector<int>& loads,
                   const std::vector<std::vector<Row>>& rows, bool baseline,
                   const std::vector<std::pair<const BackendKind*, FirstCall>>& firsts,
                   const std::vector<Measured>& measured, const std::string& load_at_end) {
  std::printf(
      "\n| execute(\"true\") | in flight | calls | p50 ms | p99 ms | calls/s | p50 / docker exec "
      "| calls/s / docker exec |\n|---|---|---|---|---|---|---|---|\n");
  for (std::size_t l = 0; l < loads.size(); ++l) {
    const Stats base = baseline ? summarize(rows[l][0].latencies, rows[l][0].wall) : Stats{};
    for (std::size_t w = 0; w < ways.size(); ++w) {
      const Stats s = summarize(rows[l][w].latencies, rows[l][w].wall);
      std::printf("| %s | %d | %zu | %.2f | %.2f | %.1f | %s | %s |\n", ways[w].name.c_str(),
                  loads[l], s.calls, s.p50, s.p99, s.per_second,
                  ratio(s.p50, base.p50, "%.3fx").c_str(),
                  ratio(s.per_second, base.per_second, "%.2fx").c_str());
    }
  }
  if (baseline && opt.backends.count("api-agent") != 0)
    std::printf("\n(issue 9's target: docker-api agent p50 / docker exec <= 0.1x)\n");

  std::printf(
      "\nFirst call of a new agent (construct + start() + first execute), median of %d:\n\n",
      opt.first_calls);
  std::printf("| backend | total ms | start() ms | first execute ms |\n|---|---|---|---|\n");
  for (const auto& [kind, f] : firsts)
    std::printf("| %s | %.1f | %.1f | %.1f |\n", kind->label.c_str(), f.total_ms, f.start_ms,
                f.execute_ms);

  std::printf("\nload average at the end: %s\n", load_at_end.c_str());
  std::printf("results with a notice:");
  for (const auto& m : measured)
    std::printf(" %s %d of %d;", m.kind->label.c_str(), m.notices->with_notice.load(),
                m.notices->results.load());
  std::printf("\n");
  for (const auto& m : measured)
    if (!m.notices->first.empty())
      std::printf("  first notice of %s: %s\n", m.kind->label.c_str(), m.notices->first.c_str());
}

int run(int argc, char** argv) {
  Options opt = parse(argc, argv);
  if (!choose_backends(opt)) return kSkipped;

  // Plugins outlive every backend they made (declared first, destroyed last).
  std::map<std::string, std::unique_ptr<Plugin>> plugins;
  for (const auto& k : all_backends())
    if (opt.backends.count(k.key) != 0 && plugins.count(k.plugin) == 0)
      plugins[k.plugin] = std::make_unique<Plugin>(opt.plugins[k.plugin]);

  const TempDir ws;
  std::printf("execmcp_docker_bench: image %s, %u cpus, load average at the start %s\n",
              opt.image.c_str(), std::thread::hardware_concurrency(), load_average().c_str());
  for (const auto& [name, plugin] : plugins)
    std::printf("  %s plugin: %s\n", name.c_str(), opt.plugins[name].c_str());
  std::fflush(stdout);

  std::vector<Measured> measured;
  // Containers go even when a start or a load fails half-way.
  struct Cleanup {
    std::vector<Measured>& m;
    ~Cleanup() {
      for (auto& x : m)
        if (x.backend) x.backend->cleanup();
    }
  } cleanup{measured};
  for (const auto& k : all_backends()) {
    if (opt.backends.count(k.key) == 0) continue;
    Measured m;
    m.kind = &k;
    m.backend = plugins[k.plugin]->create(init_for(agent_id("bench", k), ws.path(), opt, k));
    measured.push_back(std::move(m));
    if (const std::string error = measured.back().backend->start(); !error.empty())
      throw std::runtime_error(k.label + ": start: " + error);
  }

  std::vector<FileBenchBackend> file_backends;
  for (auto& m : measured) file_backends.push_back({m.kind->label, m.kind->key, m.backend.get()});
  if (opt.only_files) {
    measure_file_tools(file_backends, ws.path(), std::max(opt.file_calls, 1), opt.rounds);
    return 0;
  }

  std::vector<Way> ways;
  for (auto& m : measured) ways.push_back(backend_way(m.kind->label, *m.backend, *m.notices));
  std::string ctr;
  if (opt.backends.count(kBaselineKey) != 0) {
    // The CLI runs in a Docker backend's own container (same image, limits and user), an exec
    // mode one when there is one: agent mode's runner is idle there, but exec mode has none.
    const BackendKind* host = nullptr;
    for (const auto& m : measured)
      if (m.kind->plugin != "local" &&
          (host == nullptr || (host->mode != "exec" && m.kind->mode == "exec")))
        host = m.kind;
    ctr = output_of("docker ps -q --filter label=execmcp.agent=" + agent_id("bench", *host) +
                    " --filter label=execmcp.instance=" + instance_id());
    if (ctr.empty()) throw std::runtime_error("cannot find the container of " + host->label);
    std::printf("  docker exec runs in the container of %s (%s)\n", host->label.c_str(),
                ctr.c_str());
    ways.insert(ways.begin(),
                Way{"docker exec CLI", [&ctr] {
                      const int rc = spawn_quiet({"docker", "exec", ctr, "true"});
                      if (rc != 0)
                        throw std::runtime_error("docker exec exited " + std::to_string(rc));
                    }});
  }

  // Warm-up: connections, page cache, the agent's first start.
  for (const auto& w : ways) {
    std::vector<double> ignored;
    double ignored_wall = 0;
    drive(w, 1, 5, ignored, ignored_wall);
  }

  const std::vector<int> loads = {1, opt.in_flight};
  std::vector<std::vector<Row>> rows(loads.size(), std::vector<Row>(ways.size()));
  for (std::size_t l = 0; l < loads.size(); ++l) {
    const int total = l == 0 ? opt.calls_1 : opt.calls_n;
    for (int round = 0; round < opt.rounds; ++round) {
      const int calls = total / opt.rounds + (round < total % opt.rounds ? 1 : 0);
      // The order rotates each round, so no way always runs first (or right after another).
      std::fprintf(stderr, "  %d in flight, round %d of %d\n", loads[l], round + 1, opt.rounds);
      for (std::size_t k = 0; k < ways.size(); ++k) {
        const std::size_t w = (k + static_cast<std::size_t>(round)) % ways.size();
        drive(ways[w], loads[l], calls, rows[l][w].latencies, rows[l][w].wall);
      }
    }
  }

  std::fprintf(stderr, "  first calls of new agents\n");
  std::vector<std::pair<const BackendKind*, FirstCall>> firsts;
  for (const auto& m : measured)
    firsts.emplace_back(m.kind, first_call(*plugins[m.kind->plugin], opt, *m.kind, ws.path()));
  const std::string load_at_end = load_average();

  print_results(opt, ways, loads, rows, !ctr.empty(), firsts, measured, load_at_end);
  if (opt.file_calls > 0) measure_file_tools(file_backends, ws.path(), opt.file_calls, opt.rounds);
  return 0;
}

}  // namespace
}  // namespace execmcp::bench

int main(int argc, char** argv) {
  return execmcp::bench::run_main("execmcp_docker_bench",
                                  [&] { return execmcp::bench::run(argc, argv); });
}
