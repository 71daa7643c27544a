// execmcp_runtime_bench: what gVisor costs (issue 21): the docker-api backend with `runtime: runsc`
// against `runtime: runc` on the same engine, in one run, for each exec_mode (and the plain docker
// CLI as a baseline): a new container until its first `true`, the round trip of `true`, a 100 MB
// output drain and a small Python workload that writes 1,000 files (see README.md).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_plugin.hpp"
#include "bench_util.hpp"
#include "execmcp/sdk/plugin.hpp"

namespace execmcp::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kBaselineRuntime = "runc";  // what the ratios divide by
constexpr const char* kCliMode = "cli";           // the docker CLI's row, not a backend's
constexpr auto kCallTimeout = std::chrono::seconds(300);

struct Options {
  std::string plugin = kDockerApiPlugin;
  std::string image = "execmcp/runtime:latest";
  std::vector<std::string> runtimes = {"runc", "runsc"};
  std::vector<std::string> modes = {"agent", "exec", kCliMode};
  int samples = 10;    // new containers, drains and Python runs per row
  int calls = 200;     // round trips of `true` per row on its warm sandbox
  int rounds = 4;      // the rows take turns at the round trips in this many rounds
  int drain_mb = 100;  // the drain's size in MB (10^6 bytes)
  int files = 1000;    // files the Python workload writes
};

// What is measured, in the order of the table.
enum Measure : std::size_t {
  kStart,
  kReady,
  kTrue,
  kDrainWhole,
  kDrainCapped,
  kPythonStart,
  kPythonFiles,
  kMeasures
};

std::string measure_label(Measure m, const Options& opt) {
  const std::string mb = std::to_string(opt.drain_mb) + " MB";
  switch (m) {
    case kStart:
      return "new container: start()";
    case kReady:
      return "new container: start() + first `true`";
    case kTrue:
      return "round trip of `true` (warm)";
    case kDrainWhole:
      return "drain " + mb + " of stdout, all of it returned";
    case kDrainCapped:
      return "drain " + mb + " of stdout, capped at 1 MiB";
    case kPythonStart:
      return "python3 -c pass";
    case kPythonFiles:
      return "python3: write " + std::to_string(opt.files) + " files in the workspace";
    case kMeasures:
      break;
  }
  return "?";
}

// One command for a warm sandbox: what it prints on stdout is checked (`writes` bytes, of which the
// backend returns at most `cap`), so a drain that stopped early is not timed as a fast one.
struct Command {
  std::string script;
  std::size_t cap = sdk::kDefaultOutputCap;
  std::size_t writes = 0;
};

// A new sandbox's start and its first `true`, in milliseconds.
struct Fresh {
  double start_ms = 0, ready_ms = 0;
};

// One way of running commands under one runtime: the docker-api backend in one exec_mode, or the
// docker CLI. Whatever it made is removed when it is destroyed.
class Subject {
 public:
  virtual ~Subject() = default;
  // Starts the sandbox the warm measures use; "" or why it cannot start (the row is "refused").
  virtual std::string start_warm() = 0;
  // Starts a new sandbox, runs `true` in it and removes it. Throws when a step fails.
  virtual Fresh fresh(int sample) = 0;
  // Runs `c` in the warm sandbox, in the workspace. Throws unless it exits 0 with its output.
  virtual void run(const Command& c) = 0;
};

class BackendSubject : public Subject {
 public:
  BackendSubject(Plugin& plugin, const Options& opt, const std::string& ws, std::string runtime,
                 std::string mode)
      : plugin_(plugin), opt_(opt), ws_(ws), runtime_(std::move(runtime)), mode_(std::move(mode)) {}
  ~BackendSubject() override {
    if (warm_) warm_->cleanup();
  }
  BackendSubject(const BackendSubject&) = delete;
  BackendSubject& operator=(const BackendSubject&) = delete;

  std::string start_warm() override {
    try {
      warm_ = plugin_.create(init_for("w"));
    } catch (const std::exception& e) {  // the plugin refused the settings
      return e.what();
    }
    return warm_->start();
  }

