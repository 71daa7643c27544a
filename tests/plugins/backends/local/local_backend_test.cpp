// Local-only behaviour of the `local` plugin: settings, venv precedence, process-tree kills seen in
// /proc, stdin, memory under huge output, file tools against races, special files and full disks.
// The generic contract is covered by the conformance kit.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <boost/dll/shared_library.hpp>
#include "swap_while_alive.hpp"

#include "execmcp/conformance/backend_conformance.hpp"
#include "execmcp/sdk/plugin.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using execmcp::sdk::ExecRequest;
using execmcp::sdk::ExecResult;
using execmcp::sdk::ExecutorBackend;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A /proc file's bytes; empty when the process went away meanwhile (reading its files then fails
// with ESRCH, which made std::ifstream throw in the middle of a scan under load).
std::string read_proc_file(const fs::path& path) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return n < 0 ? std::string() : text;
}

// Processes (not zombies) that have `marker` as one whole argument; sends them `signal` if not 0.
int count_processes_with_arg(const std::string& marker, int signal = 0) {
  int count = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string nul(1, '\0');
    // cmdline is the arguments, each followed by a NUL.
    if ((nul + read_proc_file(entry.path() / "cmdline")).find(nul + marker + nul) !=
        std::string::npos) {
      ++count;
      if (signal != 0) ::kill(std::stoi(name), signal);
    }
  }
  return count;
}

// A sleep duration nobody else uses, so its processes can be found in /proc.
std::string unique_sleep_arg() {
  std::random_device rd;
  return std::to_string(900000 + rd() % 99999) + "." + std::to_string(1 + rd() % 9);
}

std::size_t peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoul(line.substr(6));
  return 0;
}

class LocalBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("VIRTUAL_ENV");
    std::string pattern = (fs::temp_directory_path() / "execmcp-local-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = fs::canonical(pattern);
    workspace_ = root_ / "ws";
    fs::create_directories(workspace_);
  }
  void TearDown() override {
    for (auto& b : backends_) b->cleanup();
    backends_.clear();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  ExecutorBackend& make(const std::string& settings, const std::string& tools_dir = "") {
    execmcp::sdk::BackendInit init;
    init.agent_id = "local-test";
    init.cwd = workspace_.string();
    init.paths = {{workspace_.string(), true}};
    init.tools_dir = tools_dir;
    init.settings_json = settings;
    backends_.push_back(factory_(init));
    EXPECT_EQ(backends_.back()->start(), "");
    return *backends_.back();
  }

  std::string refusal(const std::string& settings) {
    try {
      make(settings);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }

  static ExecResult run(ExecutorBackend& backend, const std::string& command,
                        std::chrono::milliseconds timeout = 60s, const std::string& work_dir = "") {
    ExecRequest request;
    request.command = command;
    request.timeout = timeout;
    request.work_dir = work_dir;
    return backend.execute(request);
  }

  void make_venv(const fs::path& dir) {
    std::string cmd = "python3 -m venv --without-pip '" + dir.string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    ASSERT_TRUE(fs::exists(dir / "bin" / "python"));
  }

  execmcp::conformance::BackendFactory factory_ =
      execmcp::conformance::plugin_backend_factory(EXECMCP_LOCAL_PLUGIN_PATH);
  fs::path root_, workspace_;
  std::vector<std::unique_ptr<ExecutorBackend>> backends_;
};

// MassGen's context_paths[].protected_paths: inside a writable grant, the file tools refuse to
// write them, whichever way the path is written (a symlink in the workspace included), and
// leave them as they were; reading them and writing beside them still works.
TEST_F(LocalBackendTest, ProtectedPathsRefuseWritesThroughTheFileTools) {
  fs::create_directories(workspace_ / "keep" / "deep");
  std::ofstream(workspace_ / "keep" / "deep" / "a.txt") << "original";
  std::ofstream(workspace_ / "settings.json") << "{}";
  fs::create_directory_symlink(workspace_ / "keep", workspace_ / "alias");
  fs::create_symlink(workspace_ / "settings.json", workspace_ / "settings-link");
  execmcp::sdk::BackendInit init;
  init.agent_id = "local-test";
  init.cwd = workspace_.string();
  init.paths = {{workspace_.string(),
                 true,
                 {(workspace_ / "keep").string(), (workspace_ / "settings.json").string()}}};
  init.settings_json = "{}";
  backends_.push_back(factory_(init));
  ASSERT_EQ(backends_.back()->start(), "");
  auto& backend = *backends_.back();
  for (const std::string& path : std::vector<std::string>{
           "keep/deep/a.txt", "keep/new.txt", "keep/newdir/b.txt", "alias/made/b.txt",
           "./keep/../keep/deep/a.txt", (workspace_ / "keep" / "deep" / "a.txt").string(),
           "alias/deep/a.txt", "alias/new.txt", "settings.json", "settings-link"}) {
    const auto written = backend.write_file({path, "changed"});
    EXPECT_NE(written.error.find("protected"), std::string::npos) << path << ": " << written.error;
    EXPECT_EQ(written.bytes_written, 0u) << path;
  }
  EXPECT_EQ(read_text(workspace_ / "keep" / "deep" / "a.txt"), "original");
  EXPECT_EQ(read_text(workspace_ / "settings.json"), "{}");
  EXPECT_FALSE(fs::exists(workspace_ / "keep" / "new.txt"));
  EXPECT_FALSE(fs::exists(workspace_ / "keep" / "newdir"));
  EXPECT_FALSE(fs::exists(workspace_ / "keep" / "made")) << "a directory made on the way";
  EXPECT_EQ(backend.read_file({"alias/deep/a.txt"}).data, "original");
  EXPECT_EQ(backend.write_file({"free.txt", "ok"}).error, "");
  EXPECT_EQ(backend.write_file({"keepsake/x.txt", "ok"}).error, "");
  EXPECT_EQ(read_text(workspace_ / "keepsake" / "x.txt"), "ok");
}

// Issue 17 item 1: a command (not held by protected paths) moves or links a protected file or
// directory; the file tools still refuse it, by what it is (device and inode recorded at start),
// and the path as configured stays refused too, whatever now stands there.
TEST_F(LocalBackendTest, ProtectedPathsHoldWhenACommandMovesOrLinksThem) {
  fs::create_directories(workspace_ / "sub");
  fs::create_directories(workspace_ / "keep" / "deep");
  std::ofstream(workspace_ / "sub" / "secret.txt") << "secret";
  std::ofstream(workspace_ / "keep" / "deep" / "a.txt") << "kept";
  execmcp::sdk::BackendInit init;
  init.agent_id = "local-test";
  init.cwd = workspace_.string();
  init.paths = {{workspace_.string(),
                 true,
                 {(workspace_ / "sub" / "secret.txt").string(), (workspace_ / "keep").string()}}};
  init.settings_json = "{}";
  backends_.push_back(factory_(init));
  ASSERT_EQ(backends_.back()->start(), "");
  auto& backend = *backends_.back();
  // The decoy: the real file moves away, a new one takes its name.
  const auto moved = run(backend,
                         "mv sub sub2 && mkdir sub && echo decoy > sub/secret.txt && "
                         "mv keep keep2 && ln sub2/secret.txt hardlink.txt && "
                         "mkdir other && ln sub2/secret.txt other/secret.txt");
  ASSERT_EQ(moved.exit_code, 0) << moved.stderr_data;
  for (const std::string& path : std::vector<std::string>{
           "sub2/secret.txt", "sub/secret.txt", "hardlink.txt", "other/secret.txt",
           "keep2/deep/a.txt", "keep2/new.txt", "keep2/deep/newdir/b.txt", "keep/x.txt"}) {
    const auto written = backend.write_file({path, "changed"});
    EXPECT_NE(written.error.find("protected"), std::string::npos) << path << ": " << written.error;
    EXPECT_EQ(written.bytes_written, 0u) << path;
  }
  EXPECT_EQ(read_text(workspace_ / "sub2" / "secret.txt"), "secret");
  EXPECT_EQ(fs::hard_link_count(workspace_ / "sub2" / "secret.txt"), 3u);
  EXPECT_EQ(read_text(workspace_ / "keep2" / "deep" / "a.txt"), "kept");
  EXPECT_FALSE(fs::exists(workspace_ / "keep2" / "new.txt"));
  EXPECT_FALSE(fs::exists(workspace_ / "keep2" / "deep" / "newdir"));
  // The directory that held the file is not protected, nor is a copy of the file.
  ASSERT_EQ(run(backend, "cp sub2/secret.txt copy.txt").exit_code, 0);
  EXPECT_EQ(backend.write_file({"sub2/other.txt", "ok"}).error, "");
  EXPECT_EQ(backend.write_file({"copy.txt", "ok"}).error, "");
  // A restart records nothing new and forgets nothing: the moved file stays protected.
  backend.stop();
  ASSERT_EQ(backend.start(), "");
  EXPECT_NE(backend.write_file({"sub2/secret.txt", "changed"}).error.find("protected"),
            std::string::npos);
  EXPECT_EQ(read_text(workspace_ / "sub2" / "secret.txt"), "secret");
}

// MassGen's local skills: <workspace>/.agent/skills leads to the skills dir; a stale link is
// repointed, a real directory of the user's is left as it is.
TEST_F(LocalBackendTest, SkillsDirIsLinkedIntoTheWorkspace) {
  const fs::path skills = root_ / "skills";
  fs::create_directories(skills);
  std::ofstream(skills / "SKILL.md") << "skill";
  auto make_with_skills = [&] {
    execmcp::sdk::BackendInit init;
    init.agent_id = "local-test";
    init.cwd = workspace_.string();
    init.paths = {{workspace_.string(), true}, {skills.string(), false}};
    init.skills_dir = skills.string();
    init.settings_json = "{}";
    backends_.push_back(factory_(init));
    EXPECT_EQ(backends_.back()->start(), "");
    return backends_.back().get();
  };
  auto* backend = make_with_skills();
  EXPECT_EQ(fs::read_symlink(workspace_ / ".agent" / "skills"), skills);
  EXPECT_EQ(run(*backend, "cat .agent/skills/SKILL.md").stdout_data, "skill");
  fs::remove(workspace_ / ".agent" / "skills");
  fs::create_directory_symlink(root_, workspace_ / ".agent" / "skills");
  make_with_skills();
  EXPECT_EQ(fs::read_symlink(workspace_ / ".agent" / "skills"), skills);
  fs::remove(workspace_ / ".agent" / "skills");
  fs::create_directories(workspace_ / ".agent" / "skills");
  std::ofstream(workspace_ / ".agent" / "skills" / "mine.md") << "mine";
  make_with_skills();
  EXPECT_FALSE(fs::is_symlink(workspace_ / ".agent" / "skills"));
  EXPECT_EQ(read_text(workspace_ / ".agent" / "skills" / "mine.md"), "mine");
  // A `.agent` the agent made a symlink elsewhere is not followed: nothing is written there.
  fs::remove_all(workspace_ / ".agent");
  const fs::path elsewhere = root_ / "elsewhere";
  fs::create_directories(elsewhere);
  fs::create_symlink(elsewhere / "old", elsewhere / "skills");
  fs::create_directory_symlink(elsewhere, workspace_ / ".agent");
  make_with_skills();
  EXPECT_EQ(fs::read_symlink(elsewhere / "skills"), elsewhere / "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(elsewhere), fs::directory_iterator()), 1);
}

TEST_F(LocalBackendTest, DescriptorSaysLocalBackend) {
  boost::dll::shared_library library(EXECMCP_LOCAL_PLUGIN_PATH);
  const auto& descriptor =
      library.get_alias<const execmcp::sdk::PluginDescriptor>(execmcp::sdk::kDescriptorSymbol);
  EXPECT_EQ(descriptor.magic, execmcp::sdk::kDescriptorMagic);
  EXPECT_STREQ(descriptor.name, "local");
  EXPECT_EQ(descriptor.kind, execmcp::sdk::PluginKind::Backend);
  EXPECT_EQ(descriptor.abi_major, execmcp::sdk::kAbiMajor);
}

TEST_F(LocalBackendTest, RefusesBadSettingsNamingTheKey) {
  auto unknown = refusal(R"({"shel": "/bin/sh"})");
  EXPECT_NE(unknown.find("unknown setting 'shel'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("known: shell, command_prefix"), std::string::npos) << unknown;
  EXPECT_NE(refusal(R"({"auto_venv": "yes"})").find("'auto_venv'"), std::string::npos);
  EXPECT_NE(refusal(R"({"env": {"A": 1}})").find("'env.A'"), std::string::npos);
  EXPECT_NE(refusal(R"({"env": []})").find("'env'"), std::string::npos);
  EXPECT_NE(refusal(R"({"shell": "/no/such/shell"})").find("'shell'"), std::string::npos);
  EXPECT_NE(refusal(R"([1])").find("object"), std::string::npos);
  EXPECT_NE(refusal("{not json").find("JSON"), std::string::npos);
  EXPECT_EQ(refusal(""), "");
}

TEST_F(LocalBackendTest, TraitsComeFromInit) {
  auto traits = make("{}", "/opt/tools").traits();
  EXPECT_EQ(traits.tools_dir, "/opt/tools");
  EXPECT_EQ(traits.python, "python3");
  EXPECT_FALSE(traits.isolated);
}

TEST_F(LocalBackendTest, StartCreatesAMissingCwd) {
  fs::remove_all(workspace_);
  make("{}");
  EXPECT_TRUE(fs::is_directory(workspace_));
}

TEST_F(LocalBackendTest, StdinIsDevNull) {
  auto& backend = make("{}");
  auto result = run(backend, "readlink /proc/self/fd/0; cat", 30s);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.stdout_data, "/dev/null\n");
}

TEST_F(LocalBackendTest, TimeoutLeavesNoMarkedProcessAlive) {
  auto& backend = make("{}");
  const std::string marker = unique_sleep_arg();
  // One grandchild in the shell's group, one that leaves it with setsid, one double-forked.
  auto future = std::async(std::launch::async, [&] {
    return run(backend,
               "sleep " + marker + " & setsid sleep " + marker + " & (sleep " + marker +
                   " &) ; sleep 1000",
               3s);
  });
  // `setsid` forks when it leads its group, so for a moment two processes carry the marker for
  // it: wait until exactly three are there on three looks in a row.
  auto until = std::chrono::steady_clock::now() + 20s;
  for (int stable = 0; stable < 3 && std::chrono::steady_clock::now() < until;) {
    stable = count_processes_with_arg(marker) == 3 ? stable + 1 : 0;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(count_processes_with_arg(marker), 3) << "the marked processes never all started";
  auto result = future.get();
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.exit_code, 128 + 9);
  EXPECT_EQ(count_processes_with_arg(marker), 0) << "a descendant survived the timeout";
}

TEST_F(LocalBackendTest, NormalExitKillsLeftoverBackgroundProcesses) {
  auto& backend = make("{}");
  const std::string marker = unique_sleep_arg();
  auto started = std::chrono::steady_clock::now();
  auto result =
      run(backend, "sleep " + marker + " & setsid sleep " + marker + " & sleep 0.3; echo hi", 120s);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 20s) << "waited for the leftovers";
  EXPECT_EQ(result.stdout_data, "hi\n");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(count_processes_with_arg(marker), 0);
}

TEST_F(LocalBackendTest, HugeOutputKeepsMemoryFlat) {
  auto& backend = make("{}");
  // Reset the peak-RSS counter so this test measures only itself.
  std::ofstream("/proc/self/clear_refs") << "5";
  const auto peak_before = peak_rss_kib();
  ExecRequest request;
  request.command = "head -c 200000000 /dev/zero; head -c 100000000 /dev/zero >&2";
  request.output_cap = 1024 * 1024;
  request.timeout = 170s;
  auto result = backend.execute(request);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.stdout_data.size(), 1024u * 1024u);
  EXPECT_EQ(result.stderr_data.size(), 1024u * 1024u);
  EXPECT_TRUE(result.stdout_truncated);
  EXPECT_TRUE(result.stderr_truncated);
  EXPECT_LT(peak_rss_kib(), peak_before + 64 * 1024) << "memory grew with the output";
}

TEST_F(LocalBackendTest, WorkDirOutsideIsRefusedWithAClearMessage) {
  auto& backend = make("{}");
  fs::create_directories(root_ / "other");
  fs::create_symlink(root_ / "other", workspace_ / "link-out");
  for (const std::string& dir : {(root_ / "other").string(), std::string("link-out")}) {
    auto result = run(backend, "echo ran", 60s, dir);
    EXPECT_NE(result.error.find("work_dir"), std::string::npos) << result.error;
    EXPECT_NE(result.error.find("outside this agent's allowed paths"), std::string::npos)
        << result.error;
    EXPECT_EQ(result.stdout_data, "");
  }
  // A symlink that stays inside is fine.
  fs::create_directories(workspace_ / "real");
  fs::create_symlink(workspace_ / "real", workspace_ / "link-in");
  EXPECT_EQ(run(backend, "pwd -P", 60s, "link-in").stdout_data,
            (workspace_ / "real").string() + "\n");
}

TEST_F(LocalBackendTest, ShellSettingIsUsed) {
  auto& bash = make(R"({"shell": "/bin/bash"})");
  EXPECT_NE(run(bash, "printf %s \"$BASH_VERSION\"").stdout_data, "");
}

TEST_F(LocalBackendTest, SettingsEnvAndRequestEnvApplyInOrder) {
  auto& backend = make(R"({"env": {"EXECMCP_A": "settings", "EXECMCP_B": "settings"}})");
  ExecRequest request;
  request.command = "printf '%s|%s' \"$EXECMCP_A\" \"$EXECMCP_B\"";
  request.env = {{"EXECMCP_B", "request"}};
  EXPECT_EQ(backend.execute(request).stdout_data, "settings|request");
  request.env = {{"BAD=NAME", "x"}};
  EXPECT_NE(backend.execute(request).error, "");
}

TEST_F(LocalBackendTest, VenvPrecedence) {
  const fs::path explicit_venv = root_ / "explicit-venv";
  make_venv(explicit_venv);
  make_venv(workspace_ / ".venv");
  fs::create_directories(workspace_ / "sub");
  make_venv(workspace_ / "sub" / ".venv");
  const std::string probe = "printf '%s|%s' \"$VIRTUAL_ENV\" \"$(command -v python)\"";
  auto expect_venv = [&](const std::string& output, const fs::path& venv) {
    EXPECT_EQ(output, venv.string() + "|" + (venv / "bin" / "python").string());
  };

  // Auto-detected: the work dir's .venv first, then the agent cwd's.
  auto& automatic = make("{}");
  expect_venv(run(automatic, probe).stdout_data, workspace_ / ".venv");
  expect_venv(run(automatic, probe, 60s, "sub").stdout_data, workspace_ / "sub" / ".venv");
  // The venv's interpreter really runs.
  EXPECT_EQ(run(automatic, "python -c 'import sys; print(sys.prefix)'").stdout_data,
            (workspace_ / ".venv").string() + "\n");

  auto& no_auto = make(R"({"auto_venv": false})");
  EXPECT_EQ(run(no_auto, "printf '%s' \"$VIRTUAL_ENV\"").stdout_data, "");

  // venv_path beats the auto-detected one.
  auto& explicit_backend = make(R"({"venv_path": ")" + explicit_venv.string() + R"("})");
  expect_venv(run(explicit_backend, probe).stdout_data, explicit_venv);

  // command_prefix and venv_path both apply, as in the Docker backends: the venv is active and
  // the prefix wraps the command.
  auto& prefixed = make(R"({"command_prefix": "env EXECMCP_PREFIXED=1", "venv_path": ")" +
                        explicit_venv.string() + R"("})");
  auto result = run(prefixed, "printenv EXECMCP_PREFIXED VIRTUAL_ENV");
  EXPECT_EQ(result.stdout_data, "1\n" + explicit_venv.string() + "\n");
  // So does the auto-detected venv.
  auto& prefixed_auto = make(R"({"command_prefix": "env EXECMCP_PREFIXED=1"})");
  EXPECT_EQ(run(prefixed_auto, "printenv EXECMCP_PREFIXED VIRTUAL_ENV").stdout_data,
            "1\n" + (workspace_ / ".venv").string() + "\n");

  // A venv_path without bin/ is an error naming it; nothing runs.
  fs::create_directories(root_ / "not-a-venv");
  auto& broken = make(R"({"venv_path": ")" + (root_ / "not-a-venv").string() + R"("})");
  auto refused = run(broken, "echo ran");
  EXPECT_NE(refused.error.find("not-a-venv"), std::string::npos) << refused.error;
  EXPECT_EQ(refused.stdout_data, "");
}

