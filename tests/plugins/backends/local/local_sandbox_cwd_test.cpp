// `isolation: sandbox` with BackendInit::sandbox_cwd, as the host builds a per-user agent's sandbox
// (issue 31): the workspace <root>/users/<user> (0700 root, as the server makes it) shown at
// /workspace as the work directory, the base of relative paths and of the file tools, with no host
// path in results or refusals; a protected path and a venv in it seen there; the backend's
// execmcp.sandbox/1 (suspend ends the sandbox and keeps the files, resume makes a new one); a
// sandbox_cwd that overlaps another grant refused. Skipped with the layer and the fix where this
// machine cannot give a sandbox, unless EXECMCP_REQUIRE_SANDBOX=1 (CI).
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "execmcp/conformance/backend_conformance.hpp"
#include "execmcp/sdk/sandbox_control.hpp"
#include "sandbox/sandbox_test_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using execmcp::sdk::ExecRequest;
using execmcp::sdk::ExecResult;
using execmcp::sdk::ExecutorBackend;

constexpr const char* kSandbox = R"({"isolation": "sandbox", "sandbox": {"landlock_max_abi": 2}})";

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

class LocalSandboxCwdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "execmcp-sandbox-cwd-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = fs::canonical(pattern);
    fs::permissions(root_, fs::perms::owner_all | fs::perms::others_exec);
    users_ = root_ / "users";
    workspace_ = users_ / "alice";
    fs::create_directories(workspace_);
    fs::create_directories(users_ / "bob");
    std::ofstream(users_ / "bob" / "secret.txt") << "bob's";
    for (const auto& d : {users_, workspace_, users_ / "bob"}) ::chmod(d.c_str(), 0700);
  }
  void TearDown() override {
    for (auto& b : backends_) b->cleanup();
    backends_.clear();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  execmcp::sdk::BackendInit init(const std::string& settings = kSandbox) {
    execmcp::sdk::BackendInit i;
    i.agent_id = "sandbox-cwd-test";
    i.cwd = workspace_.string();
    i.sandbox_cwd = "/workspace";
    i.paths = {{workspace_.string(), true, {(workspace_ / "keep.txt").string()}}};
    i.settings_json = settings;
    return i;
  }
  ExecutorBackend& make(const execmcp::sdk::BackendInit& i) {
    backends_.push_back(factory_(i));
    EXPECT_EQ(backends_.back()->start(), "");
    return *backends_.back();
  }
  static ExecResult run(ExecutorBackend& backend, const std::string& command,
                        const std::string& work_dir = "") {
    ExecRequest request;
    request.command = command;
    request.work_dir = work_dir;
    request.timeout = 60s;
    return backend.execute(request);
  }

  execmcp::conformance::BackendFactory factory_ =
      execmcp::conformance::plugin_backend_factory(EXECMCP_LOCAL_PLUGIN_PATH);
  fs::path root_, users_, workspace_;
  std::vector<std::unique_ptr<ExecutorBackend>> backends_;
};

