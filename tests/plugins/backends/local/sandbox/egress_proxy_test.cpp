// `network: egress` on the real kernel: a local "internet" (python3's http.server on one of this
// machine's own non-loopback addresses, named by the proxy's hosts_file; nothing leaves the
// machine), the sandbox's Squid (EgressProxy) and the relay of execmcp-runner inside. From inside:
// the allowed host works through the proxy, and everything else fails.
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "egress_proxy.hpp"
#include "egress_test_support.hpp"
#include "sandbox_launcher.hpp"
#include "sandbox_test_support.hpp"
#include "supervision/stream_relay.hpp"

namespace fs = std::filesystem;
namespace sb = execmcp::plugins::local::sandbox;
namespace dc = execmcp::plugins::docker_common;

namespace {

std::string read_all(int fd, std::chrono::milliseconds timeout) {
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

class EgressProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
    const bool required = std::getenv("EXECMCP_REQUIRE_SANDBOX") != nullptr &&
                          std::string(std::getenv("EXECMCP_REQUIRE_SANDBOX")) == "1";
    if (sb::find_squid().empty()) {
      if (required) FAIL() << "squid not found: scripts/install-deps.sh";
      GTEST_SKIP() << "squid not found: scripts/install-deps.sh";
    }
    for (const char* tool : {"/usr/bin/python3", "/usr/bin/curl"})
      if (!fs::exists(tool)) GTEST_SKIP() << "no " << tool << " here";
    char tmpl[] = "/tmp/execmcp-egress-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    net_ = std::make_unique<execmcp_egress_test::LocalInternet>(root_);
    if (net_->address().empty()) GTEST_SKIP() << net_->error();
    ASSERT_EQ(net_->error(), "");
    address_ = net_->address();
    port_ = net_->port();
    uid_ = ::geteuid() == 0 ? 1000 : ::geteuid();
    gid_ = ::geteuid() == 0 ? 1000 : ::getegid();
  }

  void TearDown() override {
    net_.reset();
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }

  sb::EgressProxySpec proxy_spec() {
    sb::EgressProxySpec spec;
    std::vector<execmcp::sdk::SettingsProblem> problems;
    spec.policy = dc::parse_egress(
        nlohmann::json{{"allow", {"allowed.execmcp.test"}}, {"ports", {port_}}}, problems);
    EXPECT_TRUE(problems.empty());
    spec.agent_label = "egress-test";
    spec.uid = uid_;
    spec.gid = gid_;
    spec.hosts_file = net_->hosts_file();
    spec.on_record = [this](const dc::EgressLogRecord& record) {
      std::lock_guard lock(mutex_);
      records_.push_back(record);
    };
    return spec;
  }

  sb::SandboxSpec sandbox_spec(const std::string& socket, const std::string& script) const {
    const fs::path runner = EXECMCP_RUNNER_PATH;
    sb::SandboxSpec spec;
    spec.mounts = {{runner.parent_path().string(), "/.relay", false}};
    spec.program = "/bin/sh";
    spec.args = {"-c", script};
    spec.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"HOME", "/home/agent"}};
    for (const auto& kv : sb::egress_client_env()) {
      const auto eq = kv.find('=');
      spec.env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    spec.uid = uid_;
    spec.gid = gid_;
    spec.tmp_bytes = 16 << 20;
    spec.runner_landlock = false;
    spec.network = sb::SandboxNetwork::kEgress;
    spec.egress_socket = socket;
    return spec;
  }

  std::string address_, root_;
  std::uint16_t port_ = 0;
  std::unique_ptr<execmcp_egress_test::LocalInternet> net_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  std::mutex mutex_;
  std::vector<dc::EgressLogRecord> records_;
};

