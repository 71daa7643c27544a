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

#include "docker_egress_support.hpp"
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
    backend_ = egress_backend("egressbypass", workspace_->path(), upstreams_->network(),
                              {"allowed.test", "pypi.test"}, &start_error_)
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
  // Writes a script into the workspace (mounted at the same path in the agent); returns its path.
  static std::string script(const std::string& file, const std::string& text) {
    const std::string path = workspace_->path() + "/" + file;
    std::ofstream(path) << text;
    return path;
  }
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

// pip's command for tinypkg from the index at http://<host>/simple/, into ./<target>.
std::string pip_install(const std::string& host, const std::string& target) {
  return "pip install --no-cache-dir --disable-pip-version-check --retries 0 --timeout 10 "
         "--target " +
         target + " --index-url http://" + host + "/simple/ --trusted-host " + host +
         " tinypkg 2>&1; echo \"pip exit $?\"; PYTHONPATH=" + target +
         " python3 -c 'import tinypkg; print(tinypkg.VALUE)'";
}

TEST_F(DockerEgressBypass, PipInstallsAPackageFromAnIndexOnAnAllowedHost) {
  const auto r = run(agent(), pip_install("pypi.test", "site-allowed"));
  EXPECT_EQ(r.error, "");
  EXPECT_NE(r.stdout_data.find("pip exit 0"), std::string::npos) << r.stdout_data;
  EXPECT_EQ(r.exit_code, 0) << r.stdout_data << r.stderr_data;
  EXPECT_EQ(trim(r.stdout_data).substr(trim(r.stdout_data).rfind('\n') + 1), "tinypkg works")
      << r.stdout_data;
}

TEST_F(DockerEgressBypass, PipInstallsNothingFromTheSameIndexOnADeniedHost) {
  const auto r = run(agent(), pip_install("mirror.test", "site-denied"));
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.stdout_data.find("pip exit 0"), std::string::npos) << r.stdout_data;
  // The proxy said no, and wrote it down: its access log has the index host refused with a 403.
  const auto log = sh(outside_cli() + " logs " + proxy() + " 2>&1");
  EXPECT_NE(log.find(" GET mirror.test 80 TCP_DENIED 403 "), std::string::npos) << log;
  EXPECT_NE(r.exit_code, 0) << r.stdout_data;
  EXPECT_EQ(r.stdout_data.find("tinypkg works"), std::string::npos) << r.stdout_data;
  EXPECT_NE(r.stderr_data.find("No module named 'tinypkg'"), std::string::npos) << r.stderr_data;
}

// A socket of the agent's own, around the proxy: to each upstream's address, and to the proxy's
// address on the upstream network (which would make the proxy a router). The proxy's address on
// the agent's network is the control: the same socket code does connect there.
TEST_F(DockerEgressBypass, AHandMadeSocketReachesNoUpstreamNorTheProxysOutsideAddress) {
  const std::string inside = address_on(proxy(), agent_network());
  const std::string outside = address_on(proxy(), upstreams().network());
  const std::string allowed = upstreams().address_of("allowed");
  const std::string denied = upstreams().address_of("denied");
  ASSERT_FALSE(inside.empty() || outside.empty() || allowed.empty() || denied.empty());

  auto r = run(agent(), connect_each({allowed, denied}, 80));
  EXPECT_EQ(r.stdout_data.find("CONNECTED"), std::string::npos) << r.stdout_data;
  EXPECT_NE(r.stdout_data.find(allowed + " "), std::string::npos) << r.stdout_data;
  EXPECT_NE(r.stdout_data.find(denied + " "), std::string::npos) << r.stdout_data;
  r = run(agent(), connect_each({outside}, 3128));
  EXPECT_EQ(r.stdout_data.find("CONNECTED"), std::string::npos) << r.stdout_data;
  r = run(agent(), connect_each({inside}, 3128));
  EXPECT_EQ(trim(r.stdout_data), inside + " CONNECTED");
}

