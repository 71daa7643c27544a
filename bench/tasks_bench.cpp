// execmcp_tasks_bench: what running a short command as an MCP task costs against the same command
// as a plain tools/call (issue 32), in one run (see README.md): `true` through one
// `execmcp serve --http --task-after 0` server, four ways alternated call by call on keep-alive
// connections: a plain 2025-11-25 call and a 2025-11-25 task (create, tasks/get until it is done,
// tasks/result), a plain 2026-07-28 call and a 2026-07-28 task (create, tasks/get until it is
// done, which carries the result).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
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

constexpr const char* kAgent = "tasks";
constexpr const char* kLegacy = "2025-11-25";
constexpr const char* kExtension = "io.modelcontextprotocol/tasks";
constexpr double kGoal = 2.0;  // issue 32: p50 of a task at most 2x a plain call's

struct Options {
  std::string bin;
  int calls = 400;  // per way
};

// The JSON-RPC message of a response, checked: HTTP 200 and a `result`.
json result_of(const HttpResponse& r, const std::string& what) {
  json parsed = json::parse(rpc_of_body(r.body), nullptr, false);
  if (r.status != 200 || !parsed.is_object() || !parsed.contains("result") ||
      !parsed["result"].is_object())
    throw std::runtime_error(what + ": HTTP " + std::to_string(r.status) + " " +
                             r.body.substr(0, 400));
  return std::move(parsed["result"]);
}

void expect_true_ran(const json& call_result, const std::string& what) {
  const json* sc =
      call_result.contains("structuredContent") ? &call_result["structuredContent"] : nullptr;
  if (sc == nullptr || !sc->is_object() || sc->value("exit_code", -1) != 0)
    throw std::runtime_error(what + ": not `true`'s result: " + call_result.dump().substr(0, 400));
}

const json kTrue = {{"name", "execute_command"}, {"arguments", {{"command", "true"}}}};

// A 2025-11-25 session on its own keep-alive connection.
class LegacyClient {
 public:
  LegacyClient(std::uint16_t port, const std::string& token)
      : connection_(port), path_(std::string("/mcp/") + kAgent) {
    headers_ = {{"Content-Type", "application/json"},
                {"Accept", "application/json, text/event-stream"},
                {"Authorization", "Bearer " + token}};
    const json init = {{"protocolVersion", kLegacy},
                       {"capabilities", json::object()},
                       {"clientInfo", {{"name", "execmcp_tasks_bench"}, {"version", "1"}}}};
    const HttpResponse r = connection_.post(path_, headers_, message("initialize", init), 60s);
    const json result = result_of(r, "initialize");
    if (result.value("protocolVersion", "") != kLegacy ||
        !result.value("capabilities", json::object()).contains("tasks"))
      throw std::runtime_error("initialize: no 2025-11-25 tasks: " + result.dump());
    headers_.emplace_back("Mcp-Session-Id", r.header("mcp-session-id"));
    headers_.emplace_back("MCP-Protocol-Version", kLegacy);
    connection_.post(path_, headers_, R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                     60s);
  }

  json request(const std::string& method, const json& params) {
    return result_of(connection_.post(path_, headers_, message(method, params), 120s), method);
  }

 private:
  std::string message(const std::string& method, const json& params) {
    return json{{"jsonrpc", "2.0"}, {"id", ++id_}, {"method", method}, {"params", params}}.dump();
  }

  HttpConnection connection_;
  std::string path_;
  HttpHeaders headers_;
  long id_ = 0;
};

// 2026-07-28 stateless requests on their own keep-alive connection; `extension`: each declares
// io.modelcontextprotocol/tasks in its _meta (so the server may answer a call with a task).
class StatelessClient {
 public:
  StatelessClient(std::uint16_t port, std::string token, bool extension)
      : connection_(port),
        path_(std::string("/mcp/") + kAgent),
        token_(std::move(token)),
        extension_(extension) {}

  // `name`: the Mcp-Name header (the tool of a tools/call, the taskId of a tasks/*).
  json request(const std::string& method, json params, const std::string& name) {
    json capabilities = json::object();
    if (extension_) capabilities["extensions"][kExtension] = json::object();
    params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                       {"io.modelcontextprotocol/clientCapabilities", capabilities}};
    const HttpHeaders headers = {{"Content-Type", "application/json"},
                                 {"Accept", "application/json, text/event-stream"},
                                 {"Authorization", "Bearer " + token_},
                                 {"MCP-Protocol-Version", "2026-07-28"},
                                 {"Mcp-Method", method},
                                 {"Mcp-Name", name}};
    const std::string body =
        json{{"jsonrpc", "2.0"}, {"id", ++id_}, {"method", method}, {"params", params}}.dump();
    return result_of(connection_.post(path_, headers, body, 120s), method);
  }

 private:
  HttpConnection connection_;
  std::string path_;
  std::string token_;
  bool extension_;
  long id_ = 0;
};

