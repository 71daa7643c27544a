// Evidence, on the real engine and from inside a `network: egress` agent, that its proxy is the
// only way out: this machine's own services are out of reach (no usable route off the agent's
// network), a package installs from an allowed index only, and each way around the proxy's policy
// (raw sockets, DNS, no proxy variables, other ports, a forged Host header, the routing table)
// gets nowhere. Offline: the upstreams are containers on an --internal test network of their own.
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <vector>

#include "docker_test_support.hpp"

namespace execmcp::docker_test {
namespace {

constexpr const char* kEgressImage = "execmcp/egress:latest";

std::string inspect(const std::string& what, const std::string& format) {
  return trim(sh(outside_cli() + " inspect -f '" + format + "' " + what));
}

std::string address_on(const std::string& container, const std::string& network) {
  return inspect(container, "{{(index .NetworkSettings.Networks \"" + network + "\").IPAddress}}");
}

// Writes tinypkg 1.0 as a wheel and a PEP 503 index of it under `root` (simple/, packages/), the
// wheel made by hand with Python's zipfile, its RECORD hashed as pip checks it.
void write_package_index(const std::string& root) {
  const std::string script = R"PY(
import base64, hashlib, os, sys, zipfile
root = sys.argv[1]
files = {
    "tinypkg/__init__.py": b"VALUE = 'tinypkg works'\n",
    "tinypkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
    "tinypkg-1.0.dist-info/WHEEL":
        b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
def digest(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
record = "".join(f"{n},sha256={digest(d)},{len(d)}\n" for n, d in files.items())
files["tinypkg-1.0.dist-info/RECORD"] = (record + "tinypkg-1.0.dist-info/RECORD,,\n").encode()
os.makedirs(f"{root}/packages")
os.makedirs(f"{root}/simple/tinypkg")
wheel = f"{root}/packages/tinypkg-1.0-py3-none-any.whl"
with zipfile.ZipFile(wheel, "w") as z:
    for n, d in files.items():
        z.writestr(n, d)
sha = hashlib.sha256(open(wheel, "rb").read()).hexdigest()
open(f"{root}/simple/index.html", "w").write('<a href="tinypkg/">tinypkg</a>\n')
open(f"{root}/simple/tinypkg/index.html", "w").write(
    f'<a href="../../packages/tinypkg-1.0-py3-none-any.whl#sha256={sha}">'
    "tinypkg-1.0-py3-none-any.whl</a>\n")
)PY";
  const std::string script_path = root + "/../make_index.py";
  std::ofstream(script_path) << script;
  sh("python3 " + script_path + " " + root);
  fs::remove(script_path);
}

// Two servers on ports 80 and 8080 of a test network of their own: "allowed" (names allowed.test
// and pypi.test, the agent's allow list) and "denied" (denied.test and mirror.test). Each serves a
// directory with the tinypkg index and a file `name` that says which server answered.
class Upstreams {
 public:
  Upstreams() : prefix_("execmcp-egressbypass-" + std::to_string(::getpid())), dir_("egressup") {
    sh(outside_cli() + " network create --internal --label " + prefix_ + " " + network());
    for (const char* server : {"allowed", "denied"}) {
      const std::string root = dir_.path() + "/" + server;
      fs::create_directories(root);
      write_package_index(root);
      std::ofstream(root + "/name") << server << '\n';
      sh("chmod -R a+rX " + root);
      const std::string aliases = std::string(server) == "allowed"
                                      ? " --network-alias allowed.test --network-alias pypi.test"
                                      : " --network-alias denied.test --network-alias mirror.test";
      sh(outside_cli() + " run -d --name " + prefix_ + "-" + server + " --label " + prefix_ +
         " --network " + network() + aliases + " -v " + root +
         ":/srv:ro --read-only --cap-drop ALL --security-opt no-new-privileges " + kImage +
         " sh -c 'python3 -m http.server 8080 -d /srv & exec python3 -m http.server 80 -d /srv'");
    }
  }
  ~Upstreams() {
    sh(outside_cli() + " rm -f " + prefix_ + "-allowed " + prefix_ + "-denied");
    sh(outside_cli() + " network rm " + network());
  }
  Upstreams(const Upstreams&) = delete;
  Upstreams& operator=(const Upstreams&) = delete;

  [[nodiscard]] std::string network() const { return prefix_ + "-up"; }
  [[nodiscard]] std::string address_of(const std::string& server) const {
    return address_on(prefix_ + "-" + server, network());
  }

 private:
  std::string prefix_;
  TempDir dir_;
};

// A TCP listener of this machine on 0.0.0.0 at an ephemeral port: what a developer's database or
// dev server looks like to a container.
class HostListener {
 public:
  HostListener() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 64) != 0)
      return;
    socklen_t len = sizeof addr;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
      port_ = ntohs(addr.sin_port);
  }
  ~HostListener() { ::close(fd_); }
  HostListener(const HostListener&) = delete;
  HostListener& operator=(const HostListener&) = delete;

