// execmcp_per_user_bench: what a per-user agent's lifecycle costs on the real engine, in one run
// (see README.md): a new user's first call with a warm pool and without one against `docker run
// --rm IMAGE true`, a stopped user's next call against `docker start` + `docker exec true`, and a
// running user's call through the runner against `docker exec true`.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_util.hpp"
#include "http_client.hpp"
#include "server_process.hpp"

namespace execmcp::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;
using namespace std::chrono_literals;

// Exit code when no engine or image is there: ctest reads it as a skip.
constexpr int kSkipped = 77;
constexpr const char* kAgent = "py";
// An ordinary agent of the same backend beside `py` on the no-pool server: what the per-user
// layer adds to a running sandbox's call is the difference between the two.
constexpr const char* kPlainAgent = "plain";
// The servers' user sandboxes must not stop while they are sampled (only the resume server's do).
constexpr int kNeverIdle = 86400;

struct Options {
  std::string bin;
  std::string image = "execmcp/runtime:latest";
  std::string backend = "docker-api";
  int samples = 10;        // per first-call and resume row
  int steady_calls = 100;  // per steady-state row
  int idle_stop = 1;       // seconds, for the resume rows
};

// A temporary directory for the configs, logs and users' workspaces; removed at the end.
struct Workspace : TempDir {
  Workspace() : TempDir("execmcp-per-user-bench") {}
};

struct PerUserSettings {
  std::string name;  // names the config, the log, the users' tokens and the workspace root
  int users = 1;     // tokens <name>000.. and max_users
  int warm = 0;
  int idle_stop = kNeverIdle;
  bool plain_agent = false;  // also kPlainAgent, granted to every token
};

// One `execmcp serve --http` with a per-user agent `py` and one token per user (passed as `env:`).
class PerUserServer {
 public:
  PerUserServer(const Options& opt, const Workspace& w, const PerUserSettings& s) {
    const fs::path users_root = w.root / (s.name + "-users");
    fs::create_directories(users_root);
    const fs::path config = w.root / (s.name + ".yaml");
    std::ofstream out(config);
    out << "execmcp: 1\nagents:\n  - id: " << kAgent << "\n    per_user: {workspace_root: \""
        << users_root.string() << "\", max_users: " << s.users << ", warm: " << s.warm
        << ", idle_stop: " << s.idle_stop << ", idle_remove: " << kNeverIdle << "}\n"
        << "    backend: {plugin: " << opt.backend << ", settings: {image: \"" << opt.image
        << "\", memory: 256m, network: none}}\n    filters: [{plugin: sanitize}]\n";
    std::string granted = kAgent;
    if (s.plain_agent) {
      const fs::path plain = w.root / (s.name + "-plain");
      fs::create_directories(plain);
      // The container's user writes here (an ordinary agent's workspace is the operator's).
      fs::permissions(plain, fs::perms::all);
      out << "  - id: " << kPlainAgent << "\n    cwd: \"" << plain.string()
          << "\"\n    backend: {plugin: " << opt.backend << ", settings: {image: \"" << opt.image
          << "\", memory: 256m, network: none}}\n    filters: [{plugin: sanitize}]\n";
      granted += std::string(", ") + kPlainAgent;
    }
    out << "server:\n  tokens:\n";
    for (int i = 0; i < s.users; ++i) {
      char key[64];
      std::snprintf(key, sizeof key, "%s%03d", s.name.c_str(), i);
      const std::string var = "EXECMCP_PU_BENCH_" + std::string(key);
      tokens_.push_back("pu-" + random_hex(24));
      setenv(var.c_str(), tokens_.back().c_str(), 1);
      out << "    - {name: " << key << ", env: " << var << ", agents: [" << granted << "]}\n";
    }
    out.close();
    log_ = (w.root / (s.name + ".log")).string();
    process_ = std::make_unique<HttpServerProcess>(opt.bin, config.string(),
                                                   std::vector<std::string>{}, log_);
  }

  // An early exit (an exception) still gives the server time to remove its containers.
  ~PerUserServer() { process_->stop(120s); }
  PerUserServer(const PerUserServer&) = delete;
  PerUserServer& operator=(const PerUserServer&) = delete;