TEST_F(EgressProxyTest, OnlyTheAllowedHostIsReachableAndOnlyThroughTheProxy) {
  std::string error;
  auto proxy = sb::EgressProxy::start(proxy_spec(), error);
  ASSERT_NE(proxy, nullptr) << error;
  const std::string port = std::to_string(port_);
  const std::string squid_port = std::to_string(proxy->squid_port());
  const std::string script =
      "/.relay/execmcp-runner --execmcp-egress-relay=/run/execmcp/egress.sock 2>&1 &\n"
      "i=0; until python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 3128))' "
      "2>/dev/null || [ $i -ge 100 ]; do i=$((i+1)); sleep 0.02; done\n"
      "c() { label=$1; shift; echo \"$label $(curl -s -m 5 -o /tmp/body -w '%{http_code}' "
      "\"$@\")\"; }\n"
      "c allowed http://allowed.execmcp.test:" +
      port +
      "/hello.txt; cat /tmp/body\n"
      "c denied http://denied.execmcp.test:" +
      port +
      "/hello.txt\n"
      "c literal http://" +
      address_ + ":" + port +
      "/hello.txt\n"
      "c otherport http://allowed.execmcp.test:" +
      squid_port +
      "/\n"
      "echo \"connect $(curl -s -m 5 -o /dev/null -w '%{http_connect}' -p "
      "https://denied.execmcp.test:" +
      port +
      "/)\"\n"
      "c noproxy --noproxy '*' http://allowed.execmcp.test:" +
      port +
      "/hello.txt\n"
      "c noproxyip --noproxy '*' http://" +
      address_ + ":" + port +
      "/hello.txt\n"
      "python3 - 2>&1 <<'EOF'\n"
      "import socket\n"
      "for name, addr in [('squid', ('127.0.0.1', " +
      squid_port +
      ")), "
      "('squidhost', ('" +
      address_ + "', " + squid_port +
      ")), "
      "('server', ('" +
      address_ + "', " + port +
      "))]:\n"
      "    s = socket.socket(); s.settimeout(2)\n"
      "    try:\n"
      "        s.connect(addr); print(name, 'connected')\n"
      "    except OSError as e:\n"
      "        print(name, e.errno)\n"
      "try:\n"
      "    socket.socket(2, 3, 1); print('raw created')\n"
      "except OSError as e:\n"
      "    print('raw', e.errno)\n"
      "EOF\n";
  auto sandbox = sb::SandboxProcess::start(sandbox_spec(proxy->socket_path(), script), error);
  ASSERT_NE(sandbox, nullptr) << error;
  const int channel = sandbox->take_channel_fd();
  const std::string out = read_all(channel, std::chrono::seconds(30));
  ::close(channel);
  sandbox->stop(std::chrono::milliseconds(500));

  EXPECT_NE(out.find("allowed 200\nHELLO-FROM-THE-LOCAL-INTERNET\n"), std::string::npos) << out;
  EXPECT_NE(out.find("denied 403\n"), std::string::npos) << out;
  EXPECT_NE(out.find("literal 403\n"), std::string::npos) << out;
  EXPECT_NE(out.find("otherport 403\n"), std::string::npos) << out;
  // curl reports the CONNECT's own answer: refused by the proxy.
  EXPECT_NE(out.find("connect 403\n"), std::string::npos) << out;
  // Without the proxy: no name service and no route.
  EXPECT_NE(out.find("noproxy 000\n"), std::string::npos) << out;
  EXPECT_NE(out.find("noproxyip 000\n"), std::string::npos) << out;
  EXPECT_NE(out.find("squid 111\n"), std::string::npos) << "ECONNREFUSED: " << out;
  EXPECT_NE(out.find("squidhost 101\n"), std::string::npos) << "ENETUNREACH: " << out;
  EXPECT_NE(out.find("server 101\n"), std::string::npos) << out;
  EXPECT_NE(out.find("raw 1\n"), std::string::npos) << "EPERM: " << out;

  // Each request through the proxy was a connection of the sandbox's (the five curls at least).
  EXPECT_GE(proxy->connections(), 5U);
  const pid_t squid = proxy->squid_pid();
  const std::string socket = proxy->socket_path();
  proxy->stop();
  const auto settling = std::chrono::steady_clock::now();
  proxy->settle(std::chrono::seconds(10));  // stopped: at once
  EXPECT_LT(std::chrono::steady_clock::now() - settling, std::chrono::seconds(1));
  {
    std::lock_guard lock(mutex_);
    bool allowed = false, refused = false;
    for (const auto& r : records_) {
      allowed = allowed || (r.host == "allowed.execmcp.test" && r.http_status == 200);
      refused = refused || (r.host == "denied.execmcp.test" && r.refused);
    }
    EXPECT_TRUE(allowed && refused) << records_.size() << " records";
  }
  // Nothing left: Squid is gone (reaped), its directory and socket too.
  EXPECT_NE(::kill(squid, 0), 0);
  EXPECT_FALSE(fs::exists(fs::path(socket).parent_path()));
}

