// execmcp_egress_secrets_bench: what a secret held by the egress proxy costs (issue 30): an HTTPS
// GET of 1 KiB from inside a docker-api agent to a host named by a secret (intercepted: the
// injector's leaf, the value put in, a second TLS leg upstream) against the same GET to a host the
// same proxy passes through (a CONNECT tunnel), in one run; then a new agent's first intercepted
// request, start() with and without the secret, and the proxy's memory (see README.md). Loads the
// docker-api plugin the way the host does (Boost.DLL).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
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
constexpr const char* kTokenVariable = "EXECMCP_BENCH_TOKEN";  // the secret's `from: env:`
constexpr const char* kSecretHost = "api.test";                // named by the secret
constexpr const char* kPassedHost = "mirror.test";             // allowed, passed through

using Options = CurlBenchOptions;

// `n` random letters and digits: the secret's value, made anew by each run.
std::string random_token(std::size_t n) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device random;
  std::uniform_int_distribution<std::size_t> pick(0, sizeof kAlphabet - 2);
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += kAlphabet[pick(random)];
  return out;
}

// The upstream's HTTPS server: /1k is 1 KiB; a request for api.test without the value in
// Authorization gets 401, so a curl that succeeds there proves the injection. HTTP/1.1 keep-alive,
// as an API would, so the injector can keep its upstream connection.
constexpr const char* kUpstreamScript = R"PY(import hmac, http.server, ssl, sys
cert, key, auth = sys.argv[1:4]
with open(auth, "rb") as f:
    want = b"Bearer " + f.read().strip()
body = b"x" * 1024
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the headers and the body are two writes
    def do_GET(self):
        host = (self.headers.get("Host") or "").split(":")[0]
        got = (self.headers.get("Authorization") or "").encode()
        if self.path != "/1k":
            code, data = 404, b"not found\n"
        elif host == "api.test" and not hmac.compare_digest(got, want):
            code, data = 401, b"no or a wrong Authorization\n"
        else:
            code, data = 200, body
        self.send_response(code)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args):
        pass
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server = http.server.ThreadingHTTPServer(("", 443), Handler)
server.socket = context.wrap_socket(server.socket, server_side=True)
print("secrets-bench-upstream: listening", flush=True)
server.serve_forever()
)PY";

// The test CA (P-256) and the upstream's certificate for api.test and mirror.test, made with
// `openssl` in `dir`; only this process's user reads the keys and the value (the upstream runs as
// that user, without capabilities).
void make_certificates(const fs::path& dir) {
  std::ofstream(dir / "server.ext")
      << "subjectAltName=DNS:api.test,DNS:mirror.test\nbasicConstraints=critical,CA:FALSE\n"
         "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n";
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
  int status = 0;
  const std::string out = capture(
      "{ cd '" + dir.string() + "' && umask 077 && openssl req -x509" + ec +
          " -keyout ca.key -out ca.pem -days 2 -subj '/CN=execmcp secrets bench CA' -addext "
          "basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign && "
          "openssl req -new" +
          ec +
          " -keyout server.key -out server.csr -subj '/CN=execmcp secrets bench upstream' && "
          "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out "
          "server.pem -days 2 -extfile server.ext && chmod 644 ca.pem && echo made; } 2>&1",
      &status);
  if (status != 0 || out.find("made") == std::string::npos)
    throw std::runtime_error("openssl could not make the test CA: " + out);
}

