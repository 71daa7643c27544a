// Tests of ContainerBackend's sdk::SandboxControl against FakeEngine: suspend stops the container,
// resume starts it again (or makes it anew when it is gone or its workspace moved), and an
// attached container is not ours to stop.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "docker_common/container_backend.hpp"
#include "fake_engine.hpp"
#include "lifecycle_test_support.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using test_support::has;

namespace fs = std::filesystem;

class SandboxControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/execmcp-sandbox-control-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    workspace_ = root_ + "/pool-1";
    fs::create_directories(workspace_ + "/sub");
    init_.agent_id = "agent";
    init_.instance_id = "unit";
    init_.cwd = workspace_;
    init_.sandbox_cwd = "/workspace";
    settings_.user = "1000:1000";  // no ACL on the workspace
    settings_.exec_mode = ExecMode::Exec;
  }
  void TearDown() override {
    backend_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  void make_backend(bool start = true) {
    engine_ = new FakeEngine;
    engine_->images.insert(settings_.image);
    backend_ = std::make_unique<ContainerBackend>(init_, "docker-test", settings_,
                                                  std::unique_ptr<Engine>(engine_));
    control_ = sdk::sandbox_control(*backend_);
    ASSERT_NE(control_, nullptr);
    if (start) {
      ASSERT_EQ(backend_->start(), "");
      engine_->calls.clear();
    }
  }
  std::string name() const { return container_name("agent", "unit"); }
  bool running() const {
    const auto it = engine_->containers.find(name());
    return it != engine_->containers.end() && it->second.state.running;
  }
  sdk::ExecResult run_in(const std::string& work_dir) {
    sdk::ExecRequest request;
    request.command = "true";
    request.work_dir = work_dir;
    return backend_->execute(request);
  }
  const MountSpec* workspace_mount() const {
    for (const auto& m : engine_->last_spec.mounts)
      if (m.target == "/workspace") return &m;
    return nullptr;
  }

  std::string root_, workspace_;
  sdk::BackendInit init_;
  DockerSettings settings_;
  FakeEngine* engine_ = nullptr;  // owned by backend_
  std::unique_ptr<ContainerBackend> backend_;
  sdk::SandboxControl* control_ = nullptr;
};

TEST_F(SandboxControlTest, SuspendStopsTheContainerAndKeepsIt) {
  make_backend();
  EXPECT_EQ(control_->suspend(), "");
  EXPECT_EQ(engine_->calls, std::vector<std::string>{"stop id-" + name()});
  ASSERT_TRUE(engine_->containers.contains(name()));
  EXPECT_FALSE(running());
}

TEST_F(SandboxControlTest, ResumeStartsTheSameContainerAndRunsTrueInIt) {
  make_backend();
  ASSERT_EQ(control_->suspend(), "");
  engine_->calls.clear();
  EXPECT_EQ(control_->resume(), "");
  const std::vector<std::string> want = {"start id-" + name(), "exec " + name()};
  EXPECT_EQ(engine_->calls, want);
  EXPECT_TRUE(running());
  EXPECT_EQ(engine_->count("create " + name()), 0u);
  // A running one is left as it is.
  engine_->calls.clear();
  EXPECT_EQ(control_->resume(), "");
  EXPECT_EQ(engine_->calls, std::vector<std::string>{"exec " + name()});
}

TEST_F(SandboxControlTest, ResumeMakesAContainerRemovedMeanwhileAnew) {
  make_backend();
  ASSERT_EQ(control_->suspend(), "");
  engine_->containers.erase(name());
  engine_->calls.clear();
  EXPECT_EQ(control_->resume(), "");
  EXPECT_EQ(engine_->count("create " + name()), 1u);
  EXPECT_TRUE(running());
}

TEST_F(SandboxControlTest, ResumeAfterARelocationRecreatesInsteadOfStarting) {
  make_backend();
  const std::string moved = root_ + "/user-a";
  fs::rename(workspace_, moved);
  ASSERT_EQ(control_->relocate_workspace(moved), "");
  // Still running: its mount holds the directory, nothing is done to it.
  EXPECT_TRUE(engine_->calls.empty());
  // Calls check the new host path.
  EXPECT_EQ(run_in("sub").error, "");
  EXPECT_EQ(engine_->last_exec.work_dir, "/workspace/sub");
  ASSERT_EQ(control_->suspend(), "");
  engine_->calls.clear();
  EXPECT_EQ(control_->resume(), "");
  const std::vector<std::string> want = {"remove id-" + name(), "create " + name(),
                                         "start " + name(), "exec " + name()};
  EXPECT_EQ(engine_->calls, want);
  ASSERT_TRUE(workspace_mount());
  EXPECT_EQ(workspace_mount()->source, moved);
  EXPECT_EQ(engine_->last_spec.working_dir, "/workspace");
  // Made from the new place once: the next stop and start keeps the container.
  ASSERT_EQ(control_->suspend(), "");
  engine_->calls.clear();
  EXPECT_EQ(control_->resume(), "");
  EXPECT_EQ(engine_->count("create " + name()), 0u);
  EXPECT_EQ(engine_->count("start id-" + name()), 1u);
}

