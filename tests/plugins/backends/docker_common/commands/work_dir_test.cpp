// A command's work_dir in the container backend (against FakeEngine): resolved as commands see it,
// one component at a time, never following a symlink out of the agent's grants on the host, and
// refused with one message that names only the requested path in the commands' view, whatever
// lies (or does not lie) outside.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "docker_common/container_backend.hpp"
#include "fake_engine.hpp"
#include "lifecycle_test_support.hpp"

namespace execmcp::plugins::docker_common {
namespace {

namespace fs = std::filesystem;
using test_support::has;

std::string refusal(const std::string& seen) {
  return "work_dir refused: '" + seen +
         "' is not a directory in this agent's workspace or granted paths";
}

// <root>/users/u1 is the workspace (seen at /workspace with `sandbox`), <root>/users/u2 another
// user's, <root>/ctx a read-only context path.
class WorkDirTest : public ::testing::Test {
 protected:
  void start(bool sandbox) {
    char pattern[] = "/tmp/execmcp-work-dir-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    workspace_ = root_ + "/users/u1";
    fs::create_directories(workspace_ + "/sub/deeper");
    fs::create_directories(root_ + "/users/u2/private");
    fs::create_directories(root_ + "/ctx/docs");
    init_.agent_id = "agent";
    init_.instance_id = "unit";
    init_.cwd = workspace_;
    if (sandbox) init_.sandbox_cwd = "/workspace";
    init_.paths = {{workspace_, true, {}}, {root_ + "/ctx", false, {}}};
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
    if (!root_.empty()) fs::remove_all(root_, ec);
  }

  sdk::ExecResult run_in(const std::string& work_dir) {
    sdk::ExecRequest request;
    request.command = "true";
    request.work_dir = work_dir;
    return backend_->execute(request);
  }
  // (Re)makes the symlink <workspace>/<name> -> target.
  void link(const std::string& name, const std::string& target) {
    std::error_code ec;
    fs::remove(workspace_ + "/" + name, ec);
    fs::create_symlink(target, workspace_ + "/" + name);
  }
  // The refusal of `work_dir`, which must name no path of the host's.
  std::string refused(const std::string& work_dir) {
    const auto r = run_in(work_dir);
    EXPECT_NE(r.error, "") << work_dir << " was accepted as " << r.work_dir;
    EXPECT_FALSE(has(r.error, root_)) << work_dir << ": " << r.error;
    if (const std::string cwd = fs::current_path().string(); cwd != "/") {
      EXPECT_FALSE(has(r.error, cwd)) << work_dir << ": " << r.error;
    }
    return r.error;
  }

  std::string root_;
  std::string workspace_;
  sdk::BackendInit init_;
  DockerSettings settings_;
  FakeEngine* engine_ = nullptr;  // owned by backend_
  std::unique_ptr<ContainerBackend> backend_;
};

// Issue 28, finding 4: the host followed the workspace's symlinks with the server's rights, so the
// message told whether a path existed in another user's directory, and named host paths.
TEST_F(WorkDirTest, ASymlinkOutOfTheGrantsIsRefusedAlikeWhetherItsTargetExistsOrNot) {
  start(true);
  const std::string expected = refusal("/workspace/peek");
  for (const std::string& target :
       {root_ + "/users/u2/private", root_ + "/users/u2/missing", root_ + "/users/u2",
        std::string("/proc/self/root/root"), std::string("/proc/self/root"),
        std::string("/proc/self/cwd"), std::string("/root"), std::string("/nonexistent"),
        std::string("../u2/private"), std::string("../u2/missing")}) {
    SCOPED_TRACE(target);
    link("peek", target);
    EXPECT_EQ(refused("peek"), expected);
    EXPECT_EQ(refused("/workspace/peek"), expected);
  }
  // Deeper, through the link: the same message for what exists there and what does not.
  link("peek", root_ + "/users/u2");
  EXPECT_EQ(refused("peek/private"), refusal("/workspace/peek/private"));
  EXPECT_EQ(refused("peek/missing"), refusal("/workspace/peek/missing"));
  link("peek", "/proc/self/root");
  EXPECT_EQ(refused("peek/root"), refusal("/workspace/peek/root"));
  EXPECT_EQ(refused("peek/nothing-here"), refusal("/workspace/peek/nothing-here"));
  // A plain missing directory reads the same.
  EXPECT_EQ(refused("missing"), refusal("/workspace/missing"));
}

TEST_F(WorkDirTest, EscapesWithDotDotAreRefusedInTheCommandsView) {
  start(true);
  EXPECT_EQ(refused(".."), refusal("/"));
  EXPECT_EQ(refused("../.."), refusal("/"));
  EXPECT_EQ(refused("../../etc"), refusal("/etc"));
  EXPECT_EQ(refused("sub/../../users/u2"), refusal("/users/u2"));
  EXPECT_EQ(refused("/workspace/../proc/self/root"), refusal("/proc/self/root"));
  // The workspace's host path is not what commands see (named as written: it is the request).
  EXPECT_EQ(run_in(workspace_ + "/sub").error, refusal(workspace_ + "/sub"));
  link("up", "../../..");
  EXPECT_EQ(refused("up"), refusal("/workspace/up"));
  link("up", "sub/../../..");
  EXPECT_EQ(refused("up/users/u2"), refusal("/workspace/up/users/u2"));
}

TEST_F(WorkDirTest, SymlinksInsideTheGrantsAreFollowedAsCommandsSeeThem) {
  start(true);
  link("abs", "/workspace/sub");
  auto r = run_in("abs");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.work_dir, "/workspace/sub");
  EXPECT_EQ(engine_->last_exec.work_dir, "/workspace/sub");
  link("rel", "sub/deeper/..");
  r = run_in("rel/deeper");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.work_dir, "/workspace/sub/deeper");
  link("ctx", root_ + "/ctx");  // a context path is mounted at its host path
  r = run_in("ctx/docs");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.work_dir, root_ + "/ctx/docs");
  EXPECT_EQ(run_in(root_ + "/ctx").work_dir, root_ + "/ctx");
  // The workspace's host path is not a directory commands see: a link to it leads nowhere.
  link("host", workspace_ + "/sub");
  EXPECT_EQ(refused("host"), refusal("/workspace/host"));
  // A loop, a link to a file, a file: refused alike.
  link("loop1", "loop2");
  link("loop2", "loop1");
  EXPECT_EQ(refused("loop1"), refusal("/workspace/loop1"));
  std::FILE* file = std::fopen((workspace_ + "/file").c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fclose(file);
  EXPECT_EQ(refused("file"), refusal("/workspace/file"));
  link("to-file", "file");
  EXPECT_EQ(refused("to-file"), refusal("/workspace/to-file"));
}

// An agent whose workspace is mounted at its host path: the same walk, the same one message.
TEST_F(WorkDirTest, WithoutSandboxCwdALinkOutIsRefusedAlikeToo) {
  start(false);
  EXPECT_EQ(run_in("sub").error, "");
  EXPECT_EQ(engine_->last_exec.work_dir, workspace_ + "/sub");
  const std::string expected = refusal(workspace_ + "/peek");
  for (const std::string& target : {root_ + "/users/u2/private", root_ + "/users/u2/missing",
                                    std::string("/proc/self/root/root"), std::string("/root")}) {
    SCOPED_TRACE(target);
    link("peek", target);
    EXPECT_EQ(run_in("peek").error, expected);
  }
  EXPECT_EQ(run_in("../u2").error, refusal(root_ + "/users/u2"));
  EXPECT_EQ(run_in("../u2/missing").error, refusal(root_ + "/users/u2/missing"));
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