  Fresh fresh(int sample) override {
    Fresh f;
    const auto t0 = Clock::now();
    auto backend = plugin_.create(init_for("f" + std::to_string(sample)));
    struct Cleanup {
      sdk::ExecutorBackend& backend;
      ~Cleanup() { backend.cleanup(); }
    } cleanup{*backend};
    if (const std::string error = backend->start(); !error.empty())
      throw std::runtime_error("start: " + error);
    f.start_ms = ms_since(t0);
    execute(*backend, Command{"true"});
    f.ready_ms = ms_since(t0);
    return f;
  }

  void run(const Command& c) override { execute(*warm_, c); }

 private:
  // Agent ids are names (letters and digits); the instance id holds this process's pid, so the
  // containers' names are this run's own.
  sdk::BackendInit init_for(const std::string& suffix) const {
    sdk::BackendInit init;
    init.agent_id = "rb" + runtime_ + mode_ + suffix;
    init.instance_id = "rb" + std::to_string(::getpid());
    init.cwd = ws_;
    init.paths = {{ws_, true}};
    init.settings_json = R"({"image": ")" + opt_.image + R"(", "network": "none", "runtime": ")" +
                         runtime_ + R"(", "exec_mode": ")" + mode_ + "\"}";
    return init;
  }

  static void execute(sdk::ExecutorBackend& backend, const Command& c) {
    sdk::ExecRequest req;
    req.command = c.script;
    req.timeout = kCallTimeout;
    req.output_cap = c.cap;
    const auto r = backend.execute(req);
    if (!r.error.empty()) throw std::runtime_error(r.error);
    if (r.exit_code != 0)
      throw std::runtime_error("exit code " + std::to_string(r.exit_code) + ": " +
                               r.stderr_data.substr(0, 300));
    if (r.stdout_data.size() != std::min(c.writes, c.cap))
      throw std::runtime_error(std::to_string(r.stdout_data.size()) + " bytes of stdout, not " +
                               std::to_string(std::min(c.writes, c.cap)));
  }

  Plugin& plugin_;
  const Options& opt_;
  std::string ws_, runtime_, mode_;
  std::unique_ptr<sdk::ExecutorBackend> warm_;
};

// The baseline: `docker run -d` of a container like the backend's (no network, no capabilities,
// no new privileges, an init, the workspace's owner as user, the workspace at its own path) and
// `docker exec` into it, the CLI's stdout going to /dev/null.
class CliSubject : public Subject {
 public:
  CliSubject(const Options& opt, const std::string& ws, std::string runtime)
      : opt_(opt),
        ws_(ws),
        runtime_(std::move(runtime)),
        prefix_("execmcp-runtimebench-" + std::to_string(::getpid()) + "-" + runtime_) {}
  ~CliSubject() override {
    if (!warm_.empty()) spawn_quiet({"docker", "rm", "-f", warm_});
  }
  CliSubject(const CliSubject&) = delete;
  CliSubject& operator=(const CliSubject&) = delete;

  std::string start_warm() override {
    warm_ = prefix_ + "-w";
    const int rc = docker_run(warm_);
    return rc == 0 ? "" : "docker run --runtime " + runtime_ + " exited " + std::to_string(rc);
  }

  Fresh fresh(int sample) override {
    Fresh f;
    const std::string name = prefix_ + "-f" + std::to_string(sample);
    const auto t0 = Clock::now();
    struct Remove {
      const std::string& name;
      ~Remove() { spawn_quiet({"docker", "rm", "-f", name}); }
    } remove{name};
    if (const int rc = docker_run(name); rc != 0)
      throw std::runtime_error("docker run exited " + std::to_string(rc));
    f.start_ms = ms_since(t0);
    exec_in(name, "true");
    f.ready_ms = ms_since(t0);
    return f;
  }

  void run(const Command& c) override { exec_in(warm_, c.script); }

