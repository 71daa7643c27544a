// Tests of BackendInit::sandbox_cwd in the container backend: the workspace mounted at it, the
// paths of commands and file calls in the commands' view, and the settings it is refused with.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "docker_common/container_backend.hpp"
#include "docker_common/lifecycle/container_spec.hpp"
#include "execmcp/sdk/background_processes.hpp"
#include "fake_engine.hpp"
#include "lifecycle_test_support.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using test_support::has;

sdk::BackendInit sandbox_init() {
  sdk::BackendInit init;
  init.agent_id = "agent";
  init.instance_id = "i1";
  init.cwd = "/srv/users/u1";
  init.sandbox_cwd = "/workspace";
  init.paths = {{"/srv/users/u1", true, {"/srv/users/u1/a/.git"}}, {"/srv/ctx", false}};
  init.tools_dir = "/srv/users/u1/tools";
  return init;
}

const MountSpec* find_target(const std::vector<MountSpec>& mounts, const std::string& target) {
  for (const auto& m : mounts)
    if (m.target == target) return &m;
  return nullptr;
}

TEST(SandboxCwd, TheWorkspaceAndWhatLiesInItAreMountedUnderIt) {
  const auto init = sandbox_init();
  const auto mounts = container_mounts(init, {});
  ASSERT_TRUE(find_target(mounts, "/workspace"));
  EXPECT_EQ(find_target(mounts, "/workspace")->source, "/srv/users/u1");
  EXPECT_FALSE(find_target(mounts, "/workspace")->read_only);
  // The protected path and the directory on the way to it, where commands see them.
  ASSERT_TRUE(find_target(mounts, "/workspace/a/.git"));
  EXPECT_EQ(find_target(mounts, "/workspace/a/.git")->source, "/srv/users/u1/a/.git");
  EXPECT_TRUE(is_protected_mount(init, *find_target(mounts, "/workspace/a/.git")));
  ASSERT_TRUE(find_target(mounts, "/workspace/a"));
  EXPECT_TRUE(is_protected_parent_mount(init, *find_target(mounts, "/workspace/a")));
  // Nothing at the workspace's host path; a context path keeps its own.
  EXPECT_FALSE(find_target(mounts, "/srv/users/u1"));
  ASSERT_TRUE(find_target(mounts, "/srv/ctx"));
  EXPECT_TRUE(find_target(mounts, "/srv/ctx")->read_only);
  EXPECT_EQ(container_tools_dir(init), "/workspace/tools");
  const auto spec = make_container_spec(init, DockerSettings{}, "1000:1000", 1, "h");
  EXPECT_EQ(spec.working_dir, "/workspace");
}

TEST(SandboxCwd, PathsMapBothWays) {
  const auto init = sandbox_init();
  EXPECT_EQ(container_path(init, "/srv/users/u1"), "/workspace");
  EXPECT_EQ(container_path(init, "/srv/users/u1/x/y"), "/workspace/x/y");
  EXPECT_EQ(container_path(init, "/srv/users/u10"), "/srv/users/u10");
  EXPECT_EQ(container_path(init, "/srv/ctx/f"), "/srv/ctx/f");
  EXPECT_EQ(host_path(init, "/workspace/x"), "/srv/users/u1/x");
  EXPECT_EQ(host_path(init, "/workspace"), "/srv/users/u1");
  EXPECT_EQ(host_path(init, "/workspaces"), "/workspaces");
  EXPECT_EQ(container_cwd(init), "/workspace");
  EXPECT_EQ(in_container_terms(init, "'/srv/users/u1/x' is outside (/srv/users/u1, /srv/ctx)"),
            "'/workspace/x' is outside (/workspace, /srv/ctx)");
  EXPECT_EQ(in_container_terms(init, "/srv/users/u10"), "/srv/users/u10");
}

TEST(SandboxCwd, WithoutItEverythingIsAtItsHostPath) {
  auto init = sandbox_init();
  init.sandbox_cwd.clear();
  EXPECT_EQ(container_path(init, "/srv/users/u1/x"), "/srv/users/u1/x");
  EXPECT_EQ(host_path(init, "/workspace/x"), "/workspace/x");
  EXPECT_EQ(container_cwd(init), "/srv/users/u1");
  EXPECT_EQ(check_sandbox_cwd(init, DockerSettings{}), "");
  EXPECT_TRUE(find_target(container_mounts(init, {}), "/srv/users/u1"));
}