// The upstream: a network of its own (--internal: nothing leaves the machine) and one container
// serving HTTPS under both names; removed at the end.
class Upstream {
 public:
  Upstream(const Options& opt, const fs::path& dir, const std::string& value)
      : prefix_("execmcp-secretsbench-" + std::to_string(::getpid())) {
    make_certificates(dir);
    std::ofstream(dir / "upstream.py") << kUpstreamScript;
    {
      std::ofstream auth(dir / "auth");
      ::chmod((dir / "auth").c_str(), 0600);
      auth << value;
    }
    int status = 0;
    capture("docker network create --internal --label " + prefix_ + " " + network(), &status);
    if (status != 0) throw std::runtime_error("cannot create the network " + network());
    capture("docker run -d --name " + server() + " --label " + prefix_ + " --network " + network() +
                " --network-alias " + kSecretHost + " --network-alias " + kPassedHost + " --user " +
                std::to_string(::getuid()) + ":" + std::to_string(::getgid()) + " -v " +
                dir.string() +
                ":/upstream:ro --read-only --cap-drop ALL --security-opt no-new-privileges " +
                opt.image +
                " python3 /upstream/upstream.py /upstream/server.pem /upstream/server.key "
                "/upstream/auth",
            &status);
    if (status != 0) throw std::runtime_error("cannot start the upstream server");
    for (int i = 0; i < 200; ++i) {
      if (capture("docker logs " + server() + " 2>&1").find("listening") != std::string::npos)
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("the upstream server did not listen: " +
                             capture("docker logs " + server() + " 2>&1"));
  }
  ~Upstream() {
    capture("docker rm -f " + server());
    capture("docker network rm " + network());
  }
  Upstream(const Upstream&) = delete;
  Upstream& operator=(const Upstream&) = delete;
  [[nodiscard]] std::string network() const { return prefix_ + "-up"; }
  [[nodiscard]] std::string server() const { return prefix_ + "-https"; }

 private:
  std::string prefix_;
};

// The agent's settings: `network: egress` to both names, with or without the one secret (and the
// upstream CA only the injector uses).
BackendInit init_for(const std::string& agent, const std::string& ws, const Options& opt,
                     const std::string& network, const std::string& ca, bool with_secret) {
  BackendInit init;
  init.agent_id = agent;
  init.instance_id = "b" + std::to_string(::getpid());
  init.cwd = ws;
  init.paths = {{ws, true}};
  std::string egress =
      R"({"allow": ["api.test", "mirror.test"], "upstream_network": ")" + network + "\"";
  if (with_secret)
    egress += R"(, "upstream_ca": ")" + ca +
              R"(", "secrets": [{"name": "API_TOKEN", "from": "env:)" + kTokenVariable +
              R"(", "hosts": ["api.test"], "header": "Authorization"}])";
  init.settings_json =
      R"({"image": ")" + opt.image + R"(", "network": "egress", "egress": )" + egress + "}}";
  return init;
}

std::string proxy_of(const std::string& agent) {
  return "execmcp-" + agent + "-b" + std::to_string(::getpid()) + "-egress";
}

std::string run_in(ExecutorBackend& agent, const std::string& command) {
  ExecRequest req;
  req.command = command;
  req.timeout = std::chrono::seconds(120);
  const auto r = agent.execute(req);
  if (!r.error.empty() || r.exit_code != 0)
    throw std::runtime_error("`" + command.substr(0, 60) + "...` in the agent: " + r.error +
                             " exit " + std::to_string(r.exit_code) + " " + r.stdout_data +
                             r.stderr_data);
  return r.stdout_data;
}

// One curl of /1k from `host` printing its total and TLS-established times in seconds, with the
// placeholder in Authorization; `cacert` (a shell word) replaces the sandbox's bundle, which
// curl reads from CURL_CA_BUNDLE otherwise.
std::string curl_of(const std::string& host, const std::string& cacert) {
  return "curl -s -f -o /dev/null -w '%{time_total} %{time_appconnect}\\n' -H \"Authorization: "
         "Bearer $API_TOKEN\"" +
         (cacert.empty() ? std::string() : " --cacert " + cacert) + " https://" + host + "/1k";
}

std::string curls(int n, const std::string& host, const std::string& cacert) {
  return "for i in $(seq " + std::to_string(n) + "); do " + curl_of(host, cacert) +
         " || exit 1; done";
}

// Until one curl succeeds (every 20 ms, 400 tries): its two times and the number of tries.
std::string first_curl(const std::string& host, const std::string& cacert) {
  return "n=0; while [ $n -lt 400 ]; do n=$((n+1)); out=$(" + curl_of(host, cacert) +
         ") && { echo \"$out $n\"; exit 0; }; sleep 0.02; done; exit 1";
}

// One side's curls, in milliseconds.
struct Samples {
  std::vector<double> total, appconnect;
};