 private:
  int docker_run(const std::string& name) const {
    return spawn_quiet({"docker",
                        "run",
                        "-d",
                        "--name",
                        name,
                        "--label",
                        "execmcp.runtimebench=" + std::to_string(::getpid()),
                        "--runtime",
                        runtime_,
                        "--network",
                        "none",
                        "--cap-drop",
                        "ALL",
                        "--security-opt",
                        "no-new-privileges",
                        "--init",
                        "--user",
                        workspace_owner(),
                        "-v",
                        ws_ + ":" + ws_,
                        "-w",
                        ws_,
                        opt_.image,
                        "sleep",
                        "infinity"});
  }

  void exec_in(const std::string& name, const std::string& script) const {
    if (const int rc = spawn_quiet({"docker", "exec", name, "sh", "-c", script}); rc != 0)
      throw std::runtime_error("docker exec exited " + std::to_string(rc));
  }

  std::string workspace_owner() const {
    struct stat st {};
    ::stat(ws_.c_str(), &st);
    return std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid);
  }

  const Options& opt_;
  std::string ws_, runtime_, prefix_;
  std::string warm_;
};

// One row of the table: a way of running commands under one runtime, and its samples.
struct Row {
  std::string runtime, mode;
  std::unique_ptr<Subject> subject;
  std::string refused;  // why its start() failed: nothing of it is measured
  std::string failed;   // the first step that failed: it is measured no further
  std::array<std::vector<double>, kMeasures> ms;

  [[nodiscard]] bool live() const { return refused.empty() && failed.empty(); }
  [[nodiscard]] std::string way() const {
    return mode == kCliMode ? std::string("docker CLI") : "docker-api " + mode;
  }
};

// Times `step` into the row's `m` unless the row is out; a failure takes the row out.
template <class Step>
void timed(Row& row, Measure m, const Options& opt, Step step) {
  if (!row.live()) return;
  try {
    const auto t0 = Clock::now();
    step();
    row.ms[m].push_back(ms_since(t0));
  } catch (const std::exception& e) {
    row.failed = measure_label(m, opt) + ": " + e.what();
  }
}

// Runs `step` untimed (a clean-up between samples) unless the row is out.
template <class Step>
void untimed(Row& row, const char* what, Step step) {
  if (!row.live()) return;
  try {
    step();
  } catch (const std::exception& e) {
    row.failed = std::string(what) + ": " + e.what();
  }
}

// A Python program that makes the directory `dir` in the workspace and writes `files` files of
// 100 bytes in it, each opened, written and closed.
std::string python_files(const std::string& dir, int files) {
  return "python3 -c 'import os\nd = \"" + dir + "\"\nos.mkdir(d)\nfor i in range(" +
         std::to_string(files) +
         "):\n    with open(d + \"/f\" + str(i), \"w\") as f:\n        f.write(\"x\" * 100)'";
}

// One sample of everything but the round trips, for one row.
void sample_row(Row& row, int sample, const Options& opt) {
  if (!row.live()) return;
  try {
    const Fresh f = row.subject->fresh(sample);
    row.ms[kStart].push_back(f.start_ms);
    row.ms[kReady].push_back(f.ready_ms);
  } catch (const std::exception& e) {
    row.failed = measure_label(kReady, opt) + ": " + e.what();
    return;
  }
  const std::size_t bytes = static_cast<std::size_t>(opt.drain_mb) * 1000 * 1000;
  const std::string drain = "head -c " + std::to_string(bytes) + " /dev/zero";
  timed(row, kDrainWhole, opt, [&] { row.subject->run({drain, bytes, bytes}); });
  // The CLI has no cap: its row would be the one above again.
  if (row.mode != kCliMode)
    timed(row, kDrainCapped, opt, [&] {
      row.subject->run({drain, sdk::kDefaultOutputCap, bytes});
    });
  timed(row, kPythonStart, opt, [&] { row.subject->run({"python3 -c pass"}); });
  const std::string dir = "rb-files-" + row.runtime + "-" + row.mode + "-" + std::to_string(sample);
  timed(row, kPythonFiles, opt, [&] { row.subject->run({python_files(dir, opt.files)}); });
  untimed(row, "removing the written files", [&] { row.subject->run({"rm -rf " + dir}); });
}