TEST_F(LocalBackendTest, CancelledResultReportsKillSignal) {
  auto& backend = make("{}");
  execmcp::sdk::CancelToken cancel;
  cancel.request_cancel();  // already cancelled: killed at once
  ExecRequest request;
  request.command = "sleep 1000";
  request.cancel = &cancel;
  auto result = backend.execute(request);
  EXPECT_TRUE(result.cancelled);
  EXPECT_EQ(result.exit_code, 128 + 9);
}

TEST_F(LocalBackendTest, LongCommandArrivesWhole) {
  // Commands up to 60 KiB travel in the supervisor message, longer ones in a memfd: test both.
  auto& backend = make("{}");
  for (const std::size_t size : {std::size_t{50} * 1024, std::size_t{100} * 1024}) {
    const std::string payload(size, 'y');
    auto result = run(backend, "x=" + payload + "; printf '%s' \"${#x}\"");
    EXPECT_EQ(result.error, "");
    EXPECT_EQ(result.stdout_data, std::to_string(size));
  }
  // Past the kernel's limit for one argument (128 KiB) the shell cannot start: said on stderr.
  auto result = run(backend, "x=" + std::string(300 * 1024, 'y'));
  EXPECT_EQ(result.exit_code, 127);
  EXPECT_NE(result.stderr_data.find("Argument list too long"), std::string::npos)
      << result.stderr_data;
}