void add_times(const std::string& out, Samples& s) {
  std::istringstream in(out);
  for (double total = 0, appconnect = 0; in >> total >> appconnect;) {
    s.total.push_back(total * 1000.0);
    s.appconnect.push_back(appconnect * 1000.0);
  }
}

// The proxy's memory: its cgroup's (`docker stats`), and each process's resident size (`docker
// top`, host pids); the injector is the process whose command starts with "execmcp".
struct Memory {
  std::string cgroup;
  double rss_mib = 0, injector_mib = -1;
  std::string processes;  // "comm rss, ..."
};

Memory proxy_memory(const std::string& proxy) {
  Memory m;
  m.cgroup = output_of("docker stats --no-stream --format '{{.MemUsage}}' " + proxy);
  std::istringstream in(capture("docker top " + proxy + " -o pid,rss,comm"));
  std::string line;
  std::getline(in, line);  // the header
  for (long pid = 0, kib = 0; in >> pid >> kib && std::getline(in, line);) {
    const std::string comm = line.substr(std::min(line.size(), line.find_first_not_of(' ')));
    const double mib = static_cast<double>(kib) / 1024.0;
    m.rss_mib += mib;
    if (comm.rfind("execmcp", 0) == 0) m.injector_mib = std::max(m.injector_mib, 0.0) + mib;
    char row[128];
    std::snprintf(row, sizeof row, "%s%s %.1f", m.processes.empty() ? "" : ", ", comm.c_str(), mib);
    m.processes += row;
  }
  return m;
}

// What a new agent costs with and without the secret; medians of `opt.starts` each.
struct Starts {
  double plain_ms = 0, secret_ms = 0;                  // start()
  double secret_ready_ms = 0, plain_ready_ms = 0;      // start()'s return to the first curl
  double first_total_ms = 0, first_appconnect_ms = 0;  // that intercepted curl's own times
  double first_tries = 0;
  Memory plain_memory, secret_memory;  // the first agent of each, after its first curl
};

struct StartSamples {
  std::vector<double> plain, secret, secret_ready, plain_ready, total, appconnect, tries;
};

void start_one(Plugin& plugin, const Options& opt, const std::string& ws, const Upstream& upstream,
               int i, bool with_secret, StartSamples& s, Starts& result) {
  const std::string id = (with_secret ? "benchsecstart" : "benchnosecstart") + std::to_string(i);
  const std::string ca = ws + "/upstream-ca.pem";
  auto agent = plugin.create(init_for(id, ws, opt, upstream.network(), ca, with_secret));
  struct Cleanup {
    ExecutorBackend& agent;
    ~Cleanup() { agent.cleanup(); }
  } cleanup{*agent};
  const auto t0 = Clock::now();
  if (const std::string error = agent->start(); !error.empty())
    throw std::runtime_error("start (" + id + "): " + error);
  (with_secret ? s.secret : s.plain).push_back(ms_since(t0));
  // With the secret, api.test is intercepted; without it, passed through like mirror.test.
  const auto t1 = Clock::now();
  const std::string out =
      run_in(*agent, with_secret ? first_curl(kSecretHost, "") : first_curl(kPassedHost, ca));
  (with_secret ? s.secret_ready : s.plain_ready).push_back(ms_since(t1));
  if (with_secret) {
    std::istringstream in(out);
    double total = 0, appconnect = 0, tries = 0;
    in >> total >> appconnect >> tries;
    s.total.push_back(total * 1000.0);
    s.appconnect.push_back(appconnect * 1000.0);
    s.tries.push_back(tries);
  }
  if (i == 0)
    (with_secret ? result.secret_memory : result.plain_memory) = proxy_memory(proxy_of(id));
}

// start() of the agent without the secret and with it, taking turns; after each, from start()'s
// return to its first curl that succeeds.
Starts measure_starts(Plugin& plugin, const Options& opt, const std::string& ws,
                      const Upstream& upstream) {
  StartSamples s;
  Starts r;
  for (int i = 0; i < opt.starts; ++i)
    for (const bool with_secret : {false, true})
      start_one(plugin, opt, ws, upstream, i, with_secret, s, r);
  r.plain_ms = median(s.plain);
  r.secret_ms = median(s.secret);
  r.secret_ready_ms = median(s.secret_ready);
  r.plain_ready_ms = median(s.plain_ready);
  r.first_total_ms = median(s.total);
  r.first_appconnect_ms = median(s.appconnect);
  r.first_tries = median(s.tries);
  return r;
}

