// `network: egress` on the real engine, for each Docker backend and exec_mode: an agent whose
// policy allows allowed.test reaches it through its proxy, is refused denied.test with a 403 that
// names it, gets nowhere around the proxy, and leaves no container, proxy or network behind.
// Offline: the upstreams are containers on an --internal test network of their own.
#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

#include "docker_egress_support.hpp"
#include "docker_test_support.hpp"
#include "execmcp/sdk/network_events.hpp"
#include "execmcp/sdk/sandbox_control.hpp"

namespace execmcp::docker_test {
namespace {

using namespace std::chrono_literals;

constexpr const char* kEgressImage = "execmcp/egress:latest";

bool network_exists(const std::string& name) {
  int status = 0;
  sh(outside_cli() + " network inspect " + name, &status);
  return status == 0;
}

std::string running(const std::string& container) {
  return trim(sh(outside_cli() + " inspect -f '{{.State.Running}}' " + container));
}

// Two HTTP servers of /etc on port 80, under the names allowed.test and denied.test, on a test
// network of their own (the agent's upstream_network); removed at the end.
class Upstreams {
 public:
  Upstreams() : prefix_("execmcp-egresstest-" + std::to_string(::getpid())) {
    sh(outside_cli() + " network create --internal --label " + prefix_ + " " + network());
    for (const char* host : {"allowed", "denied"})
      sh(outside_cli() + " run -d --name " + prefix_ + "-" + host + " --label " + prefix_ +
         " --network " + network() + " --network-alias " + host +
         ".test --read-only --cap-drop ALL --security-opt no-new-privileges " + kImage +
         " python3 -m http.server 80 --directory /etc");
  }
  ~Upstreams() {
    sh(outside_cli() + " rm -f " + prefix_ + "-allowed " + prefix_ + "-denied");
    sh(outside_cli() + " network rm " + network());
  }
  [[nodiscard]] std::string network() const { return prefix_ + "-up"; }
  // What GET /hostname answers from the server `host` ("allowed" or "denied").
  [[nodiscard]] std::string hostname_of(const std::string& host) const {
    return trim(sh(outside_cli() + " inspect -f '{{.Config.Hostname}}' " + prefix_ + "-" + host));
  }
  [[nodiscard]] std::string address_of(const std::string& host) const {
    return trim(sh(outside_cli() + " inspect -f '{{(index .NetworkSettings.Networks \"" +
                   network() + "\").IPAddress}}' " + prefix_ + "-" + host));
  }

 private:
  std::string prefix_;
};

class DockerEgress : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ENGINE();
    int status = 0;
    sh(outside_cli() + " image inspect " + kEgressImage, &status);
    if (status != 0)
      GTEST_SKIP() << "image " << kEgressImage
                   << " is missing: SKIPPING (build it with docker/build.sh --egress)";
  }
};