// The supervisor program's spares (the parents of the shells) and whether each is still alive.
std::set<std::string> shell_parents(ExecutorBackend& backend, int commands) {
  std::set<std::string> parents;
  for (int i = 0; i < commands; ++i) {
    ExecRequest request;
    request.command = "printf %s $PPID";
    parents.insert(backend.execute(request).stdout_data);
  }
  return parents;
}

TEST_F(LocalBackendTest, SupervisingProcessesAreReusedNotForkedPerCommand) {
  auto& backend = make("{}");
  // One spare runs a command while another waits; no new process per command. On a loaded
  // machine a spare may not be idle again when the next command comes, and the pool forks
  // another (a bound of 3 failed once at a load average of 16), so the bound is well under one per
  // command.
  const auto parents = shell_parents(backend, 20);
  EXPECT_GE(parents.size(), 1u);
  EXPECT_LE(parents.size(), 8u) << "a supervising process per command";
  // Reuse leaks nothing between commands: each starts in the work dir with a fresh shell.
  EXPECT_EQ(run(backend, "cd /; export EXECMCP_LEAK=1").exit_code, 0);
  EXPECT_EQ(run(backend, "pwd -P; printf '%s' \"${EXECMCP_LEAK:-unset}\"").stdout_data,
            workspace_.string() + "\nunset");
}

