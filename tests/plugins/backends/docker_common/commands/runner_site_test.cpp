// Tests of RunnerCommandPath over the RunnerSite seam, with a fake site whose runners are threads
// on socketpairs (no engine, no container): the channel kept across calls and dropped when the
// site's incarnation changes, each kind of opening failure (the place's: the call's error, tried
// again next call; the runner's: without a fallback the call's error, then the retry pause), a
// call sent once more when its channel broke before the runner took it, and a way to the site
// that can never carry a runner. And ExecRunnerSite's own decisions against FakeEngine: a runner
// program that is missing is the runner's failure, found before the engine is asked; recover()
// brings a gone container back, and the container made anew is a new incarnation.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "container_test_fixture.hpp"
#include "docker_common/commands/exec_runner_site.hpp"
#include "docker_common/commands/runner_command_path.hpp"
#include "docker_common/commands/runner_site.hpp"
#include "fake_engine.hpp"
#include "lifecycle_test_support.hpp"
#include "supervision/runner_protocol.hpp"

namespace execmcp::plugins::docker_common {
namespace {

namespace rp = supervision::runner;

// A runner on the far end of a socketpair: says hello, answers every file call with a directory
// and every command with exit 0, unless told to hang up when the first command comes.
class FakeRunner {
 public:
  FakeRunner(int fd, bool hang_up_on_run) : fd_(fd), hang_up_on_run_(hang_up_on_run) {
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeRunner() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  // True once the host closed its end (the channel was dropped).
  [[nodiscard]] bool saw_end() const { return saw_end_.load(); }

 private:
  void send(rp::FrameType type, std::uint32_t call, const std::string& payload = {}) {
    std::string out;
    rp::append_frame(out, type, call, payload);
    (void)!::write(fd_, out.data(), out.size());
  }
  void serve() {
    send(rp::FrameType::kHello, 0, std::string(rp::kVersion));
    rp::FrameReader reader;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      reader.feed(std::string_view(buf, static_cast<std::size_t>(n)));
      while (auto frame = reader.next()) {
        if (frame->type == rp::FrameType::kFile) {
          rp::FileReport report;
          report.kind = 'd';
          send(rp::FrameType::kFileDone, frame->call, rp::encode_file_done(report));
        } else if (frame->type == rp::FrameType::kRun && hang_up_on_run_) {
          ::shutdown(fd_, SHUT_RDWR);  // broke before the command started
        } else if (frame->type == rp::FrameType::kRun) {
          rp::DoneReport done;
          done.exit_code = 0;
          send(rp::FrameType::kStarted, frame->call);
          send(rp::FrameType::kDone, frame->call, rp::encode_done(done));
        }
      }
    }
    saw_end_ = true;
  }

  int fd_;
  bool hang_up_on_run_;
  std::atomic<bool> saw_end_{false};
  std::thread thread_;
};

class FakeSite final : public RunnerSite {
 public:
  [[nodiscard]] const std::string& name() const override { return name_; }
  void log(sdk::LogLevel, const std::string&) const override {}
  std::shared_ptr<runner_client::RunnerChannel> open(std::vector<std::string>& notices,
                                                     SiteError& error) override {
    ++opens;
    if (fail.kind != SiteError::Kind::kNone) {
      error = fail;
      return nullptr;
    }
    notices.push_back("opened " + std::to_string(opens.load()));
    int p[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p), 0);
    runners.push_back(std::make_unique<FakeRunner>(p[1], hang_ups > 0));
    if (hang_ups > 0) --hang_ups;
    auto channel = std::make_shared<runner_client::RunnerChannel>(
        runner_client::ChannelEnds::raw(p[0], p[0]), [](sdk::LogLevel, const std::string&) {});
    if (auto why = channel->wait_ready(std::chrono::seconds(10)); !why.empty()) {
      error = {SiteError::Kind::kRunner, why};
      return nullptr;
    }
    return channel;
  }
  std::string recover(std::vector<std::string>&) override {
    ++recovers;
    return {};
  }
  [[nodiscard]] std::uint64_t incarnation() const override { return incarnation_.load(); }
  [[nodiscard]] std::string unreachable_for_good() const override { return never; }
  std::function<bool()> stop_watch() override {
    return [] { return false; };
  }
  bool manager_lost() override { return false; }
  void wait_stopped(std::chrono::milliseconds) override {}

