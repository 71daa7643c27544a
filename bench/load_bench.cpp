// execmcp_load_bench: one `execmcp serve --http` on loopback under load (issue 17): agents x
// clients calling execute_command("true") with their tokens, first alone (the baseline), then
// while strangers flood /health, /ready, /metrics, malformed requests and unknown tool names.
// Every authenticated call must be answered; exits 1 when one fails or is lost.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "http_client.hpp"
#include "server_process.hpp"

namespace execmcp::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kCallTimeout = 60s;   // an authenticated call not answered by then is lost
constexpr auto kFloodTimeout = 10s;  // a stranger's request
constexpr auto kProbeEvery = 10ms;   // the /health prober's pace

enum Phase { kWarmUp = 0, kBaseline = 1, kFlood = 2, kPhases = 3 };
const char* const kPhaseNames[kPhases] = {"warm-up", "baseline", "flood"};

struct Options {
  std::string bin;
  int agents = 16;
  int clients_per_agent = 4;
  int calls = 200;  // per client, in each of baseline and flood (split over the rounds)
  int rounds = 4;
  int strangers = 4;
  bool side_agents = true;
  std::string log;  // the server's stderr; empty: in the temporary directory, removed at the end
};

std::string agent_id(int i) {
  char id[16];
  std::snprintf(id, sizeof id, "a%02d", i);
  return id;
}

std::string one_line(std::string text, std::size_t limit = 160) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text.size() > limit ? text.substr(0, limit) + "..." : text;
}

// A temporary directory with one workspace per agent; removed at the end.
struct Workspace : TempDir {
  Workspace() : TempDir("execmcp-load") {}
};

// A unix socket that listens and never answers: a docker-api agent pointed at it connects, sends
// its first request and waits for the request's timeout, like a hung engine.
class SilentSocket {
 public:
  explicit SilentSocket(const fs::path& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string text = path.string();
    if (fd_ < 0 || text.size() >= sizeof address.sun_path)
      throw std::runtime_error("cannot make the silent socket " + text);
    std::copy(text.begin(), text.end(), address.sun_path);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(fd_, 64) != 0)
      throw std::runtime_error("cannot listen on " + text);
  }
  ~SilentSocket() { ::close(fd_); }
  SilentSocket(const SilentSocket&) = delete;
  SilentSocket& operator=(const SilentSocket&) = delete;

 private:
  int fd_ = -1;
};

// True when a directory the server searches holds the docker-api plugin.
bool docker_api_plugin_available() {
  const char* path = std::getenv("EXECMCP_PLUGIN_PATH");
  std::stringstream dirs(path == nullptr ? "" : path);
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && fs::exists(fs::path(dir) / "execmcp_docker_api.so")) return true;
  return false;
}

// ---- authenticated clients ----------------------------------------------------------------

struct Client {
  std::string agent;
  std::string token;
  std::unique_ptr<HttpConnection> connection;
  long next_id = 1;
  std::vector<double> latencies[kPhases];  // answered and correct calls only
  long ok = 0;
  long failed = 0;  // answered, but not HTTP 200 with exit code 0
  long lost = 0;    // no answer: the connection closed, or nothing within kCallTimeout
  std::string first_problem;
};

// `n` execute_command("true") calls, one after the other on the client's keep-alive connection.
void run_calls(Client& c, std::uint16_t port, int n, Phase phase) {
  for (int i = 0; i < n; ++i) {
    const long id = c.next_id++;
    HttpHeaders headers = stateless_exec_headers();
    headers.emplace_back("Authorization", "Bearer " + c.token);
    std::string problem;
    const auto start = Clock::now();
    try {
      if (!c.connection) c.connection = std::make_unique<HttpConnection>(port);
      const HttpResponse r =
          c.connection->post("/mcp/" + c.agent, headers, stateless_exec_body(id, "true"),
                             std::chrono::duration_cast<std::chrono::milliseconds>(kCallTimeout));
      const double ms = ms_since(start);
      if (r.close) c.connection.reset();
      const std::string rpc = rpc_of_body(r.body);
      if (r.status != 200) {
        problem = "HTTP " + std::to_string(r.status) + ": " + one_line(r.body);
      } else if (response_id(rpc) != id) {
        problem = "a response for another id: " + one_line(rpc);
      } else {
        try {
          expect_exec_ok(rpc);
        } catch (const std::exception& e) {
          problem = e.what();
        }
      }
      if (problem.empty()) {
        ++c.ok;
        c.latencies[phase].push_back(ms);
        continue;
      }
      ++c.failed;
    } catch (const std::exception& e) {
      ++c.lost;
      problem = std::string("no answer: ") + e.what();
      c.connection.reset();
    }
    if (c.first_problem.empty()) c.first_problem = c.agent + ": " + one_line(problem, 300);
  }
}