TEST_F(LocalBackendTest, SupervisorKilledMidCommandEndsTheCallAndItsProcesses) {
  auto& backend = make("{}");
  const std::string marker = unique_sleep_arg();
  const fs::path pid_file = workspace_ / "parent.pid";
  auto future = std::async(std::launch::async, [&] {
    return run(backend, "echo $PPID > parent.pid; sleep " + marker, 120s);
  });
  auto until = std::chrono::steady_clock::now() + 20s;
  while (count_processes_with_arg(marker) < 1 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  ASSERT_EQ(count_processes_with_arg(marker), 1);
  const int parent = std::stoi(read_text(pid_file));
  ASSERT_GT(parent, 1);
  ASSERT_EQ(::kill(parent, SIGKILL), 0);
  ASSERT_EQ(future.wait_for(30s), std::future_status::ready) << "the call hung";
  auto result = future.get();
  EXPECT_NE(result.error.find("ended without reporting"), std::string::npos) << result.error;
  until = std::chrono::steady_clock::now() + 10s;
  while (count_processes_with_arg(marker) > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  EXPECT_EQ(count_processes_with_arg(marker), 0) << "the command outlived its supervisor";
  // The next command gets a new supervising process.
  EXPECT_EQ(run(backend, "echo again").stdout_data, "again\n");
}

TEST_F(LocalBackendTest, CommandThatStopsItsSupervisorReportsItsOwnEndPromptly) {
  auto& backend = make("{}");
  // Stops both the spare running it and the program that forks spares, then ends by itself. The
  // host wakes them: the call ends when the command does, not at its timeout, and says exit 0 only.
  auto call = std::async(std::launch::async, [&backend] {
    return run(backend, "kill -STOP $(ps -o ppid= -p $PPID) $PPID; sleep 0.2; echo done", 40s);
  });
  ASSERT_EQ(call.wait_for(30s), std::future_status::ready) << "waited for the timeout";
  auto result = call.get();
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.error, "");
  EXPECT_EQ(result.stdout_data, "done\n");
  // Parallel calls, which need new spares from the program, run.
  std::vector<std::future<ExecResult>> calls;
  for (int i = 0; i < 4; ++i)
    calls.push_back(std::async(std::launch::async,
                               [&backend] { return run(backend, "sleep 0.2; echo next"); }));
  for (auto& next : calls) {
    ASSERT_EQ(next.wait_for(30s), std::future_status::ready) << "a later call hung";
    EXPECT_EQ(next.get().stdout_data, "next\n");
  }
}

TEST_F(LocalBackendTest, CommandThatStopsItsSupervisorAndRunsOnIsKilledAtItsTimeout) {
  auto& backend = make("{}");
  auto result = run(backend, "kill -STOP $PPID; echo started; sleep 1000", 2s);
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.exit_code, 128 + 9) << "a timed-out command never reports its own exit";
  EXPECT_EQ(result.stdout_data, "started\n");
}

// The pids of this process's execmcp-supervisor program and of its children (its spares).
std::vector<long> supervisor_processes() {
  auto ppid_of = [](const fs::path& proc) {
    const std::string stat = read_proc_file(proc / "stat");
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 4 >= stat.size()) return -1L;
    return std::strtol(stat.c_str() + paren + 4, nullptr, 10);  // after ") S "
  };
  std::vector<std::pair<long, long>> processes;  // pid, ppid
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    processes.emplace_back(std::stol(name), ppid_of(entry.path()));
  }
  long supervisor = -1;
  for (const auto& [pid, ppid] : processes) {
    if (ppid == ::getpid() && read_proc_file(fs::path("/proc") / std::to_string(pid) / "comm")
                                      .rfind("execmcp-superv", 0) == 0)
      supervisor = pid;
  }
  if (supervisor < 0) return {};
  std::vector<long> pids{supervisor};
  for (const auto& [pid, ppid] : processes) {
    if (ppid == supervisor) pids.push_back(pid);
  }
  return pids;
}