// That the two routes are what they are meant to be: api.test answers with the agent's own CA
// (the test CA alone refuses it) and mirror.test with the upstream's (the agent's bundle alone
// refuses it). Then the bundle for the passed-through pair: the sandbox's and the test CA. Throws
// when a check fails.
void check_routes(ExecutorBackend& agent, const std::string& ca_in_ws,
                  const std::string& bundle_in_ws) {
  run_in(
      agent,
      "[ -n \"$API_TOKEN\" ] && [ -f \"$CURL_CA_BUNDLE\" ] && [ -f \"$NODE_EXTRA_CA_CERTS\" ] || "
      "{ echo API_TOKEN, CURL_CA_BUNDLE or NODE_EXTRA_CA_CERTS is not set; exit 1; }; "
      "! curl -s -o /dev/null --cacert " +
          ca_in_ws +
          " https://api.test/1k || { echo api.test is not intercepted; exit 1; }; "
          "! curl -s -o /dev/null https://mirror.test/1k || { echo mirror.test is not passed "
          "through; exit 1; }; cat \"$CURL_CA_BUNDLE\" " +
          ca_in_ws + " > " + bundle_in_ws);
}

std::size_t injected_events(const std::string& proxy) {
  return static_cast<std::size_t>(std::atol(
      output_of("docker logs " + proxy + " 2>&1 | grep -c 'execmcp-secret [^ ]* injected '")
          .c_str()));
}

void usage() {
  std::puts(
      "usage: execmcp_egress_secrets_bench [--plugin PATH] [--image REF] [--samples N]\n"
      "                                    [--batch N] [--starts N]\n"
      "  --plugin PATH   the docker-api plugin (default: the one built with this program)\n"
      "  --image REF     image of the agent and the upstream (default execmcp/runtime:latest:\n"
      "                  it has curl and python3)\n"
      "  --samples N     curls per side (default 200)\n"
      "  --batch N       curls per call; the two sides alternate call by call (default 10)\n"
      "  --starts N      agents started with and without the secret for the medians (default 3)\n"
      "Exit 77 (skip) when no Docker engine answers, an image or openssl is missing.");
}

Options parse(int argc, char** argv) {
  return parse_curl_bench_options(argc, argv, usage);
}

bool can_run(const Options& opt) {
  const char* gate = std::getenv("EXECMCP_DOCKER_TESTS");
  if (gate != nullptr && std::string(gate) == "0") {
    std::puts("execmcp_egress_secrets_bench: skipped (EXECMCP_DOCKER_TESTS=0)");
    return false;
  }
  if (spawn_quiet({"openssl", "version"}) != 0) {
    std::puts("execmcp_egress_secrets_bench: skipped: openssl is missing (it makes the test CA)");
    return false;
  }
  if (spawn_quiet({"docker", "info"}) != 0 ||
      spawn_quiet({"docker", "image", "inspect", opt.image}) != 0 ||
      spawn_quiet({"docker", "image", "inspect", kEgressImage}) != 0) {
    std::printf(
        "execmcp_egress_secrets_bench: skipped: no Docker engine answers, or image %s or %s is "
        "missing (scripts/docker-engine.sh start, docker/build.sh --egress)\n",
        opt.image.c_str(), kEgressImage);
    return false;
  }
  return true;
}

// One side of the comparison: a host and the trust file curl is given.
struct Side {
  const char* label;
  const char* host;
  std::string cacert;  // "" for the sandbox's bundle (CURL_CA_BUNDLE)
  Samples samples;
};