  void made_anew() { ++incarnation_; }

  SiteError fail;     // kNone: opens work
  int hang_ups = 0;   // this many opened runners hang up on their first command
  std::string never;  // unreachable_for_good()
  std::atomic<int> opens{0};
  std::atomic<int> recovers{0};
  std::vector<std::unique_ptr<FakeRunner>> runners;

 private:
  std::string name_ = "fake-site";
  std::atomic<std::uint64_t> incarnation_{0};
};

class CountingProbe final : public ContainerProbe {
 public:
  sdk::ExecResult run(const std::string&, std::chrono::milliseconds, const std::string&,
                      const std::vector<std::string>&) override {
    return {};
  }
  void kill_marked(const std::string&) override { ++sweeps; }
  std::atomic<int> sweeps{0};
};

ContainerCommand true_command() {
  ContainerCommand c;
  c.script = "true";
  c.work_dir = "/";
  c.marker = "execmcp-test";
  c.timeout = std::chrono::seconds(20);
  return c;
}

struct RunnerSiteTest : ::testing::Test {
  FakeSite site;
  CountingProbe probe;
  RunnerCommandPath path{site, nullptr, probe};
};

TEST_F(RunnerSiteTest, KeepsTheChannelAcrossCalls) {
  EXPECT_EQ(path.ready(), std::string());
  const auto r = path.run(true_command());
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(site.opens.load(), 1);
  EXPECT_EQ(site.recovers.load(), 0);  // nothing asked the place to come back
}

TEST_F(RunnerSiteTest, ANewIncarnationDropsTheCachedChannel) {
  ASSERT_EQ(path.ready(), std::string());
  site.made_anew();
  EXPECT_EQ(path.ready(), std::string());
  EXPECT_EQ(site.opens.load(), 2);
  ASSERT_EQ(site.runners.size(), 2u);
  // The first channel was closed: its runner saw the end of its input.
  for (int i = 0; i < 200 && !site.runners[0]->saw_end(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(site.runners[0]->saw_end());
  EXPECT_FALSE(site.runners[1]->saw_end());
}

TEST_F(RunnerSiteTest, APlaceFailureIsTheCallsErrorAndTheNextCallTriesAgain) {
  site.fail = {SiteError::Kind::kPlace, "container fake-site is gone"};
  auto r = path.run(true_command());
  EXPECT_EQ(r.error, "container fake-site is gone");
  r = path.run(true_command());
  EXPECT_EQ(r.error, "container fake-site is gone");
  EXPECT_EQ(site.opens.load(), 2);  // no pause after the place's failure
  const auto file = path.ready();
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(*file, "container fake-site is gone");
}

TEST_F(RunnerSiteTest, ARunnerFailureWithoutAFallbackIsTheCallsErrorThenPauses) {
  site.fail = {SiteError::Kind::kRunner, "execmcp-runner said nothing"};
  auto r = path.run(true_command());
  EXPECT_EQ(r.error, "execmcp-runner cannot be reached: execmcp-runner said nothing");
  site.fail = {};  // would work now, but the pause holds
  r = path.run(true_command());
  EXPECT_EQ(r.error, "execmcp-runner cannot be reached: execmcp-runner said nothing");
  EXPECT_EQ(site.opens.load(), 1);
  // Without a fallback a file call, the readiness and a background start say why, too.
  const auto ready = path.ready();
  ASSERT_TRUE(ready.has_value());
  EXPECT_EQ(*ready, "execmcp-runner cannot be reached: execmcp-runner said nothing");
  long pid = -1;
  auto bg = std::make_shared<BackgroundProcess>();
  EXPECT_EQ(path.start_background(bg, "/bin/sh", "sleep 1", {}, pid),
            "execmcp-runner cannot be reached: execmcp-runner said nothing");
  EXPECT_EQ(pid, 0);
}

TEST_F(RunnerSiteTest, ACallWhoseChannelBrokeBeforeTheRunnerTookItIsSentOnceMore) {
  site.hang_ups = 1;
  const auto r = path.run(true_command());
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(site.opens.load(), 2);
  EXPECT_EQ(probe.sweeps.load(), 0);  // it never ran: nothing to sweep
  // Both openings' notices come with the call.
  EXPECT_EQ(r.notices, (std::vector<std::string>{"opened 1", "opened 2"}));
}

TEST_F(RunnerSiteTest, AChannelThatBreaksTwiceBeforeTheCallIsTheCallsError) {
  site.hang_ups = 2;
  const auto r = path.run(true_command());
  EXPECT_EQ(r.error, "execmcp-runner's channel broke twice before it could take the call");
  EXPECT_EQ(site.opens.load(), 2);
}

TEST_F(RunnerSiteTest, AWayThatNeverCarriesARunnerIsNotOpened) {
  site.never = "this connection cannot carry input";
  const auto r = path.run(true_command());
  EXPECT_EQ(r.error, "execmcp-runner cannot be reached: this connection cannot carry input");
  EXPECT_EQ(site.opens.load(), 0);
}

class ExecRunnerSiteTest : public test_support::ContainerTest {
 protected:
  void SetUp() override {
    test_support::ContainerTest::SetUp();
    if (HasFatalFailure()) return;
    settings_.exec_mode = ExecMode::Agent;
    lifecycle_ = make_lifecycle();
    probe_ = std::make_unique<ExecProbe>(*lifecycle_);
    exec_ = std::make_unique<ExecCommandPath>(*lifecycle_, *probe_);
    site_ = std::make_unique<ExecRunnerSite>(*lifecycle_, *exec_, *probe_);
    ASSERT_EQ(lifecycle_->start(), "");
    engine_.calls.clear();
  }
  std::unique_ptr<ContainerLifecycle> lifecycle_;
  std::unique_ptr<ExecProbe> probe_;
  std::unique_ptr<ExecCommandPath> exec_;
  std::unique_ptr<ExecRunnerSite> site_;
};

TEST_F(ExecRunnerSiteTest, AMissingRunnerIsTheRunnersFailureBeforeTheEngineIsAsked) {
  if (site_->delivery() != RunnerDelivery::None)
    GTEST_SKIP() << "an execmcp-runner is at " << site_->runner_host_path();
  std::vector<std::string> notices;
  SiteError error;
  EXPECT_EQ(site_->open(notices, error), nullptr);
  EXPECT_EQ(error.kind, SiteError::Kind::kRunner);
  EXPECT_TRUE(test_support::has(
      error.why, "execmcp-runner is missing or not executable at " + site_->runner_host_path()))
      << error.why;
  EXPECT_TRUE(engine_.calls.empty());
  EXPECT_TRUE(notices.empty());
}

TEST_F(ExecRunnerSiteTest, RecoverBringsAGoneContainerBackAsANewIncarnation) {
  const auto before = site_->incarnation();
  EXPECT_EQ(before, 1u);  // the start made the container
  std::vector<std::string> notices;
  EXPECT_EQ(site_->recover(notices), "");  // running: nothing to do
  EXPECT_TRUE(notices.empty());
  EXPECT_EQ(site_->incarnation(), before);
  engine_.containers.erase(lifecycle_->name());
  EXPECT_EQ(site_->recover(notices), "");
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_TRUE(test_support::has(notices[0], "was gone and a fresh one was created")) << notices[0];
  EXPECT_EQ(site_->incarnation(), before + 1);
  EXPECT_EQ(engine_.count("create " + lifecycle_->name()), 1u);
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