  [[nodiscard]] int port() const { return port_; }
  // How many connections arrived since the last call (waits up to `wait_ms` for the first).
  int accepted(int wait_ms = 500) {
    pollfd p{fd_, POLLIN, 0};
    int n = 0;
    if (::poll(&p, 1, wait_ms) <= 0) return 0;
    for (int c = ::accept(fd_, nullptr, nullptr); c >= 0; c = ::accept(fd_, nullptr, nullptr)) {
      ::close(c);
      ++n;
    }
    return n;
  }

 private:
  int fd_;
  int port_ = 0;
};

// This machine's IPv4 addresses, loopback left out.
std::set<std::string> machine_addresses() {
  std::set<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (auto* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    if (!std::string(text).starts_with("127.")) out.insert(text);
  }
  ::freeifaddrs(list);
  return out;
}

// A shell command that tries a TCP connection to each target at `port`, all at once, and prints
// "<target> CONNECTED" or "<target> <error>" for each (3 s each at most).
std::string connect_each(const std::vector<std::string>& targets, int port) {
  std::string list;
  for (const auto& t : targets) list += "'" + t + "',";
  return "python3 -c \"\nimport socket, threading\nout = {}\ndef go(t):\n  try:\n"
         "    socket.create_connection((t, " +
         std::to_string(port) +
         "), 3).sendall(b'hello'); out[t] = 'CONNECTED'\n"
         "  except Exception as e: out[t] = type(e).__name__ + ' ' + str(e)\n"
         "ts = [threading.Thread(target=go, args=(t,)) for t in [" +
         list +
         "]]\n[t.start() for t in ts]; [t.join() for t in ts]\n"
         "[print(t, r) for t, r in out.items()]\n\"";
}

// The agent's routing table (/proc/net/route: the image has no `ip`), as (destination/mask,
// gateway) in dotted form; the gateway is "" for a route on the link.
struct Route {
  std::string destination, mask, gateway;
};
std::vector<Route> parse_routes(const std::string& table) {
  auto dotted = [](const std::string& hex) {
    in_addr a{};
    a.s_addr = static_cast<in_addr_t>(std::stoul(hex, nullptr, 16));  // already network order
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &a, text, sizeof text);
    return std::string(text);
  };
  std::vector<Route> out;
  std::istringstream in(table);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string iface, dest, gw, flags, refcnt, use, metric, mask;
    if (!(f >> iface >> dest >> gw >> flags >> refcnt >> use >> metric >> mask)) continue;
    constexpr unsigned long kRtfGateway = 0x2;
    const bool via = (std::stoul(flags, nullptr, 16) & kRtfGateway) != 0;
    out.push_back({dotted(dest), dotted(mask), via ? dotted(gw) : ""});
  }
  return out;
}

std::unique_ptr<ExecutorBackend> egress_backend(const std::string& agent,
                                                const std::string& workspace,
                                                const std::string& upstream, std::string* error) {
  BackendInit init;
  init.agent_id = agent;
  init.cwd = workspace;
  init.paths = {{workspace, true}};
  init.settings_json =
      R"({"network": "egress", "egress": {"allow": ["allowed.test", "pypi.test"],
          "upstream_network": ")" +
      upstream + R"("}})";
  return make_backend(init, error);
}