// Two pairs, each intercepted against passed through with trust files of the same size: curl
// reads its whole CA file for each connection, and the sandbox's bundle (the system's roots and the
// agent's CA, about 220 KB) costs some 20 ms here, a CA alone nothing.
std::vector<Side> sides_of(const std::string& ca_in_ws, const std::string& bundle_in_ws) {
  return {{"mirror.test, passed through; --cacert the test CA", kPassedHost, ca_in_ws, {}},
          {"api.test, intercepted; --cacert the agent's CA ($NODE_EXTRA_CA_CERTS)",
           kSecretHost,
           "\"$NODE_EXTRA_CA_CERTS\"",
           {}},
          {"mirror.test, passed through; --cacert the sandbox's bundle + the test CA",
           kPassedHost,
           bundle_in_ws,
           {}},
          {"api.test, intercepted; the sandbox's bundle (CURL_CA_BUNDLE: no option)",
           kSecretHost,
           "",
           {}}};
}

void print_row(const Side& side, const Side& base) {
  const Percentiles p = percentiles(side.samples.total), b = percentiles(base.samples.total);
  std::printf("| %s | %zu | %.2f | %.2f | %.2f | %.2fx | %.2f |\n", side.label, p.n, p.p50, p.p90,
              p.max, b.p50 > 0 ? p.p50 / b.p50 : 0, percentiles(side.samples.appconnect).p50);
}

// The table, then the issue's goal for each pair: intercepted p50 <= 1.5x passed-through p50.
void print_latency(const std::vector<Side>& sides) {
  std::printf(
      "\n| HTTPS GET of 1 KiB from the agent (time_total) | curls | p50 ms | p90 ms | max ms | "
      "p50 / its pair's passed through | time_appconnect p50 ms "
      "|\n|---|---|---|---|---|---|---|\n");
  for (std::size_t k = 0; k < sides.size(); ++k) print_row(sides[k], sides[k - k % 2]);
  for (std::size_t k = 0; k + 1 < sides.size(); k += 2) {
    const Percentiles p = percentiles(sides[k].samples.total);
    const Percentiles i = percentiles(sides[k + 1].samples.total);
    const double ratio = p.p50 > 0 ? i.p50 / p.p50 : 0;
    std::printf(
        "\ngoal, %s: intercepted p50 <= 1.5x passed-through p50: %.2f / %.2f = %.2fx %s; added by "
        "the interception: p50 %+.2f ms, p90 %+.2f ms\n",
        k == 0 ? "each CA alone" : "the sandbox's bundle", i.p50, p.p50, ratio,
        ratio <= 1.5 ? "MET" : "NOT MET", i.p50 - p.p50, i.p90 - p.p90);
  }
}

// RSS counts the shared libraries of each process again; the cgroup's figure is what one more
// agent's proxy costs the machine.
void print_memory(const Memory& idle, const Memory& loaded, const Starts& starts) {
  std::printf(
      "\n| the proxy of one agent | cgroup memory (docker stats) | RSS sum MiB | injector RSS MiB "
      "| processes (comm RSS MiB) |\n|---|---|---|---|---|\n");
  const std::vector<std::pair<const char*, const Memory*>> rows = {
      {"without the secret, after its first curl", &starts.plain_memory},
      {"with the secret, after its first curl", &starts.secret_memory},
      {"with the secret, idle after start (the measured agent)", &idle},
      {"with the secret, after the measured curls", &loaded}};
  for (const auto& [when, m] : rows) {
    char injector[32] = "-";
    if (m->injector_mib >= 0) std::snprintf(injector, sizeof injector, "%.1f", m->injector_mib);
    std::printf("| %s | %s | %.1f | %s | %s |\n", when, m->cgroup.c_str(), m->rss_mib, injector,
                m->processes.c_str());
  }
}

void print_starts(const Options& opt, const Starts& s, const Samples& intercepted) {
  const double p50 = percentiles(intercepted.total).p50;
  std::printf("\n| a new agent, median of %d | ms |\n|---|---|\n", opt.starts);
  std::printf("| start(), network: egress without the secret | %.0f |\n", s.plain_ms);
  std::printf("| start(), with the secret (CA and leaf minted, bundle delivered) | %.0f |\n",
              s.secret_ms);
  std::printf("| with the secret - without | %+.0f |\n", s.secret_ms - s.plain_ms);
  std::printf("| without the secret: start()'s return to the first curl that succeeds | %.0f |\n",
              s.plain_ready_ms);
  std::printf(
      "| with the secret: start()'s return to the first intercepted curl that succeeds | %.0f "
      "|\n",
      s.secret_ready_ms);
  std::printf(
      "| that first intercepted curl: time_total (tries: %.0f) | %.2f (%.2fx the p50 %.2f) |\n",
      s.first_tries, s.first_total_ms, p50 > 0 ? s.first_total_ms / p50 : 0, p50);
  std::printf("| that first intercepted curl: time_appconnect | %.2f |\n", s.first_appconnect_ms);
}

