// execmcp_docker_bench: execute_command("true") on the docker-api backend in exec_mode agent and
// exec against the `docker exec` CLI, in one run, at 1 and N calls in flight, plus the first call
// of a new agent in each mode (see README.md). Loads the plugin the way the host does (Boost.DLL).
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include "execmcp/sdk/plugin.hpp"

extern char** environ;

namespace execmcp::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using sdk::BackendInit;
using sdk::ExecRequest;
using sdk::ExecutorBackend;

// Exit code when no engine or image is there: ctest reads it as a skip.
constexpr int kSkipped = 77;

struct Options {
  std::string plugin = EXECMCP_DOCKER_API_PLUGIN;
  std::string image = "execmcp/runtime:latest";
  int calls_1 = 200;    // calls per row at 1 in flight
  int calls_n = 400;    // calls per row at `in_flight`
  int in_flight = 8;    // the issue's "8 in flight"
  int rounds = 4;       // the three ways alternate in rounds, so all see the same machine load
  int first_calls = 5;  // new agents per mode for "first call"
};

struct Stats {
  std::size_t calls = 0;
  double p50 = 0, p99 = 0;  // milliseconds
  double per_second = 0;
};

// Nearest-rank percentiles, as execmcp_bench.
Stats summarize(std::vector<double> ms, double wall_seconds) {
  Stats s;
  s.calls = ms.size();
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) {
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(ms.size())));
    return ms[std::min(ms.size() - 1, rank == 0 ? 0 : rank - 1)];
  };
  s.p50 = pct(0.50);
  s.p99 = pct(0.99);
  s.per_second = wall_seconds > 0 ? static_cast<double>(ms.size()) / wall_seconds : 0;
  return s;
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

// Runs `argv` with stdout and stderr on /dev/null; returns its exit status, or -1.
int spawn_quiet(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The first line a shell command prints ("" on failure).
std::string output_of(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  ::pclose(p);
  if (const auto nl = out.find('\n'); nl != std::string::npos) out.resize(nl);
  return out;
}

// The 1, 5 and 15 minute load averages: numbers from a busy machine are several times an idle
// one's.
std::string load_average() {
  const std::string line = output_of("cat /proc/loadavg");
  std::size_t end = 0;
  for (int fields = 0; fields < 3 && end != std::string::npos; ++fields)
    end = line.find(' ', end == 0 ? 0 : end + 1);
  return line.substr(0, end);
}

struct LogToStderr : sdk::LogSink {
  void log(sdk::LogLevel level, std::string_view message) noexcept override {
    if (level < sdk::LogLevel::Warn) return;  // warnings and errors only
    std::fprintf(stderr, "  [plugin] %.*s\n", static_cast<int>(message.size()), message.data());
  }
};

class Plugin {
 public:
  explicit Plugin(const std::string& path)
      : lib_(path, boost::dll::load_mode::rtld_now),
        factory_(lib_.get_alias<sdk::BackendFactory>(sdk::kBackendFactorySymbol)) {}

  // Throws with the plugin's message when it refuses the settings.
  std::unique_ptr<ExecutorBackend> create(BackendInit init) {
    init.log = &log_;
    std::string error;
    std::unique_ptr<ExecutorBackend> backend(factory_(init, error));
    if (!backend) throw std::runtime_error("the plugin refused the backend: " + error);
    return backend;
  }

 private:
  boost::dll::shared_library lib_;
  sdk::BackendFactory& factory_;
  LogToStderr log_;
};

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

// One of the three ways to run `true` in a container.
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

Way backend_way(const std::string& name, ExecutorBackend& backend, NoticeCount& notices) {
  return {name, [&backend, &notices] {
            ExecRequest req;
            req.command = "true";
            req.timeout = std::chrono::seconds(60);
            const auto r = backend.execute(req);
            if (!r.error.empty()) throw std::runtime_error(r.error);
            if (r.exit_code != 0)
              throw std::runtime_error("exit code " + std::to_string(r.exit_code) + ": " +
                                       r.stderr_data.substr(0, 200));
            ++notices.results;
            if (!r.notices.empty()) {
              ++notices.with_notice;
              const std::lock_guard lock(notices.mu);
              if (notices.first.empty()) notices.first = r.notices.front();
            }
          }};
}

BackendInit init_for(const std::string& agent, const std::string& ws, const std::string& image,
                     const std::string& mode) {
  BackendInit init;
  init.agent_id = agent;
  init.instance_id = "b" + std::to_string(::getpid());
  init.cwd = ws;
  init.paths = {{ws, true}};
  init.log_dir = ws + "/.logs";
  init.settings_json = R"({"image": ")" + image + R"(", "exec_mode": ")" + mode + "\"}";
  return init;
}