struct Sample {
  double ms = 0;
  int polls = 0;  // tasks/get requests until one showed the task done
};

Sample legacy_plain(LegacyClient& c) {
  const auto t = Clock::now();
  const json r = c.request("tools/call", kTrue);
  const double ms = ms_since(t);
  expect_true_ran(r, "2025-11-25 tools/call");
  return {ms, 0};
}

// create (CreateTaskResult) + tasks/get until the status is terminal + tasks/result.
Sample legacy_task(LegacyClient& c) {
  json params = kTrue;
  params["task"] = json::object();
  const auto t = Clock::now();
  const json created = c.request("tools/call", params);
  const std::string id = created.at("task").at("taskId").get<std::string>();
  int polls = 0;
  std::string status;
  do {
    status = c.request("tasks/get", {{"taskId", id}}).at("status").get<std::string>();
    ++polls;
  } while (status == "working");
  const json result = c.request("tasks/result", {{"taskId", id}});
  const double ms = ms_since(t);
  if (status != "completed") throw std::runtime_error("2025-11-25 task ended " + status);
  expect_true_ran(result, "2025-11-25 tasks/result");
  return {ms, polls};
}

Sample stateless_plain(StatelessClient& c) {
  const auto t = Clock::now();
  const json r = c.request("tools/call", kTrue, "execute_command");
  const double ms = ms_since(t);
  expect_true_ran(r, "2026-07-28 tools/call");
  return {ms, 0};
}

// create (resultType "task": --task-after 0 makes every call a task) + tasks/get until the task
// is done, whose answer carries the result.
Sample stateless_task(StatelessClient& c) {
  const auto t = Clock::now();
  const json created = c.request("tools/call", kTrue, "execute_command");
  if (created.value("resultType", "") != "task")
    throw std::runtime_error("2026-07-28 call with the extension was not made a task: " +
                             created.dump().substr(0, 400));
  const std::string id = created.at("taskId").get<std::string>();
  int polls = 0;
  json got;
  do {
    got = c.request("tasks/get", {{"taskId", id}}, id);
    ++polls;
  } while (got.value("status", "") == "working");
  const double ms = ms_since(t);
  if (got.value("status", "") != "completed" || !got.contains("result"))
    throw std::runtime_error("2026-07-28 task ended: " + got.dump().substr(0, 400));
  expect_true_ran(got["result"], "2026-07-28 tasks/get");
  return {ms, polls};
}

struct Way {
  const char* name;
  std::function<Sample()> run;
  std::vector<double> ms;
  std::vector<int> polls;
};

void print_row(const Way& w) {
  const Percentiles p = percentiles(w.ms);
  std::printf("| %-42s | %5zu | %7.3f | %7.3f | %8.3f |", w.name, p.n, p.p50, p.p90, p.max);
  if (w.polls.empty() || w.polls.front() == 0) {
    std::printf("  |\n");
    return;
  }
  std::vector<double> polls(w.polls.begin(), w.polls.end());
  const Percentiles q = percentiles(polls);
  std::printf(" %.0f / %.0f / %.0f |\n", q.p50, q.p90, q.max);
}

void print_ratio(const char* what, const Way& task, const Way& plain) {
  const double ratio = percentiles(task.ms).p50 / percentiles(plain.ms).p50;
  std::printf("%s: p50 %.3f ms / %.3f ms = %.2fx (goal <= %.0fx: %s); p90 ratio %.2fx\n", what,
              percentiles(task.ms).p50, percentiles(plain.ms).p50, ratio, kGoal,
              ratio <= kGoal ? "met" : "MISSED",
              percentiles(task.ms).p90 / percentiles(plain.ms).p90);
}