// The measured agent: warm-up, the route check, then the sides in turn, call by call, the order
// rotating.
void measure_latency(ExecutorBackend& agent, const Options& opt, std::vector<Side>& sides,
                     const std::string& ca_in_ws, const std::string& bundle_in_ws) {
  run_in(agent, first_curl(kSecretHost, ""));
  check_routes(agent, ca_in_ws, bundle_in_ws);
  for (const Side& side : sides) run_in(agent, curls(5, side.host, side.cacert));
  for (int done = 0; done < opt.samples; done += opt.batch) {
    const int n = std::min(opt.batch, opt.samples - done);
    const std::size_t first = static_cast<std::size_t>(done / opt.batch);
    for (std::size_t k = 0; k < sides.size(); ++k) {
      Side& side = sides[(first + k) % sides.size()];
      add_times(run_in(agent, curls(n, side.host, side.cacert)), side.samples);
    }
  }
}

int run(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  if (!can_run(opt)) return kSkipped;
  if (opt.plugin.empty() || !fs::exists(opt.plugin))
    throw std::runtime_error("no docker-api plugin (" + opt.plugin + "): give --plugin PATH");
  Plugin plugin(opt.plugin);
  const std::string value = random_token(40);
  ::setenv(kTokenVariable, value.c_str(), 1);
  const TempDir certs("execmcp-secretsbench-up-");
  const TempDir ws("execmcp-secretsbench-ws-");
  ::chmod(ws.root.c_str(), 0755);  // the container user reaches its workspace through it
  std::printf("execmcp_egress_secrets_bench: image %s, %u cpus, load average at the start %s\n",
              opt.image.c_str(), std::thread::hardware_concurrency(), load_average().c_str());
  std::fflush(stdout);

  const Upstream upstream(opt, certs.root, value);
  const std::string ca_in_ws = (ws.root / "upstream-ca.pem").string();
  fs::copy_file(certs.root / "ca.pem", ca_in_ws);
  ::chmod(ca_in_ws.c_str(), 0644);
  auto agent = plugin.create(
      init_for("benchsecrets", ws.root.string(), opt, upstream.network(), ca_in_ws, true));
  struct Cleanup {
    ExecutorBackend& agent;
    ~Cleanup() { agent.cleanup(); }
  } cleanup{*agent};
  if (const auto error = agent->start(); !error.empty())
    throw std::runtime_error("start: " + error);
  const std::string proxy = proxy_of("benchsecrets");
  const Memory idle = proxy_memory(proxy);

  const std::string bundle_in_ws = (ws.root / "bundle-and-upstream-ca.pem").string();
  std::vector<Side> sides = sides_of(ca_in_ws, bundle_in_ws);
  measure_latency(*agent, opt, sides, ca_in_ws, bundle_in_ws);
  const Samples& intercepted = sides.back().samples;
  const Memory loaded = proxy_memory(proxy);
  const std::size_t injected = injected_events(proxy);
  std::fprintf(stderr, "  start times\n");
  const Starts starts = measure_starts(plugin, opt, ws.root.string(), upstream);

  print_latency(sides);
  std::printf(
      "\n`injected` lines in the measured proxy's log: %zu, for %zu intercepted curls measured and "
      "11 or more before (each succeeded: the upstream answers 401 without the value)\n",
      injected, sides[1].samples.total.size() + sides[3].samples.total.size());
  print_memory(idle, loaded, starts);
  print_starts(opt, starts, intercepted);
  std::printf("\nload average at the end: %s\n", load_average().c_str());
  return 0;
}

}  // namespace
}  // namespace execmcp::bench

int main(int argc, char** argv) {
  return execmcp::bench::run_main("execmcp_egress_secrets_bench",
                                  [&] { return execmcp::bench::run(argc, argv); });
}