void print_row(const std::string& name, const Stats& s) {
  std::printf("%-36s %6zu %9.2f %9.2f %9.1f\n", name.c_str(), s.calls, s.p50, s.p99, s.per_second);
}

void print_ratio(const std::string& name, const Stats& a, const Stats& cli) {
  auto r = [](double x, double y) { return y > 0 ? x / y : 0.0; };
  std::printf("%-36s %6s %8.3fx %8.3fx %8.3fx\n", name.c_str(), "", r(a.p50, cli.p50),
              r(a.p99, cli.p99), r(a.per_second, cli.per_second));
}

// Construct + start() + the first execute("true") of a brand-new agent (its container created),
// `n` times per mode; cleanup (container removal) is not timed.
struct FirstCall {
  double total_ms = 0, start_ms = 0, execute_ms = 0;  // medians
};

FirstCall first_call(Plugin& plugin, const Options& opt, const std::string& mode,
                     const std::string& ws) {
  std::vector<double> total, start, execute;
  for (int i = 0; i < opt.first_calls; ++i) {
    const auto t0 = Clock::now();
    auto backend =
        plugin.create(init_for("benchfirst" + mode + std::to_string(i), ws, opt.image, mode));
    const std::string error = backend->start();
    const double start_ms = ms_since(t0);
    if (!error.empty()) {
      backend->cleanup();
      throw std::runtime_error("first call (" + mode + "): start: " + error);
    }
    const auto t1 = Clock::now();
    ExecRequest req;
    req.command = "true";
    const auto r = backend->execute(req);
    const double execute_ms = ms_since(t1);
    const double total_ms = ms_since(t0);
    backend->cleanup();
    if (!r.error.empty() || r.exit_code != 0)
      throw std::runtime_error("first call (" + mode + "): " + r.error + " exit " +
                               std::to_string(r.exit_code));
    total.push_back(total_ms);
    start.push_back(start_ms);
    execute.push_back(execute_ms);
  }
  return {median(total), median(start), median(execute)};
}

void usage() {
  std::puts(
      "usage: execmcp_docker_bench [--plugin PATH] [--image REF] [--calls-1 N] [--calls-n N]\n"
      "                            [--in-flight N] [--rounds N] [--first-calls N]\n"
      "  --plugin PATH      the docker-api plugin (default: the one built with this program)\n"
      "  --image REF        image of the agents' containers (default execmcp/runtime:latest)\n"
      "  --calls-1 N        calls per row at 1 in flight (default 200)\n"
      "  --calls-n N        calls per row at --in-flight (default 400)\n"
      "  --in-flight N      calls kept open in the concurrent rows (default 8)\n"
      "  --rounds N         CLI, exec and agent alternate in N rounds per load (default 4)\n"
      "  --first-calls N    new agents per mode for the first-call median (default 5)\n"
      "Exit 77 (skip) when no Docker engine answers or the image is missing.");
}

Options parse(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    auto count = [&]() {
      const int n = std::stoi(value());
      if (n < 1) throw std::invalid_argument(a + " must be >= 1");
      return n;
    };
    if (a == "--plugin") {
      opt.plugin = value();
    } else if (a == "--image") {
      opt.image = value();
    } else if (a == "--calls-1") {
      opt.calls_1 = count();
    } else if (a == "--calls-n") {
      opt.calls_n = count();
    } else if (a == "--in-flight") {
      opt.in_flight = count();
    } else if (a == "--rounds") {
      opt.rounds = count();
    } else if (a == "--first-calls") {
      opt.first_calls = count();
    } else if (a == "-h" || a == "--help") {
      usage();
      std::exit(0);
    } else {
      throw std::invalid_argument("unknown option " + a);
    }
  }
  return opt;
}