int run(const Options& opt) {
  if (!fs::exists(opt.bin))
    throw std::runtime_error("no execmcp binary at " + opt.bin + " (--bin)");
  const fs::path plugin_dir =
      fs::absolute(opt.bin).parent_path().parent_path() / "lib" / "execmcp" / "plugins";
  if (!std::getenv("EXECMCP_PLUGIN_PATH") && fs::exists(plugin_dir))
    setenv("EXECMCP_PLUGIN_PATH", plugin_dir.c_str(), 1);
  std::printf("execmcp_tasks_bench: bin %s, %d calls per way, %u cpus, load %s\n", opt.bin.c_str(),
              opt.calls, std::thread::hardware_concurrency(), load_average().c_str());
  std::fflush(stdout);

  const TempDir w("execmcp-tasks-bench");
  fs::create_directories(w.root / "ws");
  const fs::path config = w.root / "tasks-bench.yaml";
  const std::string token = "tb-" + random_hex(24);
  setenv("EXECMCP_TASKS_BENCH_TOKEN", token.c_str(), 1);
  {
    std::ofstream out(config);
    out << "execmcp: 1\nagents:\n  - id: " << kAgent << "\n    cwd: \"" << (w.root / "ws").string()
        << "\"\n    backend: {plugin: local, settings: {isolation: none}}\n    filters: []\n"
        << "server:\n  allow_local_agents: true\n  tokens:\n"
        << "    - {name: bench, env: EXECMCP_TASKS_BENCH_TOKEN, agents: [" << kAgent << "]}\n";
  }
  // --task-after 0: a 2026-07-28 call that declares the extension always becomes a task (with
  // the default window, 1000 ms, `true` would be answered directly: a plain call).
  HttpServerProcess server(opt.bin, config.string(), {"--task-after", "0"},
                           (w.root / "server.log").string());

  LegacyClient legacy(server.port(), token);
  StatelessClient plain2026(server.port(), token, false);
  StatelessClient ext2026(server.port(), token, true);
  std::vector<Way> ways;
  ways.push_back({"2025-11-25 plain tools/call", [&] { return legacy_plain(legacy); }, {}, {}});
  ways.push_back(
      {"2025-11-25 task: create + get.. + result", [&] { return legacy_task(legacy); }, {}, {}});
  ways.push_back(
      {"2026-07-28 plain tools/call", [&] { return stateless_plain(plain2026); }, {}, {}});
  ways.push_back({"2026-07-28 task: create + get.. (inlined)",
                  [&] { return stateless_task(ext2026); },
                  {},
                  {}});
  for (int i = 0; i < 20; ++i)
    for (Way& way : ways) way.run();  // warm-up, not counted
  // Alternated, the order rotating each round, so every way sees the same machine load.
  for (int i = 0; i < opt.calls; ++i) {
    for (std::size_t k = 0; k < ways.size(); ++k) {
      Way& way = ways[(k + static_cast<std::size_t>(i)) % ways.size()];
      const Sample s = way.run();
      way.ms.push_back(s.ms);
      way.polls.push_back(s.polls);
    }
  }

  std::printf(
      "\n| execute_command(\"true\") over HTTP, ms | n | p50 | p90 | max | tasks/get "
      "per task (p50 / p90 / max) |\n|---|---|---|---|---|---|\n");
  for (const Way& way : ways) print_row(way);
  std::printf("\n");
  print_ratio("2025-11-25 task / plain call", ways[1], ways[0]);
  print_ratio("2026-07-28 task / plain call", ways[3], ways[2]);
  std::printf("server RSS after: %.1f MiB (peak %.1f MiB); load at the end %s\n",
              server.rss_kib() / 1024.0, server.peak_rss_kib() / 1024.0, load_average().c_str());
  const int status = server.stop(60s);
  std::printf("SIGTERM until exit: exit %d\n", status);
  return status == 0 ? 0 : 1;
}

void usage() {
  std::puts(
      "usage: execmcp_tasks_bench [--bin PATH] [--calls N]\n"
      "  --bin PATH   execmcp binary (default: execmcp next to this program)\n"
      "  --calls N    measured calls per way (400), after 20 warm-up calls each");
}

Options parse(int argc, char** argv) {
  Options opt;
  opt.bin = sibling_execmcp();
  Args(usage).text("--bin", opt.bin).count("--calls", opt.calls).parse(argc, argv);
  return opt;
}

}  // namespace
}  // namespace execmcp::bench

int main(int argc, char** argv) {
  return execmcp::bench::run_main("execmcp_tasks_bench", [&] {
    return execmcp::bench::run(execmcp::bench::parse(argc, argv));
  });
}