// The upstreams' names are not known on the agent's network, by the libc resolver (the engine's
// DNS at 127.0.0.11) or by a DNS query of the agent's own; the proxy's name is (the control). The
// engine's DNS does not answer a name it does not know here (it has nowhere to ask): the lookups
// run at once, with glibc's timeout cut to 2 s.
TEST_F(DockerEgressBypass, TheAgentResolvesNoUpstreamName) {
  const auto r = run(agent(), "for h in allowed.test denied.test pypi.test mirror.test " + proxy() +
                                  "; do (RES_OPTIONS='timeout:2 attempts:1' getent hosts $h "
                                  ">/dev/null && echo \"RESOLVED $h\") & done; wait; python3 " +
                                  script("dns_query.py", R"PY(
import socket, struct
# An A query for allowed.test, sent by hand to the engine's resolver.
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(p)]) + p for p in b"allowed.test".split(b".")) + b"\0"
q += struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
s.sendto(q, ("127.0.0.11", 53))
try:
    a = s.recv(512)
    print("rcode", a[3] & 0xF, "answers", struct.unpack(">H", a[6:8])[0])
except socket.timeout:
    print("no answer")
)PY"));
  EXPECT_EQ(r.error, "");
  for (const char* name : {"allowed.test", "denied.test", "pypi.test", "mirror.test"})
    EXPECT_EQ(r.stdout_data.find(std::string("RESOLVED ") + name), std::string::npos)
        << r.stdout_data;
  EXPECT_NE(r.stdout_data.find("RESOLVED " + proxy()), std::string::npos) << r.stdout_data;
  // No answer, or one with no address.
  EXPECT_TRUE(r.stdout_data.ends_with("no answer\n") || r.stdout_data.ends_with(" answers 0\n"))
      << r.stdout_data << r.stderr_data;
}

// Without the proxy variables, curl and Python's urllib go direct, and get nowhere.
TEST_F(DockerEgressBypass, WithoutTheProxyVariablesNothingIsReached) {
  const std::string no_proxy = "env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy ";
  auto r = run(agent(), no_proxy + "curl -s -m 5 http://allowed.test/name");
  EXPECT_NE(r.exit_code, 0) << r.stdout_data;
  EXPECT_EQ(r.stdout_data.find("allowed"), std::string::npos) << r.stdout_data;
  r = run(agent(), no_proxy +
                       "python3 -c 'import urllib.request as u; "
                       "print(u.urlopen(\"http://allowed.test/name\", timeout=5).read())'");
  EXPECT_NE(r.exit_code, 0) << r.stdout_data;
  EXPECT_EQ(r.stdout_data.find("allowed"), std::string::npos) << r.stdout_data;
  // The control: the same urllib call with the variables reaches the allowed host.
  r = run(agent(),
          "python3 -c 'import urllib.request as u; "
          "print(u.urlopen(\"http://allowed.test/name\", timeout=5).read().decode().strip())'");
  EXPECT_EQ(trim(r.stdout_data), "allowed") << r.stderr_data;
}

// The policy's ports are [80, 443] (the default): allowed.test's server on 8080 is refused, as a
// plain request and as a CONNECT tunnel.
TEST_F(DockerEgressBypass, AnAllowedHostOnAPortNotInPortsIsRefused) {
  auto r = run(agent(), "curl -s -m 10 -w '\\n%{http_code}' http://allowed.test:8080/name");
  EXPECT_TRUE(r.stdout_data.ends_with("\n403")) << r.stdout_data;
  EXPECT_EQ(r.stdout_data.find("allowed\n"), std::string::npos) << r.stdout_data;
  r = run(agent(), "curl -s -m 10 -w '\\n%{http_code}' http://allowed.test/name");
  EXPECT_EQ(r.stdout_data, "allowed\n\n200");  // the control: port 80 is in `ports`
}

TEST_F(DockerEgressBypass, AConnectTunnelToAnAllowedHostOnAPortNotInPortsIsRefused) {
  auto r = run(agent(),
               "curl -s -m 10 -p -w '\\n%{http_connect}' http://allowed.test:8080/name; "
               "echo \" curl $?\"");
  EXPECT_EQ(r.stdout_data.find("allowed\n"), std::string::npos) << r.stdout_data;
  EXPECT_NE(r.stdout_data.find("\n403 curl 56"), std::string::npos) << r.stdout_data;
  // The control: a tunnel to port 80 of the same host is let through.
  r = run(agent(), "curl -s -m 10 -p -w '\\n%{http_connect}' http://allowed.test/name");
  EXPECT_EQ(r.stdout_data, "allowed\n\n200");
}