int run(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  const char* gate = std::getenv("EXECMCP_DOCKER_TESTS");
  if (gate != nullptr && std::string(gate) == "0") {
    std::puts("execmcp_docker_bench: skipped (EXECMCP_DOCKER_TESTS=0)");
    return kSkipped;
  }
  if (spawn_quiet({"docker", "info"}) != 0 ||
      spawn_quiet({"docker", "image", "inspect", opt.image}) != 0) {
    std::printf(
        "execmcp_docker_bench: skipped: no Docker engine answers or image %s is missing "
        "(scripts/docker-engine.sh start, docker/build.sh)\n",
        opt.image.c_str());
    return kSkipped;
  }

  Plugin plugin(opt.plugin);
  const TempDir ws;
  std::printf("execmcp_docker_bench: image %s, %u cpus, load average %s, plugin %s\n",
              opt.image.c_str(), std::thread::hardware_concurrency(), load_average().c_str(),
              opt.plugin.c_str());
  std::fflush(stdout);

  auto agent = plugin.create(init_for("benchagent", ws.path(), opt.image, "agent"));
  auto exec = plugin.create(init_for("benchexec", ws.path(), opt.image, "exec"));
  // Containers go even when a load fails half-way.
  struct Cleanup {
    ExecutorBackend& a;
    ExecutorBackend& b;
    ~Cleanup() {
      a.cleanup();
      b.cleanup();
    }
  } cleanup{*agent, *exec};
  for (auto* b : {agent.get(), exec.get()})
    if (const std::string error = b->start(); !error.empty())
      throw std::runtime_error("start: " + error);

  // The CLI runs in the exec backend's own container: same image, limits and user.
  const std::string ctr = output_of(
      "docker ps -q --filter label=execmcp.agent=benchexec "
      "--filter label=execmcp.instance=b" +
      std::to_string(::getpid()));
  if (ctr.empty()) throw std::runtime_error("cannot find the exec backend's container");

  NoticeCount agent_notices, exec_notices;
  const std::vector<Way> ways = {
      {"docker exec CLI",
       [&ctr] {
         const int rc = spawn_quiet({"docker", "exec", ctr, "true"});
         if (rc != 0) throw std::runtime_error("docker exec exited " + std::to_string(rc));
       }},
      backend_way("docker-api exec", *exec, exec_notices),
      backend_way("docker-api agent", *agent, agent_notices),
  };

  // Warm-up: connections, page cache, the agent's first start.
  for (const auto& w : ways) {
    std::vector<double> ignored;
    double ignored_wall = 0;
    drive(w, 1, 5, ignored, ignored_wall);
  }

  struct Row {
    std::vector<double> latencies;
    double wall = 0;
  };
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
  const FirstCall first_exec = first_call(plugin, opt, "exec", ws.path());
  const FirstCall first_agent = first_call(plugin, opt, "agent", ws.path());

  std::printf("\n%-36s %6s %9s %9s %9s\n", "execute(\"true\")", "calls", "p50 ms", "p99 ms",
              "calls/s");
  std::vector<std::vector<Stats>> stats(loads.size());
  for (std::size_t l = 0; l < loads.size(); ++l) {
    for (std::size_t w = 0; w < ways.size(); ++w) {
      stats[l].push_back(summarize(rows[l][w].latencies, rows[l][w].wall));
      print_row(ways[w].name + ", " + std::to_string(loads[l]) + " in flight", stats[l][w]);
    }
  }
  std::printf("\n%-36s %6s %9s %9s %9s\n", "ratio to the CLI", "", "p50", "p99", "calls/s");
  for (std::size_t l = 0; l < loads.size(); ++l) {
    const std::string at = ", " + std::to_string(loads[l]) + " in flight";
    print_ratio("agent/CLI" + at, stats[l][2], stats[l][0]);
    print_ratio("exec/CLI" + at, stats[l][1], stats[l][0]);
  }
  std::printf("(issue 9's target: agent/CLI p50 <= 0.1x)\n");

  std::printf("\nfirst call of a new agent (construct + start() + first execute), median of %d:\n",
              opt.first_calls);
  for (const auto& [mode, f] : {std::pair{"agent", first_agent}, std::pair{"exec", first_exec}})
    std::printf("  %-6s %8.1f ms  (start() %.1f ms, first execute %.1f ms)\n", mode, f.total_ms,
                f.start_ms, f.execute_ms);

  std::printf("\nload average at the end: %s\n", load_average().c_str());
  std::printf("results with a notice: agent %d of %d, exec %d of %d\n",
              agent_notices.with_notice.load(), agent_notices.results.load(),
              exec_notices.with_notice.load(), exec_notices.results.load());
  if (!agent_notices.first.empty())
    std::printf("  first agent-mode notice: %s\n", agent_notices.first.c_str());
  return 0;
}

}  // namespace
}  // namespace execmcp::bench

int main(int argc, char** argv) {
  try {
    return execmcp::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "execmcp_docker_bench: %s\n", e.what());
    return 1;
  }
}