  [[nodiscard]] std::uint16_t port() const { return process_->port(); }
  [[nodiscard]] const std::string& token(int user) const {
    return tokens_.at(static_cast<std::size_t>(user));
  }
  [[nodiscard]] pid_t pid() const { return process_->pid(); }
  [[nodiscard]] long peak_rss_kib() const { return process_->peak_rss_kib(); }
  [[nodiscard]] const std::string& log() const { return log_; }

  // A sandbox gauge or counter of `py` from /metrics (-1 when absent).
  double metric(const std::string& name) {
    HttpConnection connection(port());
    const HttpResponse r =
        connection.get("/metrics", {{"Authorization", "Bearer " + tokens_.front()}}, 10s);
    const std::string key = name + "{agent=\"" + kAgent + "\"} ";
    const auto at = r.body.find(key);
    if (r.status != 200 || at == std::string::npos) return -1;
    return std::strtod(r.body.c_str() + at + key.size(), nullptr);
  }
  // Polls metric(name) until it is at least `value`; throws after `timeout`.
  void wait_for(const std::string& name, double value, std::chrono::seconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (metric(name) < value) {
      if (Clock::now() > deadline)
        throw std::runtime_error("server " + log_ + ": " + name + " did not reach " +
                                 std::to_string(value) + " within " +
                                 std::to_string(timeout.count()) + " s");
      std::this_thread::sleep_for(50ms);
    }
  }
  // SIGTERM: the server removes every container it made; returns seconds it took.
  double stop() {
    const auto t = Clock::now();
    if (process_->stop(120s) != 0) std::fprintf(stderr, "server %s: exit not 0\n", log_.c_str());
    return ms_since(t) / 1000;
  }

 private:
  std::vector<std::string> tokens_;
  std::string log_;
  std::unique_ptr<HttpServerProcess> process_;
};

// One user's keep-alive connection; call() times one execute_command and checks it.
class UserClient {
 public:
  UserClient(std::uint16_t port, std::string token, std::string agent = kAgent)
      : connection_(port), token_(std::move(token)), path_("/mcp/" + std::move(agent)) {}

  // Milliseconds from writing the request to reading the whole response; the result's notices
  // go to `notices` when given. Throws unless it is a success with exit code 0.
  double call(const std::string& command, std::vector<std::string>* notices = nullptr) {
    HttpHeaders headers = stateless_exec_headers();
    headers.emplace_back("Authorization", "Bearer " + token_);
    const std::string body = stateless_exec_body(++id_, command);
    const auto t = Clock::now();
    const HttpResponse r = connection_.post(path_, headers, body, 120s);
    const double ms = ms_since(t);
    const std::string rpc = rpc_of_body(r.body);
    const json parsed = json::parse(rpc, nullptr, false);
    const json* sc = parsed.is_object() && parsed.contains("result")
                         ? &parsed["result"]["structuredContent"]
                         : nullptr;
    if (r.status != 200 || !sc || !sc->is_object() || sc->value("exit_code", -1) != 0)
      throw std::runtime_error("execute_command '" + command + "': HTTP " +
                               std::to_string(r.status) + " " + rpc.substr(0, 400));
    if (notices && sc->contains("notices"))
      for (const auto& n : (*sc)["notices"]) notices->push_back(n.get<std::string>());
    return ms;
  }

 private:
  HttpConnection connection_;
  std::string token_;
  std::string path_;
  long id_ = 0;
};

// Milliseconds `argv` took; throws when it fails.
double timed(const std::vector<std::string>& argv) {
  const auto t = Clock::now();
  if (spawn_quiet(argv) != 0) {
    std::string line;
    for (const auto& a : argv) line += a + " ";
    throw std::runtime_error("failed: " + line);
  }
  return ms_since(t);
}

// A container of the bench's own (not the servers'), for the `docker start` / `docker exec`
// baselines: the same image, --init and no network as the agents' containers.
class BaselineContainer {
 public:
  explicit BaselineContainer(const std::string& image)
      : name_("execmcp-per-user-bench-" + std::to_string(::getpid())) {
    if (spawn_quiet({"docker", "run", "-d", "--init", "--network", "none", "--name", name_, image,
                     "sleep", "infinity"}) != 0)
      throw std::runtime_error("cannot start the baseline container " + name_);
  }
  ~BaselineContainer() { spawn_quiet({"docker", "rm", "-f", name_}); }
  BaselineContainer(const BaselineContainer&) = delete;
  BaselineContainer& operator=(const BaselineContainer&) = delete;
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  std::string name_;
};

