// execmcp_sandbox_bench: what the local backend's OS sandbox (isolation: sandbox, issue 31) costs
// a command, in one run (see README.md): `true` through a sandboxed local agent against the same
// through an agent with isolation: none, alternated call by call on one `execmcp serve --http`, and
// a per-user agent in the sandbox: a new user's first call (the sandbox is made), a running user's
// call, and the memory of all the users' sandboxes.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
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

constexpr const char* kHost = "host";      // local, isolation: none
constexpr const char* kSandbox = "box";    // local, isolation: sandbox
constexpr const char* kPerUser = "users";  // per_user, local, isolation: sandbox
constexpr double kGoal = 1.2;              // issue 31: p50 ratio sandbox / none

struct Options {
  std::string bin;
  int calls = 500;  // per paired row
  int users = 100;  // per-user sandboxes made (first calls), then measured together
};

// One keep-alive connection as one token; call() times one execute_command and checks it.
class Client {
 public:
  Client(std::uint16_t port, std::string token, const std::string& agent)
      : connection_(port), token_(std::move(token)), path_("/mcp/" + agent) {}

  double call(const std::string& command) {
    HttpHeaders headers = stateless_exec_headers();
    headers.emplace_back("Authorization", "Bearer " + token_);
    const std::string body = stateless_exec_body(++id_, command);
    const auto t = Clock::now();
    const HttpResponse r = connection_.post(path_, headers, body, 120s);
    const double ms = ms_since(t);
    const json parsed = json::parse(rpc_of_body(r.body), nullptr, false);
    const json* sc = parsed.is_object() && parsed.contains("result")
                         ? &parsed["result"]["structuredContent"]
                         : nullptr;
    if (r.status != 200 || !sc || !sc->is_object() || sc->value("exit_code", -1) != 0)
      throw std::runtime_error(path_ + ": execute_command '" + command + "': HTTP " +
                               std::to_string(r.status) + " " + r.body.substr(0, 400));
    return ms;
  }

 private:
  HttpConnection connection_;
  std::string token_;
  std::string path_;
  long id_ = 0;
};

double nearest_rank(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

void print_row(const char* name, const std::vector<double>& ms) {
  std::printf("  %-46s %5zu  %8.3f  %8.3f  %8.3f\n", name, ms.size(), nearest_rank(ms, 0.5),
              nearest_rank(ms, 0.95), ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()));
}

// The server's descendants (its sandboxes: bubblewrap, their inits, execmcp-runner and anything
// they run), from /proc/*/stat.
std::vector<pid_t> descendants(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    children[ppid].push_back(static_cast<pid_t>(std::stol(name)));
  }
  std::vector<pid_t> out;
  std::vector<pid_t> todo = {root};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    for (pid_t c : children[p]) out.push_back(c), todo.push_back(c);
  }
  return out;
}

// A field of /proc/<pid>/smaps_rollup (Pss, Rss) in KiB; 0 when unreadable.
long rollup_kib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0)
      return std::strtol(line.c_str() + field.size() + 1, nullptr, 10);
  return 0;
}

struct Memory {
  long pss_kib = 0;
  long rss_kib = 0;
  long processes = 0;
};

Memory children_memory(pid_t server) {
  Memory m;
  for (pid_t p : descendants(server)) {
    m.pss_kib += rollup_kib(p, "Pss");
    m.rss_kib += rollup_kib(p, "Rss");
    ++m.processes;
  }
  return m;
}