TEST_F(DockerEgress, TheAgentReachesOnlyTheAllowedHostAndOnlyThroughItsProxy) {
  Upstreams upstreams;
  ASSERT_TRUE(network_exists(upstreams.network()));
  TempDir ws("egress");
  std::string error;
  auto backend = egress_backend("egress", ws.path(), upstreams.network(), {"allowed.test"}, &error);
  ASSERT_TRUE(backend) << error;
  ASSERT_EQ(backend->start(), "");
  const std::string name = "execmcp-egress-" + instance_tag();
  EXPECT_TRUE(container_exists(name + "-egress"));
  EXPECT_TRUE(network_exists(name + "-egress-net"));

  // Squid takes about half a second to listen after its start: the first call may wait for it.
  auto r = run(*backend,
               "for i in $(seq 50); do curl -s http://allowed.test/hostname && exit 0; "
               "sleep 0.2; done; exit 1");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(trim(r.stdout_data), upstreams.hostname_of("allowed"));

  r = run(*backend, "curl -s -w '\\n%{http_code}' http://denied.test/hostname");
  EXPECT_EQ(r.error, "");
  EXPECT_NE(r.stdout_data.find("denied.test"), std::string::npos) << r.stdout_data;
  EXPECT_TRUE(r.stdout_data.ends_with("\n403")) << r.stdout_data;
  EXPECT_EQ(r.stdout_data.find(upstreams.hostname_of("denied")), std::string::npos);

  // Around the proxy: the name is unknown on the agent's network, the address unreachable.
  r = run(*backend, "curl --noproxy '*' -s -m 3 http://allowed.test/hostname");
  EXPECT_NE(r.exit_code, 0) << r.stdout_data;
  EXPECT_EQ(r.stdout_data.find(upstreams.hostname_of("allowed")), std::string::npos);
  r = run(*backend,
          "curl --noproxy '*' -s -m 3 http://" + upstreams.address_of("allowed") + "/hostname");
  EXPECT_NE(r.exit_code, 0) << r.stdout_data;

  // Another container on the upstream network cannot use the proxy: it serves the agent's
  // network only.
  const std::string proxy_address =
      trim(sh(outside_cli() + " inspect -f '{{(index .NetworkSettings.Networks \"" +
              upstreams.network() + "\").IPAddress}}' " + name + "-egress"));
  ASSERT_FALSE(proxy_address.empty());
  EXPECT_EQ(trim(sh(outside_cli() + " run --rm --network " + upstreams.network() + " " + kImage +
                    " curl -s -o /dev/null -w '%{http_code}' -m 5 -x http://" + proxy_address +
                    ":3128 http://allowed.test/hostname")),
            "403");

  // A suspended agent's proxy stops with it, and is back before it at the resume.
  auto* control = execmcp::sdk::sandbox_control(*backend);
  ASSERT_NE(control, nullptr);
  ASSERT_EQ(control->suspend(), "");
  EXPECT_EQ(running(name), "false");
  EXPECT_EQ(running(name + "-egress"), "false");
  ASSERT_EQ(control->resume(), "");
  EXPECT_EQ(running(name + "-egress"), "true");
  r = run(*backend,
          "for i in $(seq 50); do curl -s http://allowed.test/hostname && exit 0; "
          "sleep 0.2; done; exit 1");
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(trim(r.stdout_data), upstreams.hostname_of("allowed"));

  backend->cleanup();
  EXPECT_FALSE(container_exists(name));
  EXPECT_FALSE(container_exists(name + "-egress"));
  EXPECT_FALSE(network_exists(name + "-egress-net"));
}

TEST_F(DockerEgress, AnUpstreamNetworkTheEngineLacksIsAClearStartError) {
  TempDir ws("egressnone");
  std::string error;
  const std::string missing = "execmcp-egresstest-missing-" + std::to_string(::getpid());
  auto backend = egress_backend("egressnone", ws.path(), missing, {"allowed.test"}, &error);
  ASSERT_TRUE(backend) << error;
  const auto err = backend->start();
  EXPECT_NE(err.find("egress.upstream_network '" + missing + "' does not exist on the engine"),
            std::string::npos)
      << err;
  backend->cleanup();
  const std::string name = "execmcp-egressnone-" + instance_tag();
  EXPECT_FALSE(container_exists(name));
  EXPECT_FALSE(container_exists(name + "-egress"));
  EXPECT_FALSE(network_exists(name + "-egress-net"));
}

TEST_F(DockerEgress, ADeadOwnersProxyAndNetworkAreRemovedAtTheNextStart) {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);  // `child` is now a pid that no longer exists
  const std::string labels =
      " --label execmcp.managed=true --label execmcp.owner.host=" + trim(sh("hostname")) +
      " --label execmcp.owner.pid=" + std::to_string(child);
  const std::string dead = "execmcp-egressorphan-dead-" + instance_tag();
  ASSERT_FALSE(trim(sh(outside_cli() + " network create --internal" + labels +
                       " --label execmcp.role=egress-network " + dead + "-egress-net"))
                   .empty());
  ASSERT_FALSE(trim(sh(outside_cli() + " create --name " + dead + "-egress --network " + dead +
                       "-egress-net" + labels + " --label execmcp.role=egress-proxy " + kImage))
                   .empty());

  Upstreams upstreams;
  TempDir ws("egressorphan");
  std::string error;
  auto backend =
      egress_backend("egressorphan", ws.path(), upstreams.network(), {"allowed.test"}, &error);
  ASSERT_TRUE(backend) << error;
  EXPECT_EQ(backend->start(), "");
  EXPECT_FALSE(container_exists(dead + "-egress"));
  EXPECT_FALSE(network_exists(dead + "-egress-net"));
  backend->cleanup();
  // Whatever the test left, if it failed.
  sh(outside_cli() + " rm -f " + dead + "-egress");
  sh(outside_cli() + " network rm " + dead + "-egress-net");
}

// What the host makes an audit record of: an event per refused request, from the proxy's log,
// within the backend's budget (docs/docker-backend.md, "Refusals").
class RefusalSink final : public execmcp::sdk::NetworkEventSink {
 public:
  void on_network_event(const execmcp::sdk::NetworkEvent& event) noexcept override {
    std::lock_guard lock(mutex_);
    events_.push_back(event);
  }
  std::vector<execmcp::sdk::NetworkEvent> events() {
    std::lock_guard lock(mutex_);
    return events_;
  }