// Every client makes `n` calls at once (one thread each); returns the wall time in seconds.
double run_clients(std::vector<Client>& clients, std::uint16_t port, int n, Phase phase) {
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  threads.reserve(clients.size());
  for (auto& c : clients)
    threads.emplace_back([&c, port, n, phase] { run_calls(c, port, n, phase); });
  for (auto& t : threads) t.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---- the stranger's flood -----------------------------------------------------------------

enum FloodKind {
  kHealth,
  kReady,
  kMetrics,
  kMalformed,
  kUnknownToolNoCredentials,
  kUnknownToolWrongToken,
  kUnknownToolValidToken,
  kFloodKinds
};
const char* const kFloodNames[kFloodKinds] = {"GET /health",
                                              "GET /ready",
                                              "GET /metrics",
                                              "malformed request",
                                              "unknown tool, no credentials",
                                              "unknown tool, wrong token",
                                              "unknown tool, a valid token"};

struct FloodStats {
  std::vector<double> latencies[kFloodKinds];
  long by_class[kFloodKinds][6] = {};  // [0]: no answer; [k]: status k xx
};

// Malformed requests, each sent on a connection of its own.
std::vector<std::string> malformed_requests(std::uint16_t port) {
  const std::string host = "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
  return {
      "GARBAGE\r\n\r\n",
      "POST /mcp/a00 HTTP/1.1\r\n" + host + "Content-Length: abc\r\n\r\n",
      "GET /health HTTP/1.1\r\n" + host + "X-Big: " + std::string(70000, 'a') + "\r\n\r\n",
      "POST /mcp/a00 HTTP/1.1\r\n" + host +
          "Content-Type: application/json\r\nContent-Length: 6\r\n\r\n{\"a\":[",
      "GET /../../etc/passwd HTTP/1.1\r\n" + host + "\r\n",
      "POST /mcp/a00 HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\nzz\r\n\r\n",
      "GET /metrics HTTP/1.1\r\nHost: evil.example\r\n\r\n",
      "GET /health HTTP/1.1\r\n\r\n",
  };
}

class Flood {
 public:
  Flood(std::uint16_t port, int threads, std::string valid_agent, std::string valid_token)
      : port_(port),
        valid_agent_(std::move(valid_agent)),
        valid_token_(std::move(valid_token)),
        stats_(static_cast<std::size_t>(threads)) {
    for (int t = 0; t < threads; ++t) threads_.emplace_back([this, t] { loop(t); });
  }
  ~Flood() { stop(); }
  Flood(const Flood&) = delete;
  Flood& operator=(const Flood&) = delete;

  void stop() {
    stop_ = true;
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  // Merged over the threads; call after stop().
  [[nodiscard]] FloodStats merged() const {
    FloodStats all;
    for (const auto& s : stats_) {
      for (int k = 0; k < kFloodKinds; ++k) {
        all.latencies[k].insert(all.latencies[k].end(), s.latencies[k].begin(),
                                s.latencies[k].end());
        for (int c = 0; c < 6; ++c) all.by_class[k][c] += s.by_class[k][c];
      }
    }
    return all;
  }

 private:
  void loop(int t) {
    auto& stats = stats_[static_cast<std::size_t>(t)];
    const auto malformed = malformed_requests(port_);
    std::unique_ptr<HttpConnection> connection;
    long n = 0;
    while (!stop_) {
      const auto kind = static_cast<FloodKind>((n + t) % kFloodKinds);
      const std::string tool = "no_such_tool_" + std::to_string(t) + "_" + std::to_string(n);
      ++n;
      const auto start = Clock::now();
      const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(kFloodTimeout);
      try {
        HttpResponse r;
        if (kind == kMalformed) {
          HttpConnection fresh(port_);
          r = fresh.send_raw(malformed[static_cast<std::size_t>(n) % malformed.size()], timeout);
        } else {
          if (!connection) connection = std::make_unique<HttpConnection>(port_);
          if (kind == kHealth) r = connection->get("/health", {}, timeout);
          if (kind == kReady) r = connection->get("/ready", {}, timeout);
          if (kind == kMetrics) r = connection->get("/metrics", {}, timeout);
          if (kind >= kUnknownToolNoCredentials) {
            HttpHeaders headers = stateless_call_headers(tool);
            if (kind == kUnknownToolWrongToken)
              headers.emplace_back("Authorization", "Bearer wrong-" + std::to_string(n));
            if (kind == kUnknownToolValidToken)
              headers.emplace_back("Authorization", "Bearer " + valid_token_);
            r = connection->post("/mcp/" + valid_agent_, headers,
                                 stateless_call_body(n, tool, "{}"), timeout);
          }
          if (r.close) connection.reset();
        }
        stats.latencies[kind].push_back(ms_since(start));
        ++stats.by_class[kind][std::clamp(r.status / 100, 1, 5)];
      } catch (const std::exception&) {
        ++stats.by_class[kind][0];
        connection.reset();
      }
    }
  }

  std::uint16_t port_;
  std::string valid_agent_;
  std::string valid_token_;
  std::vector<FloodStats> stats_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// ---- background observers -----------------------------------------------------------------

// GET /health every kProbeEvery on its own connection, without credentials; latencies by phase.
class HealthProber {
 public:
  HealthProber(std::uint16_t port, const std::atomic<int>& phase)
      : thread_([this, port, &phase] {
          std::unique_ptr<HttpConnection> connection;
          while (!stop_) {
            const int now = phase.load();
            const auto start = Clock::now();
            try {
              if (!connection) connection = std::make_unique<HttpConnection>(port);
              const HttpResponse r = connection->get("/health", {}, 10s);
              const double ms = ms_since(start);
              const std::lock_guard lock(mutex_);
              if (r.status == 200) {
                latencies_[now].push_back(ms);
              } else {
                ++failed_[now];
              }
              if (r.close) connection.reset();
            } catch (const std::exception&) {
              const std::lock_guard lock(mutex_);
              ++failed_[now];
              connection.reset();
            }
            std::this_thread::sleep_for(kProbeEvery);
          }
        }) {}
  ~HealthProber() { stop(); }
  HealthProber(const HealthProber&) = delete;
  HealthProber& operator=(const HealthProber&) = delete;

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] std::vector<double> latencies(int phase) const {
    const std::lock_guard lock(mutex_);
    return latencies_[phase];
  }
  [[nodiscard]] long failed(int phase) const {
    const std::lock_guard lock(mutex_);
    return failed_[phase];
  }

 private:
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<double> latencies_[kPhases];
  long failed_[kPhases] = {};
  std::thread thread_;  // last: started once the rest is ready
};

// The server's VmRSS every 50 ms, the highest per phase.
class RssSampler {
 public:
  RssSampler(const HttpServerProcess& server, const std::atomic<int>& phase)
      : thread_([this, &server, &phase] {
          while (!stop_) {
            const long rss = server.rss_kib();
            auto& peak = peak_kib_[phase.load()];
            peak = std::max(peak.load(), rss);
            std::this_thread::sleep_for(50ms);
          }
        }) {}
  ~RssSampler() { stop(); }
  RssSampler(const RssSampler&) = delete;
  RssSampler& operator=(const RssSampler&) = delete;
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] long peak_kib(int phase) const { return peak_kib_[phase].load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<long> peak_kib_[kPhases] = {};
  std::thread thread_;
};

// A client of an agent whose start hangs or fails, calling it in a loop for the whole run; what
// matters is that the other agents never wait for it.
class SideClient {
 public:
  SideClient(std::uint16_t port, std::string agent, std::string token)
      : agent_(std::move(agent)), thread_([this, port, token = std::move(token)] {
          long id = 1;
          while (!stop_) {
            HttpHeaders headers = stateless_exec_headers();
            headers.emplace_back("Authorization", "Bearer " + token);
            const auto start = Clock::now();
            std::string outcome;
            try {
              std::shared_ptr<HttpConnection> connection;
              {
                const std::lock_guard lock(mutex_);
                if (stop_) break;
                connection = connection_ = std::make_shared<HttpConnection>(port);
              }
              const HttpResponse r =
                  connection->post("/mcp/" + agent_, headers, stateless_exec_body(id, "true"), 90s);
              outcome = "HTTP " + std::to_string(r.status) + " " + one_line(rpc_of_body(r.body));
            } catch (const std::exception& e) {
              outcome = std::string("no answer: ") + e.what();
            }
            const double ms = ms_since(start);
            const std::lock_guard lock(mutex_);
            connection_.reset();
            if (stop_ && outcome.rfind("no answer", 0) == 0) break;  // our own abort()
            ++calls_;
            latencies_.push_back(ms);
            if (first_outcome_.empty()) first_outcome_ = outcome;
            ++id;
            if (!stop_) std::this_thread::sleep_for(100ms);
          }
        }) {}
  ~SideClient() { stop(); }
  SideClient(const SideClient&) = delete;
  SideClient& operator=(const SideClient&) = delete;

  void stop() {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
      if (connection_) connection_->abort();
    }
    if (thread_.joinable()) thread_.join();
  }
  void print() const {
    const std::lock_guard lock(mutex_);
    const Percentiles p = percentiles(latencies_);
    std::printf("  %-6s %ld answered (p50 %.0f ms, max %.0f ms); first answer: %s\n",
                agent_.c_str(), calls_, p.p50, p.max,
                first_outcome_.empty() ? "(none before the end: its start was still hanging)"
                                       : first_outcome_.c_str());
  }

 private:
  std::string agent_;
  mutable std::mutex mutex_;
  bool stop_ = false;
  std::shared_ptr<HttpConnection> connection_;
  long calls_ = 0;
  std::vector<double> latencies_;
  std::string first_outcome_;
  std::thread thread_;  // last
};

// ---- the run ------------------------------------------------------------------------------

std::string write_config(const Workspace& w, const Options& opt,
                         const std::vector<std::string>& token_vars, bool side_agents) {
  std::ostringstream out;
  out << "execmcp: 1\nserver:\n  allow_local_agents: true\n  tokens:\n";
  for (int i = 0; i < opt.agents; ++i)
    out << "    - {name: load-" << agent_id(i)
        << ", env: " << token_vars[static_cast<std::size_t>(i)] << ", agents: [" << agent_id(i)
        << "]}\n";
  if (side_agents)
    out << "    - {name: load-side, env: " << token_vars.back() << ", agents: [slow, broken]}\n";
  out << "agents:\n";
  for (int i = 0; i < opt.agents; ++i) {
    const fs::path ws = w.root / ("ws-" + agent_id(i));
    fs::create_directories(ws);
    out << "  - id: " << agent_id(i) << "\n    cwd: \"" << ws.string()
        << "\"\n    backend: {plugin: local, settings: {}}\n    filters: []\n    timeout: 60\n";
  }
  if (side_agents) {
    for (const char* id : {"slow", "broken"}) {
      const fs::path ws = w.root / (std::string("ws-") + id);
      fs::create_directories(ws);
      const fs::path socket = w.root / (std::string(id) + ".sock");
      out << "  - id: " << id << "\n    cwd: \"" << ws.string()
          << "\"\n    backend: {plugin: docker-api, settings: {docker_host: \"unix://"
          << socket.string() << "\"}}\n    filters: []\n    timeout: 60\n";
    }
  }
  const fs::path file = w.root / "load.yaml";
  std::ofstream(file) << out.str();
  return file.string();
}

void print_latency_row(const char* name, const std::vector<double>& ms, double wall) {
  const Percentiles p = percentiles(ms);
  std::printf("| %-36s | %6zu | %8.2f | %8.2f | %8.2f | %8.1f |\n", name, p.n, p.p50, p.p99, p.max,
              wall > 0 ? static_cast<double>(p.n) / wall : 0.0);
}

// What the server looks like after the load: /metrics as a stranger and as agent a00's token sees
// it, /ready, memory, and how it stops.
struct EndState {
  std::size_t metrics_anonymous = 0;
  std::size_t metrics_token = 0;
  std::string ready;
  long hwm_kib = 0;
  long rss_end_kib = 0;
  int exit_code = 0;
  double stop_s = 0;
  std::uintmax_t log_bytes = 0;
};

EndState end_state(HttpServerProcess& server, const std::string& token, const std::string& log) {
  EndState end;
  try {
    HttpConnection connection(server.port());
    end.metrics_anonymous = connection.get("/metrics", {}, 10s).body.size();
    end.metrics_token =
        connection.get("/metrics", {{"Authorization", "Bearer " + token}}, 10s).body.size();
    const HttpResponse r = connection.get("/ready", {}, 10s);
    end.ready = "HTTP " + std::to_string(r.status) + " " + one_line(r.body, 200);
  } catch (const std::exception& e) {
    end.ready = std::string("no answer: ") + e.what();
  }
  end.hwm_kib = server.peak_rss_kib();
  end.rss_end_kib = server.rss_kib();
  const auto stop_start = Clock::now();
  end.exit_code = server.stop();
  end.stop_s = ms_since(stop_start) / 1000.0;
  std::error_code ec;
  const auto bytes = fs::file_size(log, ec);
  end.log_bytes = ec ? 0 : static_cast<std::uintmax_t>(bytes);
  return end;
}

// Every client's calls, added up.
struct Tally {
  long ok = 0, failed = 0, lost = 0;
  std::vector<double> by_phase[kPhases];
  std::string first_problem;
};

Tally tally(const std::vector<Client>& clients) {
  Tally t;
  for (const auto& c : clients) {
    t.ok += c.ok;
    t.failed += c.failed;
    t.lost += c.lost;
    for (int p = 0; p < kPhases; ++p)
      t.by_phase[p].insert(t.by_phase[p].end(), c.latencies[p].begin(), c.latencies[p].end());
    if (t.first_problem.empty()) t.first_problem = c.first_problem;
  }
  return t;
}

void print_latencies(const Tally& t, const double (&wall)[kPhases], const HealthProber& prober,
                     const FloodStats& flood_stats) {
  std::printf("\n| %-36s | %6s | %8s | %8s | %8s | %8s |\n", "latency (ms)", "calls", "p50", "p99",
              "max", "calls/s");
  std::printf("|%s|%s|%s|%s|%s|%s|\n", std::string(38, '-').c_str(), std::string(8, '-').c_str(),
              std::string(10, '-').c_str(), std::string(10, '-').c_str(),
              std::string(10, '-').c_str(), std::string(10, '-').c_str());
  print_latency_row("first call per client (warm-up)", t.by_phase[kWarmUp], wall[kWarmUp]);
  print_latency_row("calls, baseline (no flood)", t.by_phase[kBaseline], wall[kBaseline]);
  print_latency_row("calls, under flood", t.by_phase[kFlood], wall[kFlood]);
  print_latency_row("/health probe, baseline", prober.latencies(kBaseline), 0);
  print_latency_row("/health probe, under flood", prober.latencies(kFlood), 0);
  for (int k = 0; k < kFloodKinds; ++k) {
    const std::string name = "flood: " + std::string(kFloodNames[k]);
    print_latency_row(name.c_str(), flood_stats.latencies[k], wall[kFlood]);
  }
  std::printf("\n/health probes without an answer or not 200: baseline %ld, flood %ld\n",
              prober.failed(kBaseline), prober.failed(kFlood));
  std::printf("flood answers by status class (no answer / 1xx / 2xx / 3xx / 4xx / 5xx):\n");
  for (int k = 0; k < kFloodKinds; ++k) {
    const auto& c = flood_stats.by_class[k];
    std::printf("  %-30s %ld / %ld / %ld / %ld / %ld / %ld\n", kFloodNames[k], c[0], c[1], c[2],
                c[3], c[4], c[5]);
  }
}

void print_end_state(const EndState& end, const RssSampler& rss, bool side_agents) {
  std::printf(
      "\nserver RSS: peak %.1f MiB (VmHWM); sampled peak warm-up %.1f, baseline %.1f, flood "
      "%.1f MiB; %.1f MiB at the end\n",
      static_cast<double>(end.hwm_kib) / 1024.0,
      static_cast<double>(rss.peak_kib(kWarmUp)) / 1024.0,
      static_cast<double>(rss.peak_kib(kBaseline)) / 1024.0,
      static_cast<double>(rss.peak_kib(kFlood)) / 1024.0,
      static_cast<double>(end.rss_end_kib) / 1024.0);
  std::printf("/metrics body at the end: %zu bytes without credentials, %zu with a00's token\n",
              end.metrics_anonymous, end.metrics_token);
  std::printf("/ready at the end: %s\n", end.ready.c_str());
  std::printf("server log: %ju bytes; SIGTERM -> exit %d after %.2f s\n", end.log_bytes,
              end.exit_code, end.stop_s);
  if (end.exit_code != 0)
    std::printf("WARN: the server did not exit 0 within 10 s of SIGTERM (-1: killed)%s\n",
                side_agents ? "; the side agents' engine sockets never answer (--log FILE shows "
                              "what it waited for)"
                            : "");
}

void print_log_tail(const std::string& log) {
  std::ifstream in(log);
  std::string line;
  std::vector<std::string> tail;
  while (std::getline(in, line)) {
    tail.push_back(line);
    if (tail.size() > 20) tail.erase(tail.begin());
  }
  std::fprintf(stderr, "--- the server log's last lines ---\n");
  for (const auto& l : tail) std::fprintf(stderr, "%s\n", one_line(l, 400).c_str());
}

int run(const Options& opt) {
  if (!fs::exists(opt.bin))
    throw std::runtime_error("no execmcp binary at " + opt.bin + " (--bin)");
  // The build tree keeps plugins in ../lib/execmcp/plugins beside bin/; tell the server if unset.
  const fs::path plugin_dir =
      fs::absolute(opt.bin).parent_path().parent_path() / "lib" / "execmcp" / "plugins";
  if (!std::getenv("EXECMCP_PLUGIN_PATH") && fs::exists(plugin_dir))
    setenv("EXECMCP_PLUGIN_PATH", plugin_dir.c_str(), 1);
  const bool side_agents = opt.side_agents && docker_api_plugin_available();

  const Workspace w;
  // One token per agent, passed as `env:` (the server reads, hashes and wipes them).
  std::vector<std::string> tokens;
  std::vector<std::string> token_vars;
  for (int i = 0; i <= opt.agents; ++i) {
    tokens.push_back("load-" + random_hex(24));
    token_vars.push_back("EXECMCP_LOAD_TOKEN_" + std::to_string(i));
    setenv(token_vars.back().c_str(), tokens.back().c_str(), 1);
  }
  std::unique_ptr<SilentSocket> silent;
  if (side_agents) silent = std::make_unique<SilentSocket>(w.root / "slow.sock");
  const std::string config = write_config(w, opt, token_vars, side_agents);
  const std::string log = opt.log.empty() ? (w.root / "server.stderr.log").string() : opt.log;

  const int clients_total = opt.agents * opt.clients_per_agent;
  std::printf(
      "execmcp_load_bench: bin %s; %d local agents x %d clients = %d clients, %d calls each "
      "per phase in %d round(s); %d stranger thread(s); side agents: %s; %u cpus\n\n",
      opt.bin.c_str(), opt.agents, opt.clients_per_agent, clients_total, opt.calls, opt.rounds,
      opt.strangers,
      side_agents       ? "slow (an engine socket that never answers) and broken (no socket)"
      : opt.side_agents ? "none (no execmcp_docker_api.so in EXECMCP_PLUGIN_PATH)"
                        : "none (--no-side-agents)",
      std::thread::hardware_concurrency());
  std::fflush(stdout);

  const auto started = Clock::now();
  HttpServerProcess server(opt.bin, config, {}, log);
  const double listen_ms = ms_since(started);
  const std::uint16_t port = server.port();

  std::atomic<int> phase{kWarmUp};
  RssSampler rss(server, phase);
  HealthProber prober(port, phase);
  std::vector<std::unique_ptr<SideClient>> side;
  if (side_agents) {
    side.push_back(std::make_unique<SideClient>(port, "slow", tokens.back()));
    side.push_back(std::make_unique<SideClient>(port, "broken", tokens.back()));
    std::this_thread::sleep_for(300ms);  // the slow agent's start is under way
  }

  std::vector<Client> clients(static_cast<std::size_t>(clients_total));
  for (int i = 0; i < clients_total; ++i) {
    auto& c = clients[static_cast<std::size_t>(i)];
    c.agent = agent_id(i / opt.clients_per_agent);
    c.token = tokens[static_cast<std::size_t>(i / opt.clients_per_agent)];
    c.next_id = static_cast<long>(i) * 1'000'000 + 1;
  }

  // Warm-up: every agent's first call starts it (while the slow one hangs in its start).
  const double warm_wall = run_clients(clients, port, 1, kWarmUp);
  double wall[kPhases] = {warm_wall, 0, 0};
  FloodStats flood_stats;
  const int per_round = std::max(1, opt.calls / opt.rounds);
  for (int round = 0; round < opt.rounds; ++round) {
    phase = kBaseline;
    wall[kBaseline] += run_clients(clients, port, per_round, kBaseline);
    phase = kFlood;
    Flood flood(port, opt.strangers, clients.front().agent, clients.front().token);
    wall[kFlood] += run_clients(clients, port, per_round, kFlood);
    flood.stop();
    const FloodStats s = flood.merged();
    for (int k = 0; k < kFloodKinds; ++k) {
      flood_stats.latencies[k].insert(flood_stats.latencies[k].end(), s.latencies[k].begin(),
                                      s.latencies[k].end());
      for (int c = 0; c < 6; ++c) flood_stats.by_class[k][c] += s.by_class[k][c];
    }
  }
  prober.stop();
  for (auto& s : side) s->stop();
  rss.stop();

  const EndState end = end_state(server, tokens.front(), log);
  const Tally t = tally(clients);
  const long expected = static_cast<long>(clients_total) * (1 + 2L * per_round * opt.rounds);

  std::printf("server listening after %.0f ms, port %u\n\n", listen_ms, port);
  std::printf(
      "authenticated execute_command(\"true\") calls: %ld sent, %ld ok, %ld failed, %ld lost\n",
      expected, t.ok, t.failed, t.lost);
  if (!t.first_problem.empty()) std::printf("first problem: %s\n", t.first_problem.c_str());
  print_latencies(t, wall, prober, flood_stats);
  if (!side.empty()) {
    std::printf("side agents (their calls are not counted above):\n");
    for (const auto& s : side) s->print();
  }
  print_end_state(end, rss, side_agents);

  const bool all_answered = t.failed == 0 && t.lost == 0 && t.ok == expected;
  std::printf("\n%s\n", all_answered ? "PASS: every authenticated call was answered correctly"
                                     : "FAIL: authenticated calls failed or were lost");
  if (!all_answered) print_log_tail(log);
  return all_answered ? 0 : 1;
}

void usage() {
  std::puts(
      "usage: execmcp_load_bench [--bin PATH] [--agents N] [--clients-per-agent N] [--calls N]\n"
      "                          [--rounds N] [--strangers N] [--no-side-agents] [--log FILE]\n"
      "  --bin PATH              execmcp binary (default: execmcp next to this program)\n"
      "  --agents N              local agents, each with its own workspace and token (16)\n"
      "  --clients-per-agent N   keep-alive clients per agent, one thread each (4)\n"
      "  --calls N               calls per client in the baseline, and again under flood (200)\n"
      "  --rounds N              baseline and flood alternate N times (4)\n"
      "  --strangers N           flooding threads without credentials (4)\n"
      "  --no-side-agents        leave out the docker-api agents whose start hangs or fails\n"
      "  --log FILE              keep the server's log (stderr) in FILE");
}

Options parse(int argc, char** argv) {
  Options opt;
  opt.bin = sibling_execmcp();
  Args(usage)
      .text("--bin", opt.bin)
      .count("--agents", opt.agents)
      .count("--clients-per-agent", opt.clients_per_agent)
      .count("--calls", opt.calls)
      .count("--rounds", opt.rounds)
      .count("--strangers", opt.strangers)
      .text("--log", opt.log)
      .flag("--no-side-agents", opt.side_agents, false)
      .parse(argc, argv);
  opt.agents = std::min(opt.agents, 99);
  opt.rounds = std::min(opt.rounds, opt.calls);
  return opt;
}

}  // namespace
}  // namespace execmcp::bench

int main(int argc, char** argv) {
  return execmcp::bench::run_main(
      "execmcp_load_bench", [&] { return execmcp::bench::run(execmcp::bench::parse(argc, argv)); });
}