int run(const Options& opt) {
  if (!fs::exists(opt.bin))
    throw std::runtime_error("no execmcp binary at " + opt.bin + " (--bin)");
  const fs::path plugin_dir =
      fs::absolute(opt.bin).parent_path().parent_path() / "lib" / "execmcp" / "plugins";
  if (!std::getenv("EXECMCP_PLUGIN_PATH") && fs::exists(plugin_dir))
    setenv("EXECMCP_PLUGIN_PATH", plugin_dir.c_str(), 1);
  std::printf(
      "execmcp_sandbox_bench: bin %s, %d paired calls, %d per-user sandboxes, %u cpus, load %s\n",
      opt.bin.c_str(), opt.calls, opt.users, std::thread::hardware_concurrency(),
      load_average().c_str());
  std::fflush(stdout);

  const TempDir w("execmcp-sandbox-bench");
  // The sandbox user (1000 when the server is root) passes through to the workspaces.
  fs::permissions(w.root, fs::perms::owner_all | fs::perms::others_exec);
  for (const char* d : {"host-ws", "box-ws"}) fs::create_directories(w.root / d);
  const fs::path config = w.root / "sandbox-bench.yaml";
  std::vector<std::string> tokens;
  {
    std::ofstream out(config);
    out << "execmcp: 1\nagents:\n"
        << "  - id: " << kHost << "\n    cwd: \"" << (w.root / "host-ws").string()
        << "\"\n    backend: {plugin: local, settings: {isolation: none}}\n"
        << "  - id: " << kSandbox << "\n    cwd: \"" << (w.root / "box-ws").string()
        << "\"\n    backend: {plugin: local, settings: {isolation: sandbox}}\n"
        << "  - id: " << kPerUser << "\n    per_user: {workspace_root: \""
        << (w.root / "users").string() << "\", max_users: " << opt.users + 1
        << ", idle_stop: 86400, idle_remove: 86400}\n"
        << "    backend: {plugin: local, settings: {isolation: sandbox}}\n"
        << "server:\n  allow_local_agents: true\n  tokens:\n";
    for (int i = 0; i <= opt.users; ++i) {
      const std::string var = "EXECMCP_SANDBOX_BENCH_" + std::to_string(i);
      tokens.push_back("sb-" + random_hex(24));
      setenv(var.c_str(), tokens.back().c_str(), 1);
      out << "    - {name: u" << i << ", env: " << var << ", agents: [" << kHost << ", " << kSandbox
          << ", " << kPerUser << "]}\n";
    }
  }
  const std::string log = (w.root / "server.log").string();
  HttpServerProcess server(opt.bin, config.string(), {"--max-concurrent", "16"}, log);
  const long server_kib = server.rss_kib();

  // Paired: one call to each agent, alternated (the order flips every call), so every column sees
  // the same machine load. User 0's per-user sandbox is made by its warm-up calls.
  Client host(server.port(), tokens[0], kHost);
  Client box(server.port(), tokens[0], kSandbox);
  Client user(server.port(), tokens[0], kPerUser);
  for (int i = 0; i < 20; ++i) host.call("true"), box.call("true"), user.call("true");
  std::vector<double> host_ms, box_ms, user_ms;
  for (int i = 0; i < opt.calls; ++i) {
    if (i % 2 == 0) {
      host_ms.push_back(host.call("true"));
      box_ms.push_back(box.call("true"));
    } else {
      box_ms.push_back(box.call("true"));
      host_ms.push_back(host.call("true"));
    }
    user_ms.push_back(user.call("true"));
  }

  // What the server's children hold before the new users come (the two agents' sandbox and
  // supervisor, user 0's sandbox): the users' sandboxes are the difference.
  const Memory before = children_memory(server.pid());
  // New users: each first call makes that user's sandbox (workspace, ACLs, bubblewrap, runner).
  std::vector<double> first_ms;
  for (int i = 1; i <= opt.users; ++i) {
    Client fresh(server.port(), tokens[static_cast<std::size_t>(i)], kPerUser);
    first_ms.push_back(fresh.call("true"));
  }
  std::this_thread::sleep_for(200ms);
  const Memory after = children_memory(server.pid());
  const long server_after_kib = server.rss_kib();

  std::printf("\n  %-46s %5s  %8s  %8s  %8s\n", "execute_command(\"true\") over HTTP, ms", "n",
              "p50", "p95", "max");
  print_row("local, isolation: none", host_ms);
  print_row("local, isolation: sandbox", box_ms);
  print_row("per-user local sandbox, running user", user_ms);
  print_row("per-user local sandbox, a new user's first call", first_ms);
  const double ratio = nearest_rank(box_ms, 0.5) / nearest_rank(host_ms, 0.5);
  std::printf("\n  p50 ratio sandbox / none: %.3f (goal <= %.2f: %s); p95 ratio %.3f\n", ratio,
              kGoal, ratio <= kGoal ? "met" : "MISSED",
              nearest_rank(box_ms, 0.95) / nearest_rank(host_ms, 0.95));
  std::printf("  p50 ratio per-user sandbox / none: %.3f\n",
              nearest_rank(user_ms, 0.5) / nearest_rank(host_ms, 0.5));
  const double users_pss = (after.pss_kib - before.pss_kib) / 1024.0;
  std::printf(
      "  memory of %d new users' sandboxes (%ld processes): PSS %.1f MiB (%.2f MiB each), RSS "
      "%.1f MiB; server RSS %.1f MiB at start, %.1f MiB after\n",
      opt.users, after.processes - before.processes, users_pss, users_pss / opt.users,
      (after.rss_kib - before.rss_kib) / 1024.0, server_kib / 1024.0, server_after_kib / 1024.0);
  const auto t = Clock::now();
  const int status = server.stop(60s);
  std::printf("  SIGTERM until exit: %.2f s (exit %d)\n", ms_since(t) / 1000, status);
  return status == 0 ? 0 : 1;
}

void usage() {
  std::puts(
      "usage: execmcp_sandbox_bench [--bin PATH] [--calls N] [--users N]\n"
      "  --bin PATH   execmcp binary (default: execmcp next to this program)\n"
      "  --calls N    paired calls per agent (500)\n"
      "  --users N    per-user sandboxes made, each by its user's first call (100)");
}

Options parse(int argc, char** argv) {
  Options opt;
  opt.bin = sibling_execmcp();
  Args(usage)
      .text("--bin", opt.bin)
      .count("--calls", opt.calls)
      .count("--users", opt.users)
      .parse(argc, argv);
  return opt;
}

}  // namespace
}  // namespace execmcp::bench

int main(int argc, char** argv) {
  return execmcp::bench::run_main("execmcp_sandbox_bench", [&] {
    return execmcp::bench::run(execmcp::bench::parse(argc, argv));
  });
}