struct Rows {
  std::vector<double> warm_first, cold_first, docker_run;  // (a), (b), (c)
  std::vector<double> resume, resume_start, resume_exec;   // (d): the call; docker start, exec
  std::vector<double> resume_baseline;                     // docker start + docker exec
  std::vector<double> steady, steady_exec;                 // (e): back to back, in a block each
  std::vector<double> paired, paired_plain, paired_exec;   // (e) alternated, and an ordinary agent
  std::size_t resume_notices = 0;                          // calls that said "started again"
};

void print_row(const char* name, const std::vector<double>& ms) {
  const Percentiles p = percentiles(ms);
  std::printf("  %-52s %4zu  %9.1f  %9.1f  %9.1f\n", name, p.n, p.p50, p.p90, p.max);
}

void print_ratio(const char* name, const std::vector<double>& num, const std::vector<double>& den,
                 double goal) {
  const double a = percentiles(num).p50;
  const double b = percentiles(den).p50;
  const double ratio = b > 0 ? a / b : 0;
  if (goal > 0)
    std::printf("  %-52s %7.3f   (goal <= %.2f: %s)\n", name, ratio, goal,
                ratio <= goal ? "met" : "MISSED");
  else
    std::printf("  %-52s %7.3f\n", name, ratio);
}

// (a), (b), (c) interleaved: sample i is one warm claim, one cold create, one `docker run --rm`.
void first_calls(const Options& opt, PerUserServer& pool, PerUserServer& cold, Rows& rows) {
  for (int i = 0; i < opt.samples; ++i) {
    UserClient warm_user(pool.port(), pool.token(i));
    rows.warm_first.push_back(warm_user.call("true"));
    UserClient cold_user(cold.port(), cold.token(i + 1));  // cold user 0 is the steady one
    rows.cold_first.push_back(cold_user.call("true"));
    rows.docker_run.push_back(timed({"docker", "run", "--rm", opt.image, "true"}));
  }
}

// (e): a running user's `true` through the runner, back to back (the runner's steady state, as
// execmcp_docker_bench measures it), then as many `docker exec C true`. Then the same alternated
// with `docker exec` and with an ordinary agent's call, which goes first every other time: a call
// that follows a ~55 ms pause (a docker exec) takes about 1 ms more, whichever agent it is for.
void steady_state(const Options& opt, PerUserServer& cold, const BaselineContainer& c, Rows& rows) {
  UserClient user(cold.port(), cold.token(0));
  UserClient plain(cold.port(), cold.token(0), kPlainAgent);
  for (int i = 0; i < 3; ++i) user.call("true"), plain.call("true");  // warm-up, not counted
  for (int i = 0; i < opt.steady_calls; ++i) rows.steady.push_back(user.call("true"));
  for (int i = 0; i < opt.steady_calls; ++i)
    rows.steady_exec.push_back(timed({"docker", "exec", c.name(), "true"}));
  for (int i = 0; i < opt.steady_calls; ++i) {
    if (i % 2 == 0) {
      rows.paired.push_back(user.call("true"));
      rows.paired_plain.push_back(plain.call("true"));
    } else {
      rows.paired_plain.push_back(plain.call("true"));
      rows.paired.push_back(user.call("true"));
    }
    rows.paired_exec.push_back(timed({"docker", "exec", c.name(), "true"}));
  }
}

