// Per-user sandboxes (issue 19) on the real engine, for each Docker backend and exec_mode: the
// workspace at BackendInit::sandbox_cwd (/workspace), and sdk::SandboxControl: suspend stops the
// container and resume starts it with its files; a workspace renamed on the host (a warm container
// claimed) is relocated, and the next start makes a fresh container from the new place.
#include <atomic>
#include <chrono>

#include "docker_test_support.hpp"
#include "execmcp/sdk/background_processes.hpp"
#include "execmcp/sdk/sandbox_control.hpp"

namespace execmcp::docker_test {
namespace {

using Clock = std::chrono::steady_clock;

std::string container_of(const std::string& agent) {
  return "execmcp-" + agent + "-" + instance_tag();
}

std::string inspect(const std::string& container, const std::string& format) {
  return trim(sh(outside_cli() + " inspect -f '" + format + "' " + container));
}

std::unique_ptr<ExecutorBackend> sandbox_backend(const std::string& agent,
                                                 const std::string& workspace) {
  BackendInit init;
  init.agent_id = agent;
  init.cwd = workspace;
  init.paths = {{workspace, true}};
  init.sandbox_cwd = "/workspace";
  init.settings_json = "{}";
  std::string error;
  auto backend = make_backend(init, &error);
  EXPECT_TRUE(backend) << error;
  return backend;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Remembers whether on_exit() came.
struct ExitWatch : execmcp::sdk::BackgroundObserver {
  void on_output(execmcp::sdk::StreamKind, std::string_view) noexcept override {}
  void on_exit(const execmcp::sdk::BackgroundExit&) noexcept override { exited = true; }
  std::atomic<bool> exited{false};
};

TEST(DockerSandboxCwd, TheWorkspaceIsAtWorkspaceForCommandsAndFileCalls) {
  REQUIRE_ENGINE();
  TempDir ws("sbxcwd");
  fs::create_directories(ws.path() + "/sub");
  auto backend = sandbox_backend("sbxcwd", ws.path());
  ASSERT_TRUE(backend);
  ASSERT_EQ(backend->start(), "");
  EXPECT_EQ(inspect(container_of("sbxcwd"), "{{.Config.WorkingDir}}"), "/workspace");
  auto r = run(*backend, "pwd; echo hi > /workspace/x");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.stdout_data, "/workspace\n") << r.stderr_data;
  EXPECT_EQ(r.work_dir, "/workspace");
  EXPECT_EQ(read_host_file(ws.path() + "/x"), "hi\n");
  const auto read = backend->read_file({"x"});
  EXPECT_EQ(read.error, "");
  EXPECT_EQ(read.data, "hi\n");
  EXPECT_EQ(backend->read_file({"/workspace/x"}).data, "hi\n");
  EXPECT_EQ(backend->write_file({"d/y", "yo"}).error, "");
  EXPECT_EQ(read_host_file(ws.path() + "/d/y"), "yo");
  EXPECT_EQ(run(*backend, "cat /workspace/d/y").stdout_data, "yo");

  ExecRequest in_sub;
  in_sub.command = "pwd";
  in_sub.work_dir = "sub";
  r = backend->execute(in_sub);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.stdout_data, "/workspace/sub\n");
  EXPECT_EQ(r.work_dir, "/workspace/sub");
  in_sub.work_dir = "/workspace/sub";
  EXPECT_EQ(backend->execute(in_sub).stdout_data, "/workspace/sub\n");
  in_sub.work_dir = "nope";
  r = backend->execute(in_sub);
  EXPECT_NE(r.error.find("work_dir refused"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("/workspace/nope"), std::string::npos) << r.error;

  // Links the user made in their sandbox (issue 28, finding 4): one to a directory commands see is
  // followed; one out of the workspace is refused in the same words whether its target exists (on
  // the host, in another user's workspace, in the container) or not, and no host path is named.
  in_sub.work_dir = "peek";
  const std::string refused =
      "work_dir refused: '/workspace/peek' is not a directory in this agent's workspace or "
      "granted paths";
  const std::string host_parent = fs::path(ws.path()).parent_path().string();
  for (const std::string& target :
       {host_parent, host_parent + "/missing", ws.path() + "/sub", std::string("/etc"),
        std::string("/proc/self/root/root"), std::string("/nonexistent"), std::string("../..")}) {
    ASSERT_EQ(run(*backend, "ln -sfn '" + target + "' peek").exit_code, 0) << target;
    EXPECT_EQ(backend->execute(in_sub).error, refused) << target;
  }
  ASSERT_EQ(run(*backend, "ln -sfn /workspace/sub peek").exit_code, 0);
  r = backend->execute(in_sub);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.stdout_data, "/workspace/sub\n");
  backend->cleanup();
  EXPECT_FALSE(container_exists(container_of("sbxcwd")));
  EXPECT_EQ(read_host_file(ws.path() + "/x"), "hi\n");  // the workspace stays
}

TEST(DockerSandboxControl, SuspendStopsTheContainerAndResumeBringsItBackWithItsFiles) {
  REQUIRE_ENGINE();
  TempDir ws("sbxsusp");
  auto backend = sandbox_backend("sbxsusp", ws.path());
  ASSERT_TRUE(backend);
  ASSERT_EQ(backend->start(), "");
  auto* control = execmcp::sdk::sandbox_control(*backend);
  ASSERT_NE(control, nullptr);
  const std::string name = container_of("sbxsusp");
  ASSERT_EQ(run(*backend, "echo kept > kept.txt").error, "");
  const std::string id = inspect(name, "{{.Id}}");
  // A background process ends with the suspend, and says so.
  auto* background = static_cast<execmcp::sdk::BackgroundProcesses*>(
      backend->query_interface(execmcp::sdk::kBackgroundProcessesId));
  ASSERT_NE(background, nullptr);
  ExitWatch watch;
  const auto started = background->start_background({"sleep 300", "", {}}, &watch);
  ASSERT_EQ(started.error, "");

  auto t0 = Clock::now();
  ASSERT_EQ(control->suspend(), "");
  std::fprintf(stderr, "  suspend took %.2f s\n", seconds_since(t0));
  EXPECT_TRUE(watch.exited.load());
  EXPECT_EQ(inspect(name, "{{.State.Running}}"), "false");
  EXPECT_EQ(read_host_file(ws.path() + "/kept.txt"), "kept\n");

  t0 = Clock::now();
  ASSERT_EQ(control->resume(), "");
  std::fprintf(stderr, "  resume took %.2f s\n", seconds_since(t0));
  EXPECT_EQ(inspect(name, "{{.State.Running}}"), "true");
  EXPECT_EQ(inspect(name, "{{.Id}}"), id);  // the same container, started again
  t0 = Clock::now();
  const auto r = run(*backend, "cat kept.txt && true");
  std::fprintf(stderr, "  first call after resume took %.2f s\n", seconds_since(t0));
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data, "kept\n") << r.stderr_data;
  EXPECT_TRUE(r.notices.empty()) << notices_of(r);  // the host says it was resumed, not us
  backend->cleanup();
  EXPECT_FALSE(container_exists(name));
}