// The proxy decides by the request's target, not by a Host header the agent writes: an allowed
// Host with a denied absolute URL, and a denied Host with no absolute URL, reach no denied server.
TEST_F(DockerEgressBypass, AnAllowedHostHeaderDoesNotOpenADeniedUrl) {
  auto r =
      run(agent(),
          "curl -s -m 10 -H 'Host: allowed.test' -w '\\n%{http_code}' http://denied.test/name");
  EXPECT_EQ(r.stdout_data.find("denied\n\n"), std::string::npos) << r.stdout_data;
  EXPECT_TRUE(r.stdout_data.ends_with("\n403")) << r.stdout_data;
  EXPECT_NE(r.stdout_data.find("denied.test"), std::string::npos) << r.stdout_data;
  r = run(agent(), "python3 " + script("raw_request.py", R"PY(
import os, socket, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
for request in (b"GET http://denied.test/name HTTP/1.1\r\nHost: allowed.test\r\n",
                b"GET /name HTTP/1.1\r\nHost: denied.test\r\n"):
    s = socket.create_connection((proxy.hostname, proxy.port), 5)
    s.sendall(request + b"Connection: close\r\n\r\n")
    answer = b""
    while chunk := s.recv(65536):
        answer += chunk
    print(answer.split(b"\r\n")[0].decode(), "|", answer.split(b"\r\n\r\n", 1)[-1][:40])
)PY"));
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(r.stdout_data.find("b'denied\\n'"), std::string::npos) << r.stdout_data;
  EXPECT_EQ(r.stdout_data.find(" 200 "), std::string::npos) << r.stdout_data;
}

// `ip route add` / `route add` need CAP_NET_ADMIN, which the agent lacks: a default route via the
// proxy (netlink, as ip does, and the SIOCADDRT ioctl, as route does) and deleting the default
// route are refused with EPERM, and the table is as before.
TEST_F(DockerEgressBypass, TheAgentCannotChangeItsRoutes) {
  const std::string via = address_on(proxy(), agent_network());
  ASSERT_FALSE(via.empty());
  const auto before = run(agent(), "cat /proc/net/route").stdout_data;
  const auto r = run(agent(), "python3 " + script("routes.py", R"PY(
import fcntl, socket, struct, sys
via = socket.inet_aton(sys.argv[1])
# netlink RTM_NEWROUTE (24), REQUEST|ACK|REPLACE|CREATE: `ip route replace default via <via>`.
rtmsg = struct.pack("=BBBBBBBBI", socket.AF_INET, 0, 0, 0, 254, 4, 0, 1, 0)
attr = struct.pack("=HH4s", 8, 5, via)  # RTA_GATEWAY
body = rtmsg + attr
msg = struct.pack("=IHHII", 16 + len(body), 24, 0x1 | 0x4 | 0x100 | 0x400, 1, 0) + body
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
s.send(msg)
reply = s.recv(4096)
kind, error = struct.unpack("=H", reply[4:6])[0], struct.unpack("=i", reply[16:20])[0]
print("netlink", "error" if kind == 2 else kind, -error)
# struct rtentry (x86_64, 120 bytes): the route `route add default gw <via>` would add or delete.
def sin(addr):
    return struct.pack("=H2x4s8x", socket.AF_INET, addr)
entry = struct.pack("=Q16s16s16sH", 0, sin(b"\0" * 4), sin(via), sin(b"\0" * 4), 0x1 | 0x2)
entry += b"\0" * (120 - len(entry))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for name, request in (("SIOCADDRT", 0x890B), ("SIOCDELRT", 0x890C)):
    try:
        fcntl.ioctl(u.fileno(), request, entry)
        print(name, "done")
    except OSError as e:
        print(name, e.errno)
)PY") + " " + via);
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "netlink error 1\nSIOCADDRT 1\nSIOCDELRT 1\n");  // 1: EPERM
  EXPECT_EQ(run(agent(), "cat /proc/net/route").stdout_data, before);
}
}  // namespace
}  // namespace execmcp::docker_test