// How many spares the supervisor program has, or -1 when there is none.
int supervisor_spares() {
  return static_cast<int>(supervisor_processes().size()) - 1;
}

TEST_F(LocalBackendTest, SupervisorProgramKilledIsRestartedAndNoCallHangs) {
  auto& backend = make("{}");
  EXPECT_EQ(run(backend, "echo first").stdout_data, "first\n");
  const std::string marker = unique_sleep_arg();
  auto running =
      std::async(std::launch::async, [&] { return run(backend, "sleep " + marker, 120s); });
  auto until = std::chrono::steady_clock::now() + 20s;
  while (count_processes_with_arg(marker) < 1 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  ASSERT_EQ(count_processes_with_arg(marker), 1);
  const auto pids = supervisor_processes();
  ASSERT_FALSE(pids.empty());
  ASSERT_EQ(::kill(static_cast<pid_t>(pids.front()), SIGKILL), 0);
  // Until it has exited (a zombie of ours) a call may still reach it, or a spare about to die.
  const std::string stat_path = "/proc/" + std::to_string(pids.front()) + "/stat";
  until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until) {
    const std::string stat = read_proc_file(stat_path);
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z') break;
    std::this_thread::sleep_for(5ms);
  }
  // The next calls start the program again; none of them waits for a spare that will never come.
  for (int i = 0; i < 3; ++i) {
    auto next = std::async(std::launch::async, [&] { return run(backend, "echo again", 60s); });
    ASSERT_EQ(next.wait_for(30s), std::future_status::ready) << "a call after the kill hung";
    EXPECT_EQ(next.get().stdout_data, "again\n");
  }
  // The running call kept its spare (a busy spare outlives the program, so the program's death
  // leaves no command unsupervised): it still runs, and ends as its command does.
  EXPECT_EQ(running.wait_for(200ms), std::future_status::timeout);
  EXPECT_EQ(count_processes_with_arg(marker), 1);
  count_processes_with_arg(marker, SIGKILL);
  ASSERT_EQ(running.wait_for(30s), std::future_status::ready) << "the running call hung";
  const auto ended = running.get();
  EXPECT_EQ(ended.error, "");
  EXPECT_EQ(ended.exit_code, 128 + SIGKILL);
}

TEST_F(LocalBackendTest, ParallelBurstCompletesAndLeavesFewProcessesBehind) {
  auto& backend = make("{}");
  constexpr int kCalls = 16;
  const std::string marker = unique_sleep_arg();
  std::vector<std::future<ExecResult>> calls;
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(std::async(std::launch::async, [&backend, &marker, i] {
      return run(backend, "sleep " + marker + " & wait; echo " + std::to_string(i), 120s);
    }));
  }
  auto until = std::chrono::steady_clock::now() + 30s;
  while (count_processes_with_arg(marker) < kCalls && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  // All at once, each under its own supervising process.
  ASSERT_EQ(count_processes_with_arg(marker), kCalls);
  EXPECT_GE(supervisor_spares(), kCalls);
  count_processes_with_arg(marker, SIGTERM);
  for (int i = 0; i < kCalls; ++i) {
    auto result = calls[static_cast<std::size_t>(i)].get();
    EXPECT_EQ(result.error, "");
    EXPECT_EQ(result.stdout_data, std::to_string(i) + "\n");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, 60s);
  // Once the burst is over, spares beyond the eight kept idle exit.
  until = std::chrono::steady_clock::now() + 10s;
  while (supervisor_spares() > 9 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  EXPECT_LE(supervisor_spares(), 9);
  EXPECT_GE(supervisor_spares(), 1);
}

TEST_F(LocalBackendTest, StopLeavesNoSupervisingProcessNotEvenAZombie) {
  auto& backend = make("{}");
  std::vector<std::future<ExecResult>> calls;
  for (int i = 0; i < 3; ++i)
    calls.push_back(
        std::async(std::launch::async, [&backend] { return run(backend, "sleep 0.3"); }));
  for (auto& call : calls) EXPECT_EQ(call.get().exit_code, 0);
  const auto pids = supervisor_processes();
  ASSERT_GE(pids.size(), 4u) << "the program and at least three spares";
  backend.stop();
  // Reaped, not left to whoever inherits them (a zombie still has its /proc entry).
  for (const long pid : pids) EXPECT_FALSE(fs::exists("/proc/" + std::to_string(pid))) << pid;
}

// Runs `call` on a thread; when it has not returned after `limit`, runs `unblock` (so a blocked
// call can end and the test fail instead of hang) and reports the hang.
template <class Call, class Unblock>
auto bounded(Call call, Unblock unblock, std::chrono::seconds limit = 10s) {
  auto future = std::async(std::launch::async, call);
  const bool hung = future.wait_for(limit) != std::future_status::ready;
  if (hung) unblock();
  auto result = future.get();
  EXPECT_FALSE(hung) << "the file tool blocked";
  return result;
}

TEST_F(LocalBackendTest, FileToolsRefuseSpecialFilesAtOnce) {
  auto& backend = make("{}");
  const fs::path fifo = workspace_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  fs::create_symlink("fifo", workspace_ / "to-fifo");
  for (const std::string name : {"fifo", "to-fifo"}) {
    auto read = bounded([&] { return backend.read_file({name}); },
                        [&] { ::close(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK)); });
    EXPECT_NE(read.error.find("FIFO"), std::string::npos) << read.error;
    auto write = bounded(
        [&] {
          return backend.write_file({name, "x"});
        },
        [&] {
          ::signal(SIGPIPE, SIG_IGN);  // the blocked writer then writes to no one
          ::close(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK));
        });
    EXPECT_NE(write.error.find("FIFO"), std::string::npos) << write.error;
  }
  EXPECT_TRUE(fs::is_fifo(fifo)) << "the FIFO was replaced";

  const fs::path socket_path = workspace_ / "sock";
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket_path.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_NE(backend.read_file({"sock"}).error.find("socket"), std::string::npos);
  EXPECT_NE(backend.write_file({"sock", "x"}).error.find("socket"), std::string::npos);
  ::close(sock);

  fs::create_directories(workspace_ / "dir");
  EXPECT_NE(backend.read_file({"dir"}).error.find("directory"), std::string::npos);
  EXPECT_NE(backend.write_file({"dir", "x"}).error.find("directory"), std::string::npos);

  if (::geteuid() == 0 && ::mknod((workspace_ / "zero").c_str(), S_IFCHR | 0644, ::makedev(1, 5)) ==
                              0) {  // /dev/zero: reading never ends
    auto read = bounded([&] { return backend.read_file({"zero"}); }, [] {});
    EXPECT_NE(read.error.find("device"), std::string::npos) << read.error;
    EXPECT_EQ(read.data, "");
  }
}