// Squid goes with its server, even one that is SIGKILLed (PR_SET_PDEATHSIG, set after the uid
// change that would clear it).
TEST_F(EgressProxyTest, AKilledServerLeavesNoSquid) {
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const auto spec = proxy_spec();
  const pid_t server = ::fork();
  if (server == 0) {
    std::string error;
    auto proxy = sb::EgressProxy::start(spec, error);
    const pid_t squid = proxy ? proxy->squid_pid() : -1;
    if (::write(report[1], &squid, sizeof squid) != sizeof squid) ::_exit(3);
    for (;;) ::pause();
  }
  ::close(report[1]);
  pid_t squid = 0;
  ASSERT_EQ(::read(report[0], &squid, sizeof squid), static_cast<ssize_t>(sizeof squid));
  ::close(report[0]);
  ASSERT_GT(squid, 0);
  // Its directory stays behind a killed server (nothing there is secret): the test removes it.
  std::string conf;
  {
    std::ifstream cmdline("/proc/" + std::to_string(squid) + "/cmdline");
    for (std::string arg; std::getline(cmdline, arg, '\0');) conf = arg;  // the last: squid.conf
  }
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
  // Gone, or a zombie the host's init has yet to reap.
  const auto alive = [squid] {
    std::ifstream stat("/proc/" + std::to_string(squid) + "/stat");
    std::string text;
    if (!std::getline(stat, text)) return false;
    const auto paren = text.rfind(')');
    return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] != 'Z';
  };
  for (int i = 0; i < 300 && alive(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(alive()) << "squid " << squid << " outlived its server";
  std::error_code ec;
  // So do its shared-memory segments, named after the directory's suffix.
  const auto dash = conf.rfind("/execmcp-egress-");
  if (dash != std::string::npos) {
    const std::string dir = fs::path(conf).parent_path().string();
    const std::string prefix = "execmcp" + dir.substr(dir.rfind('-') + 1) + "-";
    for (const auto& entry : fs::directory_iterator("/dev/shm", ec))
      if (entry.path().filename().string().starts_with(prefix)) fs::remove(entry.path(), ec);
    fs::remove_all(dir, ec);
  }
}

// Squid names its shared-memory segments after its service name (`-n`): each proxy has one of its
// own, so two sandboxes' proxies (or a segment a SIGKILLed one left) never clash, and a stopped
// proxy leaves no segment in /dev/shm.
TEST_F(EgressProxyTest, TwoProxiesAtOnceAndNoSegmentLeftBehind) {
  // What a Squid of another uid left under the default name: one of ours cannot remove it.
  struct Planted {
    std::vector<std::string> paths;
    ~Planted() {
      for (const auto& path : paths) ::unlink(path.c_str());
    }
  } planted;
  if (::geteuid() == 0 && uid_ != 0)
    for (const char* name : {"metadata", "queues", "readers"}) {
      const std::string path = std::string("/dev/shm/squid-cf__") + name + ".shm";
      const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
      if (fd >= 0) {
        ::close(fd);
        planted.paths.push_back(path);
      }
    }
  // A proxy's segments: /dev/shm/<its service name, Squid's `-n`>-*.
  const auto service_of = [](pid_t squid) {
    std::ifstream cmdline("/proc/" + std::to_string(squid) + "/cmdline");
    std::string previous;
    for (std::string arg; std::getline(cmdline, arg, '\0'); previous = arg)
      if (previous == "-n") return arg;
    return std::string();
  };
  const auto segments_of = [](const std::string& service) {
    std::size_t n = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/dev/shm", ec))
      n += entry.path().filename().string().starts_with(service + "-") ? 1 : 0;
    return n;
  };
  std::string error;
  auto first = sb::EgressProxy::start(proxy_spec(), error);
  ASSERT_NE(first, nullptr) << error;
  auto second = sb::EgressProxy::start(proxy_spec(), error);
  ASSERT_NE(second, nullptr) << error;
  EXPECT_NE(first->squid_port(), second->squid_port());
  const std::string services[] = {service_of(first->squid_pid()), service_of(second->squid_pid())};
  ASSERT_FALSE(services[0].empty());
  EXPECT_NE(services[0], services[1]);
  first->stop();
  second->stop();
  for (const auto& service : services) EXPECT_EQ(segments_of(service), 0U) << service;
}

TEST_F(EgressProxyTest, AMissingSquidNamesTheLayer) {
  auto spec = proxy_spec();
  spec.squid = root_ + "/no-squid-here";
  std::string error;
  EXPECT_EQ(sb::EgressProxy::start(spec, error), nullptr);
  EXPECT_NE(error.find("egress proxy:"), std::string::npos) << error;
}

}  // namespace