// (d): the resume server's only user calls, waits until idle_stop stopped the sandbox, and the
// next call (timed) starts it again; alternated with `docker stop C` (not timed), then `docker
// start C` + `docker exec C true` (timed).
void resumes(const Options& opt, PerUserServer& resume, const BaselineContainer& c, Rows& rows) {
  UserClient(resume.port(), resume.token(0)).call("true");  // made; the samples resume it
  for (int i = 0; i < opt.samples; ++i) {
    resume.wait_for("execmcp_sandbox_stops_total", i + 1, std::chrono::seconds(60 + opt.idle_stop));
    // A new connection each time: an idle keep-alive one may have been closed meanwhile.
    UserClient user(resume.port(), resume.token(0));
    std::vector<std::string> notices;
    rows.resume.push_back(user.call("true", &notices));
    for (const auto& n : notices)
      if (n.find("started again") != std::string::npos) ++rows.resume_notices;
    if (spawn_quiet({"docker", "stop", c.name()}) != 0)
      throw std::runtime_error("docker stop " + c.name() + " failed");
    const double start_ms = timed({"docker", "start", c.name()});
    const double exec_ms = timed({"docker", "exec", c.name(), "true"});
    rows.resume_start.push_back(start_ms);
    rows.resume_exec.push_back(exec_ms);
    rows.resume_baseline.push_back(start_ms + exec_ms);
  }
}

void print_report(const Options& opt, const Rows& rows) {
  std::printf("\n  %-52s %4s  %9s  %9s  %9s\n", "row (ms)", "n", "p50", "p90", "max");
  print_row("(a) new user's first call, warm pool", rows.warm_first);
  print_row("(b) new user's first call, no pool", rows.cold_first);
  print_row("(c) docker run --rm IMAGE true", rows.docker_run);
  print_row("(d) stopped user's next call (resume)", rows.resume);
  print_row("    docker start C + docker exec C true", rows.resume_baseline);
  print_row("      of which docker start C", rows.resume_start);
  print_row("      of which docker exec C true", rows.resume_exec);
  print_row("(e) running user's call through the runner", rows.steady);
  print_row("    docker exec C true", rows.steady_exec);
  print_row("    alternated: the running user's call", rows.paired);
  print_row("    alternated: an ordinary agent's call", rows.paired_plain);
  print_row("    alternated: docker exec C true", rows.paired_exec);
  std::printf("\n  ratios of p50\n");
  print_ratio("(a)/(c) warm pool / docker run", rows.warm_first, rows.docker_run, 0.1);
  print_ratio("(b)/(c) no pool / docker run", rows.cold_first, rows.docker_run, 1.2);
  print_ratio("(d) resume / (docker start + docker exec)", rows.resume, rows.resume_baseline, 0);
  print_ratio("(e) runner call / docker exec", rows.steady, rows.steady_exec, 0.05);
  print_ratio("    alternated: runner call / docker exec", rows.paired, rows.paired_exec, 0);
  print_ratio("    alternated: ordinary agent / docker exec", rows.paired_plain, rows.paired_exec,
              0);
  std::printf("\n  resume calls that said \"sandbox started again\": %zu of %d\n",
              rows.resume_notices, opt.samples);
}

// The servers' own view: every sample did what its row says (claims, creates, starts).
void print_events(PerUserServer& pool, PerUserServer& cold, PerUserServer& resume) {
  std::printf(
      "  server events: pool: %.0f claims, %.0f creates; no pool: %.0f claims, %.0f creates; "
      "resume: %.0f stops, %.0f starts\n",
      pool.metric("execmcp_sandbox_claims_total"), pool.metric("execmcp_sandbox_creates_total"),
      cold.metric("execmcp_sandbox_claims_total"), cold.metric("execmcp_sandbox_creates_total"),
      resume.metric("execmcp_sandbox_stops_total"), resume.metric("execmcp_sandbox_starts_total"));
  std::printf("  server RSS peak (VmHWM): pool %.1f MiB, no pool %.1f MiB, resume %.1f MiB\n",
              static_cast<double>(pool.peak_rss_kib()) / 1024,
              static_cast<double>(cold.peak_rss_kib()) / 1024,
              static_cast<double>(resume.peak_rss_kib()) / 1024);
}