TEST_F(LocalBackendTest, FileToolsRefuseANulInThePath) {
  auto& backend = make("{}");
  std::ofstream(workspace_ / "a") << "cut here";
  const std::string path("a\0/b", 4);
  auto read = backend.read_file({path});
  EXPECT_NE(read.error.find("NUL"), std::string::npos) << read.error;
  EXPECT_EQ(read.data, "");
  EXPECT_NE(backend.write_file({path, "x"}).error.find("NUL"), std::string::npos);
  EXPECT_EQ(read_text(workspace_ / "a"), "cut here");
  EXPECT_NE(run(backend, "pwd", 60s, std::string("\0", 1)).error.find("NUL"), std::string::npos);
}

TEST_F(LocalBackendTest, FileToolsGiveUpWhenCancelled) {
  auto& backend = make("{}");
  std::ofstream(workspace_ / "big") << std::string(3 * 1024 * 1024, 'b');
  execmcp::sdk::CancelToken cancel;
  cancel.request_cancel();
  execmcp::sdk::FileReadRequest read_request{"big"};
  read_request.cancel = &cancel;
  auto read = backend.read_file(read_request);
  EXPECT_NE(read.error.find("cancelled"), std::string::npos) << read.error;
  EXPECT_EQ(read.data, "");
  execmcp::sdk::FileWriteRequest write_request{"big", "new"};
  write_request.cancel = &cancel;
  EXPECT_NE(backend.write_file(write_request).error.find("cancelled"), std::string::npos);
  EXPECT_EQ(fs::file_size(workspace_ / "big"), 3u * 1024 * 1024) << "the old file was changed";
}

// A directory on the way is swapped for a symlink out and back (atomically, RENAME_EXCHANGE) as
// fast as possible while the file tools read and write through it: nothing outside may be read
// or written, however the race falls.
TEST_F(LocalBackendTest, FileToolsNeverReachOutsideWhileASymlinkIsSwappedIn) {
  auto& backend = make("{}");
  const fs::path outside = root_ / "outside";
  fs::create_directories(outside);
  std::ofstream(outside / "f.txt") << "SECRET";
  fs::create_directories(workspace_ / "d");
  std::ofstream(workspace_ / "d" / "f.txt") << "inside";
  fs::create_symlink(outside, workspace_ / "d-link");
  execmcp::test::SwapWhileAlive swapper(workspace_ / "d", workspace_ / "d-link");
  int reads = 0;
  int writes = 0;
  int tries = 0;
  bool read_outside = false;
  // 2000 tries, and on a loaded machine more until a read and a write got through.
  const auto until = std::chrono::steady_clock::now() + 10s;
  for (; (tries < 2000 || reads == 0 || writes == 0) && std::chrono::steady_clock::now() < until;
       ++tries) {
    auto read = backend.read_file({"d/f.txt"});
    if (read.data == "SECRET") {
      read_outside = true;
      break;
    }
    reads += read.data == "inside" ? 1 : 0;
    writes += backend.write_file({"d/w.txt", "x"}).error.empty() ? 1 : 0;
    if (fs::exists(outside / "w.txt")) break;
  }
  swapper.stop();
  EXPECT_FALSE(fs::exists(outside / "w.txt")) << "wrote outside within " << tries << " tries";
  EXPECT_FALSE(read_outside) << "read outside within " << tries << " tries";
  EXPECT_GT(reads, 0) << "no read got through the race: the test proves nothing";
  EXPECT_GT(writes, 0);
}