TEST(DockerSandboxControl, ARelocatedWorkspaceIsSeenAtOnceAndAFreshContainerTakesTheNewPlace) {
  REQUIRE_ENGINE();
  TempDir root("sbxmove");
  const std::string pool = root.path() + "/pool-1";
  const std::string user = root.path() + "/user-a";
  fs::create_directories(pool);
  root.give_contents_to_image_user();  // under gVisor no ACL would let uid 1000 write it
  auto backend = sandbox_backend("sbxmove", pool);
  ASSERT_TRUE(backend);
  ASSERT_EQ(backend->start(), "");
  auto* control = execmcp::sdk::sandbox_control(*backend);
  ASSERT_NE(control, nullptr);
  const std::string name = container_of("sbxmove");
  ASSERT_EQ(run(*backend, "echo before > a.txt").error, "");
  const std::string id = inspect(name, "{{.Id}}");

  // The claim: the host renames the pool directory while the container runs.
  fs::rename(pool, user);
  EXPECT_NE(control->relocate_workspace(root.path() + "/missing"), "");
  ASSERT_EQ(control->relocate_workspace(user), "");
  fs::create_directories(pool);  // something new at the old name, which must never be mounted
  fs::create_directories(user + "/sub");
  auto r = run(*backend, "cat a.txt && echo after > b.txt");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.stdout_data, "before\n") << r.stderr_data;
  EXPECT_EQ(read_host_file(user + "/b.txt"), "after\n");
  EXPECT_FALSE(fs::exists(pool + "/b.txt"));
  ExecRequest in_sub;
  in_sub.command = "pwd";
  in_sub.work_dir = "sub";
  EXPECT_EQ(backend->execute(in_sub).stdout_data, "/workspace/sub\n");
  EXPECT_EQ(backend->write_file({"c.txt", "file call"}).error, "");
  EXPECT_EQ(read_host_file(user + "/c.txt"), "file call");

  ASSERT_EQ(control->suspend(), "");
  const auto t0 = Clock::now();
  ASSERT_EQ(control->resume(), "");
  std::fprintf(stderr, "  resume after a relocation took %.2f s\n", seconds_since(t0));
  EXPECT_NE(inspect(name, "{{.Id}}"), id);  // made anew, not started with the old mount
  EXPECT_NE(inspect(name, "{{range .Mounts}}{{.Source}} {{end}}").find(user), std::string::npos);
  r = run(*backend, "pwd; cat a.txt b.txt c.txt");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.stdout_data, "/workspace\nbefore\nafter\nfile call") << r.stderr_data;
  EXPECT_TRUE(r.notices.empty()) << notices_of(r);
  backend->cleanup();
  EXPECT_FALSE(container_exists(name));
}

}  // namespace
}  // namespace execmcp::docker_test