// One agent with its proxy and the upstreams, shared by the suite's tests (each start costs
// seconds); removed after the last one.
class DockerEgressBypass : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (docker_tests_disabled()) return;
    int status = 0;
    sh(outside_cli() + " image inspect " + kEgressImage, &status);
    if (status != 0) return;
    upstreams_ = new Upstreams();
    workspace_ = new TempDir("egressbypass");
    backend_ =
        egress_backend("egressbypass", workspace_->path(), upstreams_->network(), &start_error_)
            .release();
    if (backend_ != nullptr) start_error_ = backend_->start();
    // Squid listens about half a second after its start.
    if (start_error_.empty())
      run(*backend_,
          "for i in $(seq 50); do curl -s -o /dev/null http://allowed.test/name && exit 0; "
          "sleep 0.2; done");
  }
  static void TearDownTestSuite() {
    if (backend_ != nullptr) backend_->cleanup();
    delete backend_;
    delete workspace_;
    delete upstreams_;
    backend_ = nullptr;
    workspace_ = nullptr;
    upstreams_ = nullptr;
  }
  void SetUp() override {
    REQUIRE_ENGINE();
    if (upstreams_ == nullptr)
      GTEST_SKIP() << "image " << kEgressImage
                   << " is missing: SKIPPING (build it with docker/build.sh --egress)";
    ASSERT_NE(backend_, nullptr) << start_error_;
    ASSERT_EQ(start_error_, "");
  }

  static ExecutorBackend& agent() { return *backend_; }
  static const Upstreams& upstreams() { return *upstreams_; }
  static std::string name() { return "execmcp-egressbypass-" + instance_tag(); }
  static std::string agent_network() { return name() + "-egress-net"; }
  static std::string proxy() { return name() + "-egress"; }

 private:
  static inline Upstreams* upstreams_ = nullptr;
  static inline TempDir* workspace_ = nullptr;
  static inline ExecutorBackend* backend_ = nullptr;
  static inline std::string start_error_;
};

// The agent's network must not route to this machine: before inhibit_ipv4 its gateway was an
// address of the machine, and every service on 0.0.0.0 answered the agent around the proxy.
TEST_F(DockerEgressBypass, ServicesOfThisMachineAreOutOfReach) {
  HostListener listener;
  ASSERT_NE(listener.port(), 0);
  const std::string gateway =
      trim(sh(outside_cli() + " network inspect -f '{{range .IPAM.Config}}{{.Gateway}}{{end}}' " +
              agent_network()));
  ASSERT_FALSE(gateway.empty());
  const auto mine = machine_addresses();
  std::vector<std::string> targets = {gateway};
  targets.insert(targets.end(), mine.begin(), mine.end());  // docker0's 172.17.0.1 among them

  // The control: a container on the default bridge reaches the listener at one of these
  // addresses, so a refusal below is the agent's network, not a firewall of this machine.
  const auto control = sh(outside_cli() + " run --rm --network bridge " + kImage + " " +
                          connect_each({mine.begin(), mine.end()}, listener.port()));
  EXPECT_NE(control.find("CONNECTED"), std::string::npos) << control;
  EXPECT_GT(listener.accepted(), 0) << control;

  const auto r = run(agent(), connect_each(targets, listener.port()));
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.stdout_data.find("CONNECTED"), std::string::npos) << r.stdout_data;
  for (const auto& t : targets)
    EXPECT_NE(r.stdout_data.find(t + " "), std::string::npos) << t << " untried: " << r.stdout_data;
  EXPECT_EQ(listener.accepted(), 0) << r.stdout_data;
}

// Whatever routes the engine gives the agent lead nowhere off its network: the only link route is
// the network's own subnet, and no gateway is an address of this machine (the gateway of an
// inhibit_ipv4 bridge is held by nobody).
TEST_F(DockerEgressBypass, NoRouteLeadsOffTheAgentsNetwork) {
  const auto r = run(agent(), "cat /proc/net/route");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
  const auto routes = parse_routes(r.stdout_data);
  ASSERT_FALSE(routes.empty()) << r.stdout_data;
  const std::string subnet =
      trim(sh(outside_cli() + " network inspect -f '{{range .IPAM.Config}}{{.Subnet}}{{end}}' " +
              agent_network()));
  const auto mine = machine_addresses();
  for (const auto& route : routes) {
    if (route.gateway.empty()) {
      EXPECT_TRUE(subnet.starts_with(route.destination + "/"))
          << "a link route to " << route.destination << " outside " << subnet;
    } else {
      EXPECT_EQ(mine.count(route.gateway), 0U)
          << "the route to " << route.destination << "/" << route.mask << " goes via "
          << route.gateway << ", an address of this machine";
    }
  }
}

}  // namespace
}  // namespace execmcp::docker_test