TEST_F(LocalBackendTest, WorkDirNeverOutsideWhileASymlinkIsSwappedIn) {
  auto& backend = make("{}");
  const fs::path outside = root_ / "outside";
  fs::create_directories(outside);
  fs::create_directories(workspace_ / "d");
  fs::create_symlink(outside, workspace_ / "d-link");
  execmcp::test::SwapWhileAlive swapper(workspace_ / "d", workspace_ / "d-link");
  int ran = 0;
  std::string escaped;
  std::string last_error;
  // 300 tries, and on a loaded machine more until one got through (each refusal is quick).
  const auto until = std::chrono::steady_clock::now() + 10s;
  for (int i = 0;
       (i < 300 || ran == 0) && std::chrono::steady_clock::now() < until && escaped.empty(); ++i) {
    auto result = run(backend, "pwd -P", 60s, "d");
    if (result.stdout_data == outside.string() + "\n") escaped = result.stdout_data;
    ran += result.error.empty() ? 1 : 0;
    if (!result.error.empty()) last_error = result.error;
  }
  swapper.stop();
  EXPECT_EQ(escaped, "") << "the command ran outside the grants";
  EXPECT_GT(ran, 0) << "no command got through the race: the test proves nothing; last error: "
                    << last_error;
}

// The SDK lets the host call every method from several threads at once, start() included: a
// start() again while commands and file tools run must leave them their grants intact. Before,
// start() reassigned the resolved grants under the calls reading them (TSan saw the race; a plain
// build read freed strings and refused paths it should have allowed).
TEST_F(LocalBackendTest, StartAgainWhileCallsRunLeavesThemTheirGrants) {
  auto& backend = make("{}");
  fs::create_directories(workspace_ / "sub");
  std::ofstream(workspace_ / "sub" / "f.txt") << "inside";
  std::atomic<int> busy{3};
  std::atomic<int> starts{0};
  std::string start_error;
  std::thread starter([&] {
    while (busy.load() > 0) {
      if (auto error = backend.start(); !error.empty() && start_error.empty()) start_error = error;
      ++starts;
    }
  });
  auto reader = [&] {
    std::string wrong;
    for (int i = 0; i < 400 && wrong.empty(); ++i) {
      auto read = backend.read_file({(workspace_ / "sub" / "f.txt").string()});
      if (read.data != "inside") wrong = "read_file: '" + read.data + "', error: " + read.error;
      auto written = backend.write_file({"sub/w" + std::to_string(i % 4) + ".txt", "x"});
      if (!written.error.empty()) wrong = "write_file: " + written.error;
    }
    --busy;
    return wrong;
  };
  auto runner = [&] {
    std::string wrong;
    for (int i = 0; i < 40 && wrong.empty(); ++i) {
      auto result = run(backend, "pwd -P", 60s, "sub");
      if (result.stdout_data != (workspace_ / "sub").string() + "\n")
        wrong = "execute: '" + result.stdout_data + "', error: " + result.error;
    }
    --busy;
    return wrong;
  };
  auto read_a = std::async(std::launch::async, reader);
  auto read_b = std::async(std::launch::async, reader);
  auto execute = std::async(std::launch::async, runner);
  EXPECT_EQ(read_a.get(), "");
  EXPECT_EQ(read_b.get(), "");
  EXPECT_EQ(execute.get(), "");
  starter.join();
  EXPECT_EQ(start_error, "");
  EXPECT_GT(starts.load(), 1) << "start() never ran beside the calls: the test proves nothing";
}

TEST_F(LocalBackendTest, WriteFileNeverWritesThroughAHardLink) {
  auto& backend = make("{}");
  const fs::path outside = root_ / "outside";
  fs::create_directories(outside);
  std::ofstream(outside / "f.txt") << "outside";
  fs::create_hard_link(outside / "f.txt", workspace_ / "hl");
  // Reading it reads the shared inode (see docs/security.md, "Local file tools").
  EXPECT_EQ(backend.read_file({"hl"}).data, "outside");
  auto written = backend.write_file({"hl", "new"});
  EXPECT_EQ(written.error, "");
  EXPECT_EQ(read_text(workspace_ / "hl"), "new");
  EXPECT_EQ(read_text(outside / "f.txt"), "outside") << "wrote through the hard link";
}

TEST_F(LocalBackendTest, WriteFileKeepsModeAndLeavesNoTemporaryFile) {
  auto& backend = make("{}");
  std::ofstream(workspace_ / "script.sh") << "old";
  fs::permissions(workspace_ / "script.sh", fs::perms(0750));
  EXPECT_EQ(backend.write_file({"script.sh", "new"}).error, "");
  EXPECT_EQ(fs::status(workspace_ / "script.sh").permissions(), fs::perms(0750));
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(workspace_)) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST_F(LocalBackendTest, WriteFileOnAFullFileSystemSaysSoAndKeepsTheOldFile) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  auto& backend = make("{}");
  const fs::path small = workspace_ / "small";
  fs::create_directories(small);
  if (::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=256k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  struct Unmount {
    fs::path path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{small};
  ASSERT_EQ(backend.write_file({"small/f.txt", "old content"}).error, "");
  auto full = backend.write_file({"small/f.txt", std::string(1024 * 1024, 'x')});
  EXPECT_NE(full.error.find("No space left on device"), std::string::npos) << full.error;
  EXPECT_EQ(full.bytes_written, 0u);
  EXPECT_EQ(read_text(small / "f.txt").substr(0, 40), "old content");
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(small)) ++entries;
  EXPECT_EQ(entries, 1) << "a partial temporary file was left behind";
}

}  // namespace