TEST(SandboxCwd, AMountPointThatClashesIsRefused) {
  auto init = sandbox_init();
  DockerSettings settings;
  EXPECT_EQ(check_sandbox_cwd(init, settings), "");
  for (const char* bad : {"workspace", "/", "/workspace/", "/a/../workspace", "/a//b", "/proc/w",
                          "/tools", "/tmp/w", "/usr", "/home", "/.execmcp/w", "/dev"}) {
    init.sandbox_cwd = bad;
    EXPECT_NE(check_sandbox_cwd(init, settings), "") << bad;
  }
  // Another grant's mount point, at, in or above it.
  init.sandbox_cwd = "/srv/ctx";
  EXPECT_TRUE(has(check_sandbox_cwd(init, settings), "/srv/ctx"))
      << check_sandbox_cwd(init, settings);
  init.sandbox_cwd = "/srv/ctx/w";
  EXPECT_NE(check_sandbox_cwd(init, settings), "");
  init.sandbox_cwd = "/srv";
  EXPECT_NE(check_sandbox_cwd(init, settings), "");
  init.sandbox_cwd = "/workspace";
  DockerSettings with_extra;
  with_extra.extra_mounts = {{"/d", "/workspace/d", true}};
  EXPECT_TRUE(has(check_sandbox_cwd(init, with_extra), "/workspace/d"));
  // Attach mode keeps the container's own mounts.
  DockerSettings attached;
  attached.container = "theirs";
  EXPECT_TRUE(has(check_sandbox_cwd(init, attached), "attached"));
}

class SandboxBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/execmcp-sandbox-cwd-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    workspace_ = pattern;
    std::filesystem::create_directories(workspace_ + "/sub");
    init_.agent_id = "agent";
    init_.instance_id = "unit";
    init_.cwd = workspace_;
    init_.sandbox_cwd = "/workspace";
    settings_.user = "1000:1000";  // no ACL on the workspace
    settings_.exec_mode = ExecMode::Exec;
    engine_ = new FakeEngine;
    engine_->images.insert(settings_.image);
    backend_ = std::make_unique<ContainerBackend>(init_, "docker-test", settings_,
                                                  std::unique_ptr<Engine>(engine_));
    ASSERT_EQ(backend_->start(), "");
  }
  void TearDown() override {
    backend_.reset();
    std::error_code ec;
    std::filesystem::remove_all(workspace_, ec);
  }

  sdk::ExecResult run_in(const std::string& work_dir) {
    sdk::ExecRequest request;
    request.command = "true";
    request.work_dir = work_dir;
    return backend_->execute(request);
  }

  std::string workspace_;
  sdk::BackendInit init_;
  DockerSettings settings_;
  FakeEngine* engine_ = nullptr;  // owned by backend_
  std::unique_ptr<ContainerBackend> backend_;
};

TEST_F(SandboxBackendTest, TheContainerIsMadeWithTheWorkspaceAtSandboxCwd) {
  EXPECT_EQ(engine_->last_spec.working_dir, "/workspace");
  ASSERT_TRUE(find_target(engine_->last_spec.mounts, "/workspace"));
  EXPECT_EQ(find_target(engine_->last_spec.mounts, "/workspace")->source, workspace_);
  EXPECT_FALSE(find_target(engine_->last_spec.mounts, workspace_));
}

TEST_F(SandboxBackendTest, WorkDirsAreInTheCommandsView) {
  auto r = run_in("");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(engine_->last_exec.work_dir, "/workspace");
  EXPECT_EQ(r.work_dir, "/workspace");
  r = run_in("sub");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(engine_->last_exec.work_dir, "/workspace/sub");
  EXPECT_EQ(r.work_dir, "/workspace/sub");
  r = run_in("/workspace/sub/");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(engine_->last_exec.work_dir, "/workspace/sub");
}

TEST_F(SandboxBackendTest, AWorkDirThatIsNotThereOrNotSeenIsRefused) {
  auto r = run_in("missing");
  EXPECT_TRUE(has(r.error, "work_dir refused")) << r.error;
  EXPECT_TRUE(has(r.error, "/workspace/missing")) << r.error;
  EXPECT_FALSE(has(r.error, workspace_)) << r.error;
  // The workspace's host path is not a directory of the container.
  r = run_in(workspace_ + "/sub");
  EXPECT_TRUE(has(r.error, "work_dir refused")) << r.error;
  r = run_in("../..");
  EXPECT_TRUE(has(r.error, "work_dir refused")) << r.error;
}