TEST_F(SandboxControlTest, AContainerThatStopsByItselfAfterARelocationIsMadeAnewByTheNextCall) {
  make_backend();
  const std::string moved = root_ + "/user-b";
  fs::rename(workspace_, moved);
  ASSERT_EQ(control_->relocate_workspace(moved), "");
  engine_->containers[name()].state.running = false;  // its PID 1 died
  engine_->calls.clear();
  const auto r = run_in("");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(engine_->count("create " + name()), 1u);
  EXPECT_EQ(engine_->count("start " + name()), 1u);
  ASSERT_TRUE(workspace_mount());
  EXPECT_EQ(workspace_mount()->source, moved);
  bool said = false;
  for (const auto& n : r.notices) said |= has(n, "workspace moved");
  EXPECT_TRUE(said);
}

TEST_F(SandboxControlTest, ProtectedPathsMoveWithTheWorkspaceAndStillProtect) {
  fs::create_directories(workspace_ + "/keep");
  init_.paths = {{workspace_, true, {workspace_ + "/keep"}}};
  make_backend();
  const std::string moved = root_ + "/user-c";
  fs::rename(workspace_, moved);
  ASSERT_EQ(control_->relocate_workspace(moved), "");
  // Replaced at its new name: the file recorded at the first start is looked for there, so the
  // protection never lapses and no container is made.
  fs::rename(moved + "/keep", moved + "/old");  // kept: the new one cannot reuse its inode
  fs::create_directories(moved + "/keep");
  ASSERT_EQ(control_->suspend(), "");
  EXPECT_TRUE(has(control_->resume(), "another file"));
  EXPECT_FALSE(running());
  // Put back: the fresh container mounts it read-only where commands see it.
  fs::remove(moved + "/keep");
  fs::rename(moved + "/old", moved + "/keep");
  ASSERT_EQ(control_->resume(), "");
  EXPECT_TRUE(running());
  bool mounted = false;
  for (const auto& m : engine_->last_spec.mounts)
    mounted |= m.target == "/workspace/keep" && m.read_only && m.source == moved + "/keep";
  EXPECT_TRUE(mounted);
  EXPECT_TRUE(has(backend_->write_file({"keep/x", "d"}).error, "protected"));
}

TEST_F(SandboxControlTest, ARelocationToAPathThatIsNotADirectoryIsRefused) {
  make_backend();
  EXPECT_TRUE(has(control_->relocate_workspace(root_ + "/missing"), "not an existing directory"));
  std::ofstream(root_ + "/file") << "x";
  EXPECT_TRUE(has(control_->relocate_workspace(root_ + "/file"), "not an existing directory"));
  fs::create_directory_symlink(workspace_, root_ + "/link");
  EXPECT_TRUE(has(control_->relocate_workspace(root_ + "/link"), "not an existing directory"));
  EXPECT_TRUE(has(control_->relocate_workspace("relative"), "absolute"));
  EXPECT_TRUE(has(control_->relocate_workspace(root_ + "/../x"), "absolute"));
  // Nothing changed: a stop and start keeps the container.
  ASSERT_EQ(control_->suspend(), "");
  EXPECT_EQ(control_->resume(), "");
  EXPECT_EQ(engine_->count("create " + name()), 0u);
}

TEST_F(SandboxControlTest, SuspendSaysWhyWhenTheEngineDoesNotAnswer) {
  make_backend();
  engine_->reachable = false;
  EXPECT_TRUE(has(control_->suspend(), "cannot reach the engine")) << control_->suspend();
  engine_->reachable = true;
  EXPECT_TRUE(running());
}

TEST_F(SandboxControlTest, AnAttachedContainerIsNotOursToStopStartOrMove) {
  init_.sandbox_cwd.clear();
  settings_.container = "theirs";
  make_backend(/*start=*/false);
  engine_->add_container("theirs", true);
  EXPECT_TRUE(has(control_->suspend(), "not ours to stop")) << control_->suspend();
  EXPECT_TRUE(has(control_->resume(), "not ours")) << control_->resume();
  EXPECT_TRUE(has(control_->relocate_workspace(root_), "not ours")) << control_->resume();
  EXPECT_TRUE(engine_->calls.empty());
  EXPECT_TRUE(engine_->containers["theirs"].state.running);
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