// Every row's warm round trips of `true`, the rows taking turns in rounds.
void round_trips(std::vector<Row>& rows, const Options& opt) {
  for (auto& row : rows)  // warm-up: connections, the runner's first call, the page cache
    for (int i = 0; i < 5; ++i) untimed(row, "warm-up", [&] { row.subject->run({"true"}); });
  for (int round = 0; round < opt.rounds; ++round) {
    const int calls = opt.calls / opt.rounds + (round < opt.calls % opt.rounds ? 1 : 0);
    std::fprintf(stderr, "  round trips, round %d of %d\n", round + 1, opt.rounds);
    for (std::size_t k = 0; k < rows.size(); ++k) {
      Row& row = rows[(k + static_cast<std::size_t>(round)) % rows.size()];
      for (int i = 0; i < calls; ++i) timed(row, kTrue, opt, [&] { row.subject->run({"true"}); });
    }
  }
}

// The row of the same way under the baseline runtime, or nullptr.
const Row* baseline_of(const std::vector<Row>& rows, const Row& row) {
  for (const auto& r : rows)
    if (r.mode == row.mode && r.runtime == kBaselineRuntime && r.refused.empty()) return &r;
  return nullptr;
}

std::string ratio_text(const Row* base, const Row& row, Measure m) {
  if (base == nullptr || base == &row || base->ms[m].empty() || row.ms[m].empty()) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", median(row.ms[m]) / median(base->ms[m]));
  return buf;
}

void print_status(const std::vector<Row>& rows) {
  std::printf("\n| way | runtime | status |\n|---|---|---|\n");
  for (const auto& row : rows)
    std::printf("| %s | %s | %s |\n", row.way().c_str(), row.runtime.c_str(),
                !row.refused.empty()  ? ("refused: " + row.refused).c_str()
                : !row.failed.empty() ? ("failed (measured no further) at " + row.failed).c_str()
                                      : "measured");
}

// Markdown: it reads in a terminal and goes into README.md as it is.
void print_table(const std::vector<Row>& rows, const Options& opt) {
  std::printf(
      "\n| measure | way | runtime | n | median ms | min ms | p90 ms | max ms | / %s (median) |\n"
      "|---|---|---|---|---|---|---|---|---|\n",
      kBaselineRuntime);
  for (std::size_t m = 0; m < kMeasures; ++m) {
    const auto measure = static_cast<Measure>(m);
    for (const auto& row : rows) {
      const auto& v = row.ms[m];
      if (v.empty()) continue;
      const Percentiles p = percentiles(v);
      std::printf("| %s | %s | %s | %zu | %.1f | %.1f | %.1f | %.1f | %s |\n",
                  measure_label(measure, opt).c_str(), row.way().c_str(), row.runtime.c_str(), p.n,
                  median(v), *std::min_element(v.begin(), v.end()), p.p90, p.max,
                  ratio_text(baseline_of(rows, row), row, measure).c_str());
    }
  }
}

// The issue's goal (the round trip of `true` under runsc <= 2x runc's) for each way, and the
// drains' throughput.
void print_summary(const std::vector<Row>& rows, const Options& opt) {
  std::printf("\n");
  for (const auto& row : rows) {
    if (row.runtime == kBaselineRuntime) continue;
    const Row* base = baseline_of(rows, row);
    std::printf("round trip of `true`, %s, %s / %s: ", row.way().c_str(), row.runtime.c_str(),
                kBaselineRuntime);
    if (!row.refused.empty() || base == nullptr || row.ms[kTrue].empty() ||
        base->ms[kTrue].empty()) {
      std::printf("not measured (%s)\n", !row.refused.empty() ? "refused at start()"
                                         : base == nullptr    ? "no runc row"
                                                              : "a row failed");
      continue;
    }
    const double x = median(row.ms[kTrue]), b = median(base->ms[kTrue]);
    std::printf("%.2f ms / %.2f ms = %.2fx: goal <= 2x %s\n", x, b, x / b,
                x <= 2 * b ? "MET" : "NOT MET");
  }
  for (const auto& row : rows)
    for (const Measure m : {kDrainWhole, kDrainCapped})
      if (!row.ms[m].empty())
        std::printf("%s, %s %s: %.0f MB/s (median)\n", measure_label(m, opt).c_str(),
                    row.way().c_str(), row.runtime.c_str(),
                    opt.drain_mb / (median(row.ms[m]) / 1000.0));
}