TEST_F(SandboxBackendTest, FileCallsRunInTheSandboxCwd) {
  engine_->exec_results.push_back({"data", "", 0});
  const auto read = backend_->read_file({"x"});
  EXPECT_EQ(read.error, "");
  EXPECT_EQ(read.data, "data");
  EXPECT_EQ(engine_->last_exec.work_dir, "/workspace");
}

TEST_F(SandboxBackendTest, ARelativeVenvIsUnderTheSandboxCwd) {
  backend_.reset();
  settings_.venv_path = ".venv";
  engine_ = new FakeEngine;
  engine_->images.insert(settings_.image);
  backend_ = std::make_unique<ContainerBackend>(init_, "docker-test", settings_,
                                                std::unique_ptr<Engine>(engine_));
  ASSERT_EQ(backend_->start(), "");
  EXPECT_EQ(run_in("").error, "");
  std::string argv;
  for (const auto& a : engine_->last_exec.cmd) argv += a + " ";
  EXPECT_TRUE(has(argv, "/workspace/.venv/bin")) << argv;
  EXPECT_FALSE(has(argv, workspace_)) << argv;
}

// Remembers the end of a background process.
struct ExitWatch : sdk::BackgroundObserver {
  void on_output(sdk::StreamKind, std::string_view) noexcept override {}
  void on_exit(const sdk::BackgroundExit&) noexcept override {}
};

TEST_F(SandboxBackendTest, ABackgroundProcessRunsInTheCommandsView) {
  auto* background = static_cast<sdk::BackgroundProcesses*>(
      backend_->query_interface(sdk::kBackgroundProcessesId));
  ASSERT_NE(background, nullptr);
  ExitWatch watch;
  const auto started = background->start_background({"sleep 1", "sub", {}}, &watch);
  EXPECT_EQ(started.error, "");
  EXPECT_EQ(started.work_dir, "/workspace/sub");
  EXPECT_EQ(engine_->last_exec.work_dir, "/workspace/sub");
  backend_->stop();
}

TEST(SandboxCwdFiles, AProtectedPathIsNamedAsCommandsSeeIt) {
  char pattern[] = "/tmp/execmcp-sandbox-protected-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string workspace = pattern;
  std::filesystem::create_directories(workspace + "/keep");
  sdk::BackendInit init;
  init.agent_id = "agent";
  init.instance_id = "unit";
  init.cwd = workspace;
  init.sandbox_cwd = "/workspace";
  init.paths = {{workspace, true, {workspace + "/keep"}}};
  DockerSettings settings;
  settings.user = "1000:1000";
  settings.exec_mode = ExecMode::Exec;
  auto* engine = new FakeEngine;
  engine->images.insert(settings.image);
  {
    ContainerBackend backend(init, "docker-test", settings, std::unique_ptr<Engine>(engine));
    ASSERT_EQ(backend.start(), "");
    bool mounted = false;
    for (const auto& m : engine->last_spec.mounts)
      mounted |= m.target == "/workspace/keep" && m.read_only && m.source == workspace + "/keep";
    EXPECT_TRUE(mounted);
    engine->calls.clear();
    for (const std::string path : {"keep/x", "/workspace/keep/x", "sub/../keep"}) {
      const auto written = backend.write_file({path, "data"});
      EXPECT_TRUE(has(written.error, "is protected (/workspace/keep)")) << path << written.error;
      EXPECT_FALSE(has(written.error, workspace)) << written.error;
    }
    EXPECT_TRUE(engine->calls.empty());  // refused before any exec
  }
  std::error_code ec;
  std::filesystem::remove_all(workspace, ec);
}

TEST(SandboxCwdLifecycle, ABadSandboxCwdFailsAtConstruction) {
  sdk::BackendInit init;
  init.agent_id = "agent";
  init.cwd = "/tmp";
  init.sandbox_cwd = "/proc/ws";
  FakeEngine engine;
  try {
    ContainerLifecycle lifecycle(init, "docker-test", DockerSettings{}, engine);
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(has(e.what(), "sandbox_cwd '/proc/ws'")) << e.what();
  }
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
