// The set-up the container backend's unit tests share: a fresh workspace directory (removed after
// the test), the BackendInit of agent "agent", instance "unit" on it, settings running as
// 1000:1000 in exec mode, and a FakeEngine. A test changes the settings or the engine in its own
// SetUp() (after this one's), then makes the lifecycle with make_lifecycle().
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "fake_engine.hpp"

namespace execmcp::plugins::docker_common::test_support {

class ContainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/execmcp-docker-unit-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    workspace_ = pattern;
    init_.agent_id = "agent";
    init_.instance_id = "unit";
    init_.cwd = workspace_;
    settings_.user = "1000:1000";
    settings_.exec_mode = ExecMode::Exec;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(workspace_, ec);
  }
  // The lifecycle of these settings on the fake engine, which has the settings' image.
  std::unique_ptr<ContainerLifecycle> make_lifecycle() {
    engine_.images.insert(settings_.image);
    return std::make_unique<ContainerLifecycle>(init_, "docker-test", settings_, engine_);
  }

  std::string workspace_;
  sdk::BackendInit init_;
  DockerSettings settings_;
  FakeEngine engine_;
};

}  // namespace execmcp::plugins::docker_common::test_support
