// The Engine's event stream (follow_events()) against the REAL engine, through both engines
// (docker-api: GET /events; docker-cli: `docker events`), read by ContainerEvents: a container
// stopped through the engine comes as a kill and a die with its exit code, within a moment; a
// container whose name it is a prefix of is not followed.
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "docker_api_engine.hpp"
#include "docker_cli/docker_cli_engine.hpp"
#include "docker_common/commands/container_events.hpp"
#include "docker_common/lifecycle/container_spec.hpp"

namespace execmcp::plugins {
namespace {

namespace dc = docker_common;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

class EngineEvents : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const char* flag = std::getenv("EXECMCP_DOCKER_TESTS");
    if (flag != nullptr && std::string(flag) == "0") GTEST_SKIP() << "EXECMCP_DOCKER_TESTS=0";
    settings_ = dc::parse_docker_settings(
        "{}", GetParam() == "api" ? dc::EngineKind::kApi : dc::EngineKind::kCli);
    if (GetParam() == "api")
      engine_ = std::make_unique<docker_api::DockerApiEngine>(settings_.docker_host);
    else
      engine_ = std::make_unique<docker_cli::DockerCliEngine>(settings_);
    if (!engine_->connect().ok())
      GTEST_SKIP() << "no engine answers (scripts/docker-engine.sh start)";
    if (!engine_->check_image(settings_.image).ok())
      GTEST_SKIP() << settings_.image << " is missing (docker/build.sh)";
    prefix_ = "execmcp-eventtest-" + GetParam() + "-" + std::to_string(::getpid());
  }
  void TearDown() override {
    if (!engine_) return;
    engine_->remove(prefix_);
    engine_->remove(prefix_ + "-other");
  }
  void make_running(const std::string& name) {
    dc::ContainerSpec spec;
    spec.name = name;
    spec.image = settings_.image;
    spec.user = "1000:1000";
    spec.network = "none";
    spec.cmd = {"sleep", "infinity"};
    const auto created = engine_->create(spec);
    ASSERT_TRUE(created.ok()) << created.message;
    ASSERT_TRUE(engine_->start(name).ok());
  }

  dc::DockerSettings settings_;
  std::unique_ptr<dc::Engine> engine_;
  std::string prefix_;
};

TEST_P(EngineEvents, AStoppedContainerComesAsAKillAndADie) {
  make_running(prefix_);
  make_running(prefix_ + "-other");
  dc::ContainerEvents events(*engine_, prefix_, {});
  events.start();
  auto mark = events.mark();
  for (const auto end = Clock::now() + 10s; !mark.live && Clock::now() < end;)
    mark = events.wait_change(mark, 100ms);
  ASSERT_TRUE(mark.live);
  // The CLI's `docker events` subscribes a moment after it started: events from a second back
  // are asked for, so nothing is lost, but give it that moment before the one that must not come.
  std::this_thread::sleep_for(500ms);
  ASSERT_TRUE(engine_->stop(prefix_ + "-other", 0s).ok());  // not followed
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(events.mark().deaths, 0u);
  ASSERT_TRUE(engine_->stop(prefix_, 0s).ok());  // SIGTERM, SIGKILL at once: kill events, a die
  const auto stopped = Clock::now();
  for (const auto end = Clock::now() + 10s; mark.deaths == 0 && Clock::now() < end;)
    mark = events.wait_change(mark, 100ms);
  const auto lag = std::chrono::duration<double>(Clock::now() - stopped).count();
  std::fprintf(stderr, "  the die event came %.3f s after the stop returned\n", lag);
  ASSERT_GE(mark.deaths, 1u);
  const auto death = events.last_death();
  dc::ContainerInfo info;
  ASSERT_TRUE(engine_->inspect(prefix_, info).ok());
  EXPECT_EQ(death.exit_code, info.state.exit_code);  // 143: its init ended at the SIGTERM
  EXPECT_TRUE(death.killed);
  EXPECT_FALSE(death.oom);
  const auto counts = events.counts();
  EXPECT_EQ(counts.malformed, 0u);
  EXPECT_EQ(counts.oversized, 0u);
  events.stop();
  EXPECT_FALSE(events.mark().live);
}

INSTANTIATE_TEST_SUITE_P(BothEngines, EngineEvents, ::testing::Values("api", "cli"));

}  // namespace
}  // namespace execmcp::plugins