int run(const Options& opt) {
  if (std::getenv("EXECMCP_DOCKER_TESTS") &&
      std::string(std::getenv("EXECMCP_DOCKER_TESTS")) == "0")
    return std::puts("skipped: EXECMCP_DOCKER_TESTS=0"), kSkipped;
  if (spawn_quiet({"docker", "info"}) != 0 ||
      spawn_quiet({"docker", "image", "inspect", opt.image}) != 0) {
    std::printf(
        "skipped: no Docker engine or no image %s (scripts/docker-engine.sh start, "
        "docker/build.sh)\n",
        opt.image.c_str());
    return kSkipped;
  }
  if (!fs::exists(opt.bin))
    throw std::runtime_error("no execmcp binary at " + opt.bin + " (--bin)");
  // The build tree keeps plugins in ../lib/execmcp/plugins beside bin/; tell the server if unset.
  const fs::path plugin_dir =
      fs::absolute(opt.bin).parent_path().parent_path() / "lib" / "execmcp" / "plugins";
  if (!std::getenv("EXECMCP_PLUGIN_PATH") && fs::exists(plugin_dir))
    setenv("EXECMCP_PLUGIN_PATH", plugin_dir.c_str(), 1);

  std::printf(
      "execmcp_per_user_bench: bin %s, backend %s, image %s, %d samples, %d steady calls, "
      "idle_stop %d s, %u cpus, load %s\n",
      opt.bin.c_str(), opt.backend.c_str(), opt.image.c_str(), opt.samples, opt.steady_calls,
      opt.idle_stop, std::thread::hardware_concurrency(), load_average().c_str());
  std::fflush(stdout);
  const Workspace w;
  const BaselineContainer c(opt.image);
  // The pool's max_users is its warm size: a claim leaves no slot to refill, so no container is
  // made in the background while the next sample is timed.
  PerUserServer pool(opt, w, {"warm", opt.samples, opt.samples, kNeverIdle});
  PerUserServer cold(opt, w, {"cold", opt.samples + 1, 0, kNeverIdle, true});
  PerUserServer resume(opt, w, {"resume", 1, 0, opt.idle_stop});
  const auto t = Clock::now();
  pool.wait_for("execmcp_sandboxes_warm", opt.samples, std::chrono::seconds(60 + 30 * opt.samples));
  std::printf("warm pool of %d ready %.1f s after the servers started\n", opt.samples,
              ms_since(t) / 1000);
  std::fflush(stdout);
  spawn_quiet({"docker", "run", "--rm", opt.image, "true"});  // warm-up, not counted

  Rows rows;
  first_calls(opt, pool, cold, rows);
  steady_state(opt, cold, c, rows);
  resumes(opt, resume, c, rows);
  print_report(opt, rows);
  print_events(pool, cold, resume);
  const double stop_pool = pool.stop();
  const double stop_cold = cold.stop();
  const double stop_resume = resume.stop();
  std::printf(
      "  SIGTERM until exit: pool %.1f s (%d containers), no pool %.1f s (%d), resume %.1f "
      "s (1)\n",
      stop_pool, opt.samples, stop_cold, opt.samples + 1, stop_resume);
  return 0;
}

void usage() {
  std::puts(
      "usage: execmcp_per_user_bench [--bin PATH] [--samples N] [--steady-calls N]\n"
      "                              [--idle-stop S] [--image REF] [--backend "
      "docker-api|docker-cli]\n"
      "  --bin PATH          execmcp binary (default: execmcp next to this program)\n"
      "  --samples N         first calls with and without a pool, docker runs and resumes (10)\n"
      "  --steady-calls N    running user's calls and docker execs (100)\n"
      "  --idle-stop S       the resume server's idle_stop in seconds (1)\n"
      "  --image REF         the agents' and the baselines' image (execmcp/runtime:latest)\n"
      "  --backend NAME      docker-api (default) or docker-cli\n"
      "exit 77: no Docker engine or image (EXECMCP_DOCKER_TESTS=0 too)");
}

Options parse(int argc, char** argv) {
  Options opt;
  opt.bin = sibling_execmcp();
  Args(usage)
      .text("--bin", opt.bin)
      .count("--samples", opt.samples)
      .count("--steady-calls", opt.steady_calls)
      .count("--idle-stop", opt.idle_stop)
      .text("--image", opt.image)
      .text("--backend", opt.backend)
      .parse(argc, argv);
  if (opt.backend != "docker-api" && opt.backend != "docker-cli")
    throw std::invalid_argument("--backend must be docker-api or docker-cli");
  return opt;
}

}  // namespace
}  // namespace execmcp::bench

int main(int argc, char** argv) {
  return execmcp::bench::run_main("execmcp_per_user_bench", [&] {
    return execmcp::bench::run(execmcp::bench::parse(argc, argv));
  });
}