 private:
  std::mutex mutex_;
  std::vector<execmcp::sdk::NetworkEvent> events_;
};

TEST_F(DockerEgress, ARefusedRequestIsReportedOnceNoticedAndAFloodKeptToTheBudget) {
  Upstreams upstreams;
  TempDir ws("egressaudit");
  std::string error;
  RefusalSink sink;  // outlives the backend, whose follower thread delivers to it
  auto backend =
      egress_backend("egressaudit", ws.path(), upstreams.network(), {"allowed.test"}, &error);
  ASSERT_TRUE(backend) << error;
  auto* events = execmcp::sdk::network_events(*backend);
  ASSERT_NE(events, nullptr);
  events->subscribe(&sink);
  ASSERT_EQ(backend->start(), "");
  // Squid listens about half a second after its start.
  auto r =
      run(*backend,
          "for i in $(seq 50); do curl -s -o /dev/null http://allowed.test/hostname && exit 0; "
          "sleep 0.2; done; exit 1");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_TRUE(r.notices.empty()) << r.notices.front();

  // The command outlives its refusal by a second: the proxy's log reaches the follower through the
  // engine's log stream, which a loaded machine (CI: ASan tests beside background builds) delays
  // past the 80 ms a call's end waits for it.
  r = run(*backend, "curl -s -o /dev/null -w '%{http_code}' http://denied.test/; sleep 1");
  EXPECT_EQ(r.stdout_data, "403");
  const std::string notice = r.notices.empty() ? "" : r.notices.back();
  EXPECT_NE(notice.find("the egress proxy refused a request: denied.test:80 (not in this agent's "
                        "egress allow list; allow: allowed.test)"),
            std::string::npos)
      << notice;
  for (int i = 0; i < 50 && sink.events().empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto got = sink.events();
  const auto first_reported = std::chrono::steady_clock::now();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].host, "denied.test");
  EXPECT_EQ(got[0].port, 80);
  EXPECT_EQ(got[0].method, "GET");
  EXPECT_TRUE(got[0].refused);

  // A proxy that stopped and started again is followed on from where it was: nothing twice (the
  // GET above, replayed, would be held as a repeat and make the summary below say 104).
  auto* control = execmcp::sdk::sandbox_control(*backend);
  ASSERT_NE(control, nullptr);
  ASSERT_EQ(control->suspend(), "");
  ASSERT_EQ(control->resume(), "");
  r = run(*backend,
          "for i in $(seq 50); do [ \"$(curl -s -I -o /dev/null -w '%{http_code}' "
          "http://denied.test/)\" = 403 ] && exit 0; sleep 0.2; done; exit 1");
  EXPECT_EQ(r.exit_code, 0);
  for (int i = 0; i < 50 && sink.events().size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(sink.events().size(), 2u);
  EXPECT_EQ(sink.events()[1].method, "HEAD");

  // The budget, end to end: the same refusal again within the minute is only counted; a flood of
  // 400 hosts gets the rest of the hour's 300 reports, and the stop one summary of what was held.
  r = run(*backend,
          "curl -s -o /dev/null http://denied.test/ && curl -s 'http://f[1-400].test/' >/dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  const bool within_the_minute = std::chrono::steady_clock::now() - first_reported < 55s;
  const auto singles = [&] {
    std::size_t n = 0;
    for (const auto& e : sink.events()) n += e.host == "*" ? 0 : 1;
    return n;
  };
  for (int i = 0; i < 100 && singles() < 300; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(singles(), 300u);

  backend->cleanup();
  events->subscribe(nullptr);
  const auto all = sink.events();
  ASSERT_EQ(all.size(), 301u);
  EXPECT_EQ(singles(), 300u);
  EXPECT_EQ(all.back().host, "*");
  // The repeated GET and 102 hosts past the budget (had a minute passed: 103 hosts).
  const std::string expected = within_the_minute
                                   ? ": 1 repeated one reported in the last 60 s, 102 over this "
                                     "sandbox's budget of 300 an hour; hosts: denied.test, f"
                                   : ": 103 over this sandbox's budget of 300 an hour; hosts: f";
  EXPECT_TRUE(
      all.back().reason.starts_with("summary of 103 refusals (not in this agent's egress "
                                    "allow list) not reported one by one" +
                                    expected))
      << all.back().reason;
  EXPECT_TRUE(all.back().reason.ends_with(" and more")) << all.back().reason;
}

}  // namespace
}  // namespace execmcp::docker_test