void usage() {
  std::puts(
      "usage: execmcp_runtime_bench [--runtimes LIST] [--modes LIST] [--samples N] [--calls N]\n"
      "                             [--rounds N] [--drain-mb N] [--files N] [--plugin PATH]\n"
      "                             [--image REF]\n"
      "  --runtimes LIST  runtimes the engine has registered (default runc,runsc); ratios are\n"
      "                   against runc\n"
      "  --modes LIST     of agent, exec (the docker-api backend's exec_mode) and cli (docker\n"
      "                   run/exec, the baseline); default agent,exec,cli\n"
      "  --samples N      new containers, drains and Python runs per row (default 10)\n"
      "  --calls N        round trips of `true` per row on its warm container (default 200)\n"
      "  --rounds N       the rows take turns at the round trips in N rounds (default 4)\n"
      "  --drain-mb N     size of the stdout drain in MB (default 100)\n"
      "  --files N        files the Python workload writes (default 1000)\n"
      "  --plugin PATH    the docker-api plugin (default: the one built with this program)\n"
      "  --image REF      image of the containers (default execmcp/runtime:latest: python3)\n"
      "A row whose start() fails says \"refused: <error>\" and the others go on. Exit 77 (skip)\n"
      "when no Docker engine answers, the image is missing or the engine lacks a runtime.");
}

std::vector<std::string> split_list(const std::string& text, const std::string& option) {
  std::vector<std::string> out;
  for (std::size_t pos = 0; pos <= text.size();) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    if (comma > pos) out.push_back(text.substr(pos, comma - pos));
    pos = comma + 1;
  }
  if (out.empty()) throw std::invalid_argument(option + ": the list is empty");
  return out;
}

Options parse(int argc, char** argv) {
  Options opt;
  auto list = [](std::vector<std::string>& out, const char* name) {
    return [&out, name](const std::string& v) { out = split_list(v, name); };
  };
  Args(usage)
      .count("--samples", opt.samples)
      .count("--calls", opt.calls)
      .count("--rounds", opt.rounds)
      .count("--drain-mb", opt.drain_mb)
      .count("--files", opt.files)
      .text("--plugin", opt.plugin)
      .text("--image", opt.image)
      .value("--runtimes", list(opt.runtimes, "--runtimes"))
      .value("--modes", list(opt.modes, "--modes"))
      .parse(argc, argv);
  for (const auto& mode : opt.modes)
    if (mode != "agent" && mode != "exec" && mode != kCliMode)
      throw std::invalid_argument("--modes: unknown mode '" + mode + "' (agent, exec, cli)");
  opt.rounds = std::min(opt.rounds, opt.calls);
  return opt;
}

// "" when everything the run needs is here; else why it is skipped.
std::string missing(const Options& opt) {
  if (const char* gate = std::getenv("EXECMCP_DOCKER_TESTS"); gate && std::string(gate) == "0")
    return "EXECMCP_DOCKER_TESTS=0";
  if (spawn_quiet({"docker", "info"}) != 0)
    return "no Docker engine answers (scripts/docker-engine.sh start)";
  if (spawn_quiet({"docker", "image", "inspect", opt.image}) != 0)
    return "image " + opt.image + " is missing (docker/build.sh)";
  const std::string runtimes = output_of("docker info --format '{{json .Runtimes}}'");
  for (const auto& runtime : opt.runtimes)
    if (runtimes.find("\"" + runtime + "\"") == std::string::npos)
      return "the engine has no runtime '" + runtime + "' (its runtimes: " + runtimes +
             "; scripts/docker-engine.sh registers runsc when it is installed)";
  return {};
}