TEST_F(LocalSandboxCwdTest, TheWorkspaceIsAtSandboxCwdAndNoHostPathShows) {
  EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
  std::ofstream(workspace_ / "keep.txt") << "original";
  fs::create_directories(workspace_ / "sub");
  fs::create_directories(workspace_ / ".venv" / "bin");
  std::ofstream(workspace_ / ".venv" / "bin" / "python") << "";
  auto& backend = make(init());
  const auto r = run(backend, "pwd; echo hi > a.txt; ls /workspace; echo $VIRTUAL_ENV; echo end");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.work_dir, "/workspace");
  EXPECT_EQ(r.stdout_data, "/workspace\na.txt\nkeep.txt\nsub\n/workspace/.venv\nend\n")
      << r.stderr_data;
  EXPECT_EQ(read_text(workspace_ / "a.txt"), "hi\n");
  for (const std::string dir : {"sub", "/workspace/sub"}) {
    const auto in_sub = run(backend, "pwd", dir);
    EXPECT_EQ(in_sub.error, "") << dir;
    EXPECT_EQ(in_sub.stdout_data, "/workspace/sub\n") << dir;
    EXPECT_EQ(in_sub.work_dir, "/workspace/sub") << dir;
  }
  EXPECT_EQ(backend.read_file({"a.txt"}).data, "hi\n");
  EXPECT_EQ(backend.read_file({"/workspace/a.txt"}).data, "hi\n");
  EXPECT_EQ(backend.write_file({"/workspace/sub/b.txt", "b"}).error, "");
  EXPECT_EQ(read_text(workspace_ / "sub" / "b.txt"), "b");
  // A protected path in the workspace holds where commands see it.
  const auto keep = run(backend, "echo changed > /workspace/keep.txt; echo rc=$?");
  EXPECT_EQ(keep.stdout_data.find("rc=0"), std::string::npos) << keep.stdout_data;
  EXPECT_NE(backend.write_file({"keep.txt", "changed"}).error, "");
  EXPECT_EQ(read_text(workspace_ / "keep.txt"), "original");
  // Another user's workspace: refused, and the refusal names no host path.
  const std::vector<std::string> others = {"../bob/secret.txt",
                                           (users_ / "bob" / "secret.txt").string()};
  for (const auto& path : others) {
    const auto read = backend.read_file({path});
    EXPECT_NE(read.error, "") << path;
    EXPECT_EQ(read.data, "") << path;
  }
  EXPECT_EQ(backend.read_file({others[0]}).error.find(users_.string()), std::string::npos);
  const auto outside = run(backend, "pwd", "..");
  EXPECT_NE(outside.error, "");
  EXPECT_EQ(outside.error.find(users_.string()), std::string::npos) << outside.error;
  const auto cat = run(backend, "cat " + (users_ / "bob" / "secret.txt").string() +
                                    " /workspace/../bob/secret.txt 2>/dev/null; echo done");
  EXPECT_EQ(cat.stdout_data, "done\n");
  // users/ stays 0700 with only a traverse entry for the sandbox user (the mask shows as --x).
  struct stat st {};
  ASSERT_EQ(::stat(users_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0767, 0700u) << std::oct << st.st_mode;
}

TEST_F(LocalSandboxCwdTest, SuspendEndsTheSandboxAndKeepsTheFilesResumeMakesANewOne) {
  EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
  auto& backend = make(init());
  auto* control = execmcp::sdk::sandbox_control(backend);
  ASSERT_NE(control, nullptr);
  const auto first = run(backend, "echo kept > a.txt; touch /tmp/gone; readlink /proc/self/ns/pid");
  ASSERT_EQ(first.error, "");
  EXPECT_EQ(control->suspend(), "");
  EXPECT_EQ(control->resume(), "");
  const auto second =
      run(backend, "cat a.txt; ls /tmp/gone 2>/dev/null; readlink /proc/self/ns/pid");
  ASSERT_EQ(second.error, "");
  EXPECT_EQ(second.stdout_data.substr(0, 5), "kept\n") << second.stdout_data;
  EXPECT_NE(second.stdout_data.substr(5), first.stdout_data);  // a new pid namespace
  // A warm sandbox is not moved: the host makes the user's own instead.
  EXPECT_NE(control->relocate_workspace((users_ / "carol").string()), "");
  // isolation: none offers no sandbox to stop.
  auto host = factory_(init(R"({"isolation": "none"})"));
  EXPECT_EQ(execmcp::sdk::sandbox_control(*host), nullptr);
}

TEST_F(LocalSandboxCwdTest, ASandboxCwdOverlappingAnotherGrantIsRefused) {
  EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
  fs::create_directories(root_ / "ctx");
  auto i = init();
  i.paths.push_back({(root_ / "ctx").string(), false});
  i.sandbox_cwd = (root_ / "ctx" / "in").string();
  backends_.push_back(factory_(i));
  const std::string error = backends_.back()->start();
  EXPECT_NE(error.find("overlaps"), std::string::npos) << error;
  i.sandbox_cwd = "/workspace/../x";
  backends_.push_back(factory_(i));
  EXPECT_NE(backends_.back()->start().find("absolute, normal"), std::string::npos);
}

}  // namespace