// Each measured runtime as the engine runs it; a warning when it logs (runsc --debug logs every
// message to its gofer, --strace every system call: both slow it down several times).
void print_runtimes(const Options& opt) {
  const std::string lines = capture(
      "docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{$v.Path}} "
      "{{$v.Args}}{{\"\\n\"}}{{end}}'");
  for (const auto& runtime : opt.runtimes) {
    for (std::size_t pos = 0; pos < lines.size();) {
      const std::size_t end = std::min(lines.find('\n', pos), lines.size());
      const std::string line = lines.substr(pos, end - pos);
      pos = end + 1;
      if (!line.starts_with(runtime + " ")) continue;
      std::printf("  runtime %s\n", line.c_str());
      if (line.find("--debug") != std::string::npos || line.find("--strace") != std::string::npos)
        std::printf(
            "  WARNING: %s runs with --debug or --strace (its runtimeArgs on this engine): it logs "
            "as it works, and its numbers are slower than without\n",
            runtime.c_str());
    }
  }
}

int run(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  if (const std::string why = missing(opt); !why.empty()) {
    std::printf("execmcp_runtime_bench: skipped: %s\n", why.c_str());
    return kSkipped;
  }
  if (opt.plugin.empty() || !fs::exists(opt.plugin))
    throw std::runtime_error("no docker-api plugin (" + opt.plugin + "): give --plugin PATH");
  // The plugin outlives every backend it made (declared first, destroyed last).
  Plugin plugin(opt.plugin);
  const TempDir ws("execmcp-runtimebench");
  // gVisor checks the workspace by its mode bits, not by the ACL the backend grants the image
  // user on a root-owned one: the image user owns it, as the Docker tests do under runsc.
  ::chmod(ws.root.c_str(), 0755);
  if (::geteuid() == 0 && ::chown(ws.root.c_str(), 1000, 1000) != 0)
    throw std::runtime_error("cannot give the workspace to uid 1000");
  std::printf(
      "execmcp_runtime_bench: image %s, engine %s, %s, %u cpus, load average at the start %s\n"
      "  workspace %s (on %s; TMPDIR chooses where)\n",
      opt.image.c_str(), output_of("docker version --format '{{.Server.Version}}'").c_str(),
      output_of("runsc --version").c_str(), std::thread::hardware_concurrency(),
      load_average().c_str(), ws.root.c_str(),
      output_of("stat -f -c %T " + ws.root.string()).c_str());
  print_runtimes(opt);
  std::fflush(stdout);

  std::vector<Row> rows;  // destroyed before `plugin`: every container is removed, even on error
  for (const auto& mode : opt.modes) {
    for (const auto& runtime : opt.runtimes) {
      Row row{runtime, mode, nullptr, {}, {}, {}};
      if (mode == kCliMode)
        row.subject = std::make_unique<CliSubject>(opt, ws.root.string(), runtime);
      else
        row.subject =
            std::make_unique<BackendSubject>(plugin, opt, ws.root.string(), runtime, mode);
      std::fprintf(stderr, "  starting %s under %s\n", row.way().c_str(), runtime.c_str());
      row.refused = row.subject->start_warm();
      if (!row.refused.empty()) std::fprintf(stderr, "    refused: %s\n", row.refused.c_str());
      rows.push_back(std::move(row));
    }
  }

  round_trips(rows, opt);
  for (int sample = 0; sample < opt.samples; ++sample) {
    std::fprintf(stderr, "  sample %d of %d\n", sample + 1, opt.samples);
    for (std::size_t k = 0; k < rows.size(); ++k)
      sample_row(rows[(k + static_cast<std::size_t>(sample)) % rows.size()], sample, opt);
  }

  print_status(rows);
  print_table(rows, opt);
  print_summary(rows, opt);
  std::printf("\nload average at the end: %s\n", load_average().c_str());
  return 0;
}

}  // namespace
}  // namespace execmcp::bench

int main(int argc, char** argv) {
  return execmcp::bench::run_main("execmcp_runtime_bench",
                                  [&] { return execmcp::bench::run(argc, argv); });
}
