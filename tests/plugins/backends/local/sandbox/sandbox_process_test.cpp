// SandboxProcess on the real kernel: bubblewrap started as an unprivileged uid runs /bin/sh (or
// execmcp-runner) and the test reads what it saw through the channel. Each property of the
// issue's list that the launcher alone gives is checked from inside.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sandbox_launcher.hpp"
#include "sandbox_test_support.hpp"
#include "supervision/runner_protocol.hpp"

namespace fs = std::filesystem;
namespace sb = execmcp::plugins::local::sandbox;

namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// Reads `fd` until EOF (or the deadline).
std::string read_all(int fd, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

std::string ns_of(pid_t pid) {
  std::error_code ec;
  return fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/pid", ec).string();
}

// Host pids of live processes whose pid namespace is `ns`.
std::vector<pid_t> members_of(const std::string& ns) {
  std::vector<pid_t> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (ns_of(std::stoi(name)) != ns) continue;
    // A zombie holds nothing but its pid: the host's init reaps an orphaned one when it will.
    std::ifstream stat("/proc/" + name + "/stat");
    std::string text;
    std::getline(stat, text);
    const auto paren = text.rfind(')');
    if (paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z') continue;
    pids.push_back(std::stoi(name));
  }
  return pids;
}

class SandboxProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
    uid_ = ::geteuid() == 0 ? 1000 : ::geteuid();
    gid_ = ::geteuid() == 0 ? 1000 : ::getegid();
    char tmpl[] = "/tmp/execmcp-sbx-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    ::chmod(root_.c_str(), 0711);  // the sandbox uid must be able to reach the mount sources
    ws_ = root_ + "/ws";
    ro_ = root_ + "/ro";
    for (const auto& dir : {ws_, ws_ + "/a", ws_ + "/a/b", ws_ + "/secret", ro_}) {
      fs::create_directories(dir);
      ::chmod(dir.c_str(), 0755);
      ASSERT_EQ(::chown(dir.c_str(), uid_, gid_), 0);
    }
    write_file(ws_ + "/a/b/protected.txt", "keep");
    write_file(ws_ + "/secret/canary", "PRIVATE-CANARY");
    write_file(ro_ + "/readme", "ro");
    for (const auto& f : {ws_ + "/a/b/protected.txt", ws_ + "/secret/canary"})
      ASSERT_EQ(::chown(f.c_str(), uid_, gid_), 0);
    tag_ = std::to_string(::getpid());
    if (::geteuid() == 0) {
      root_canary_ = "/root/execmcp-sbx-canary-" + tag_;
      home_canary_ = "/home/execmcp-sbx-canary-" + tag_;
      write_file(root_canary_, "ROOT-CANARY");
      write_file(home_canary_, "HOME-CANARY");
      ::chmod(home_canary_.c_str(), 0644);
    }
  }
  void TearDown() override {
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
    if (!root_canary_.empty()) fs::remove(root_canary_, ec);
    if (!home_canary_.empty()) fs::remove(home_canary_, ec);
  }

  sb::SandboxSpec shell(const std::string& script) const {
    sb::SandboxSpec spec;
    spec.mounts = {{ws_, ws_, true}, {ro_, ro_, false}};
    spec.protected_paths = {ws_ + "/a/b/protected.txt"};
    spec.private_paths = {ws_ + "/secret"};
    spec.program = "/bin/sh";
    spec.args = {"-c", script};
    spec.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"HOME", "/home/agent"}};
    spec.work_dir = ws_;
    spec.uid = uid_;
    spec.gid = gid_;
    spec.tmp_bytes = 16 << 20;
    spec.runner_landlock = false;
    return spec;
  }

  // Runs `script` in a sandbox and returns its stdout (stderr is folded in by the script).
  std::string run(const std::string& script) {
    std::string error;
    auto sandbox = sb::SandboxProcess::start(shell(script), error);
    EXPECT_NE(sandbox, nullptr) << error;
    if (!sandbox) return {};
    const int channel = sandbox->take_channel_fd();
    std::string out = read_all(channel);
    ::close(channel);
    sandbox->stop(std::chrono::milliseconds(2000));
    return out;
  }

  uid_t uid_ = 0;
  gid_t gid_ = 0;
  std::string root_, ws_, ro_, tag_, root_canary_, home_canary_;
};

TEST_F(SandboxProcessTest, RunsUnprivilegedWithEveryLayer) {
  const std::string out = run(
      "id -u; id -un; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; echo HOME=$HOME;"
      "pwd; env | wc -l");
  EXPECT_NE(out.find(std::to_string(uid_) + "\nagent\n"), std::string::npos) << out;
  EXPECT_NE(out.find("CapEff:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("NoNewPrivs:\t1"), std::string::npos) << out;
  EXPECT_NE(out.find("Seccomp:\t2"), std::string::npos) << out;
  EXPECT_NE(out.find("HOME=/home/agent"), std::string::npos) << out;
  EXPECT_NE(out.find(ws_ + "\n"), std::string::npos) << out;
}

// The program gets the channel and the diagnostics pipe, nothing of the server's or bwrap's.
TEST_F(SandboxProcessTest, TheProgramInheritsOnlyItsStdio) {
  // 3 is the shell's own, reading the directory for the glob.
  const std::string out = run("cd /proc/self/fd && echo *");
  EXPECT_EQ(out, "0 1 2 3\n") << out;
}

TEST_F(SandboxProcessTest, NothingOutsideTheGrantsIsVisible) {
  const std::string out =
      run("ls -a /root 2>&1; ls /home; cat /root/execmcp-sbx-canary-" + tag_ +
          " 2>&1; ls secret; cat secret/canary 2>&1;"
          "test -s /etc/shadow && echo SHADOW-READABLE; grep -c : /etc/passwd;"
          "ls /srv /var 2>&1; cat /proc/net/dev; echo PIDS $(ls /proc | grep -c '^[0-9]')");
  EXPECT_EQ(out.find("CANARY"), std::string::npos) << out;
  EXPECT_NE(out.find("cat: /root/execmcp-sbx-canary-" + tag_ + ": No such file or directory"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\nagent\n"), std::string::npos) << "/home holds HOME only: " << out;
  EXPECT_EQ(out.find("SHADOW-READABLE"), std::string::npos) << out;
  EXPECT_NE(out.find("ls: cannot access '/root'"), std::string::npos) << out;
  EXPECT_NE(out.find("\n3\n"), std::string::npos) << "passwd has agent, root, nobody: " << out;
  EXPECT_NE(out.find(" lo:"), std::string::npos) << out;
  EXPECT_EQ(out.find("eth"), std::string::npos) << "only loopback: " << out;
  // The init, sh, ls and grep: the host's processes are not there.
  EXPECT_NE(out.find("PIDS "), std::string::npos) << out;
  const int pids = std::atoi(out.substr(out.find("PIDS ") + 5).c_str());
  EXPECT_GT(pids, 0);
  EXPECT_LE(pids, 6) << out;
}

TEST_F(SandboxProcessTest, WritesStayInsideTheWorkspace) {
  const std::string host_tmp = "/tmp/execmcp-sbx-inside-" + tag_;
  const std::string out =
      run("echo hi > new.txt && echo WS-OK; echo x > " + host_tmp +
          " && echo TMP-OK;"
          "touch " +
          ro_ +
          "/x 2>&1; touch /newfile 2>&1; { echo x >> a/b/protected.txt; } 2>&1;"
          "mv a/b/protected.txt a/b/moved 2>&1; mv a/b a/c 2>&1; mv a c 2>&1; echo DONE");
  EXPECT_NE(out.find("WS-OK"), std::string::npos) << out;
  EXPECT_NE(out.find("TMP-OK"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(host_tmp)) << "the sandbox's /tmp is its own";
  EXPECT_TRUE(fs::exists(ws_ + "/new.txt"));
  struct stat st {};
  ASSERT_EQ(::stat((ws_ + "/new.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, uid_) << "files are written as the sandbox uid";
  EXPECT_NE(out.find("touch: cannot touch '" + ro_ + "/x': Read-only file system"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("touch: cannot touch '/newfile': Read-only file system"), std::string::npos)
      << out;
  EXPECT_NE(out.find("protected.txt: Read-only file system"), std::string::npos) << out;
  // The protected file and each parent up to the workspace are mount points: no rename moves them.
  EXPECT_NE(out.find("cannot move 'a/b/protected.txt' to 'a/b/moved': Device or resource busy"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("cannot move 'a/b' to 'a/c': Device or resource busy"), std::string::npos)
      << out;
  EXPECT_NE(out.find("cannot move 'a' to 'c': Device or resource busy"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(ws_ + "/a/b/protected.txt"));
  std::ifstream in(ws_ + "/a/b/protected.txt");
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "keep");
}

// The filter and the network namespace as a program meets them (python3, when installed).
TEST_F(SandboxProcessTest, VsockRawSocketsAndTheOutsideAreRefused) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 here";
  const std::string out =
      run("python3 - 2>&1 <<'EOF'\n"
          "import socket\n"
          "for name, args in [('vsock', (40, 1)), ('raw', (2, 3, 1)), ('packet', (17, 3))]:\n"
          "    try:\n"
          "        socket.socket(*args); print(name, 'created')\n"
          "    except OSError as e:\n"
          "        print(name, e.errno)\n"
          "s = socket.socket(); s.settimeout(2)\n"
          "try:\n"
          "    s.connect(('1.1.1.1', 80)); print('connect ok')\n"
          "except OSError as e:\n"
          "    print('connect', e.errno)\n"
          "EOF\n");
  EXPECT_NE(out.find("vsock 1\n"), std::string::npos) << "EPERM: " << out;
  EXPECT_NE(out.find("raw 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("packet 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("connect 101\n"), std::string::npos) << "ENETUNREACH: " << out;
}

TEST_F(SandboxProcessTest, StopLeavesNothingBehind) {
  std::string error;
  auto sandbox = sb::SandboxProcess::start(shell("sleep 100 & sleep 100 & echo UP; wait"), error);
  ASSERT_NE(sandbox, nullptr) << error;
  const int channel = sandbox->take_channel_fd();
  char buf[3];
  ASSERT_EQ(::read(channel, buf, sizeof buf), 3);  // "UP\n": the sleeps run
  const std::string ns = ns_of(sandbox->init_pid());
  ASSERT_FALSE(ns.empty());
  EXPECT_GE(members_of(ns).size(), 3U);
  const auto t0 = std::chrono::steady_clock::now();
  sandbox->stop(std::chrono::milliseconds(100));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_TRUE(members_of(ns).empty()) << "a process of the sandbox outlived stop()";
  sandbox->stop(std::chrono::milliseconds(100));  // idempotent
  ::close(channel);
}

// Started from a thread that then ends (a request's thread), the sandbox lives on: nothing of it
// hangs on the thread that forked (PR_SET_PDEATHSIG, which bwrap's --die-with-parent sets, would).
TEST_F(SandboxProcessTest, OutlivesTheThreadThatStartedIt) {
  std::unique_ptr<sb::SandboxProcess> sandbox;
  std::string error;
  std::thread([&] {
    sandbox = sb::SandboxProcess::start(shell("read line; echo \"GOT $line\"; sleep 100"), error);
  }).join();
  ASSERT_NE(sandbox, nullptr) << error;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the thread is long gone
  const int channel = sandbox->take_channel_fd();
  ASSERT_EQ(::write(channel, "hi\n", 3), 3);
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (got.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{channel, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[64];
    const ssize_t n = ::read(channel, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  EXPECT_EQ(got, "GOT hi\n") << "the sandbox died with the thread that started it";
  // Its bwrap still watches it: the init's parent is our child, not an orphan's adopter.
  std::ifstream status("/proc/" + std::to_string(sandbox->init_pid()) + "/status");
  pid_t parent = -1;
  for (std::string line; std::getline(status, line);)
    if (line.rfind("PPid:", 0) == 0) parent = std::atoi(line.c_str() + 5);
  std::ifstream parent_stat("/proc/" + std::to_string(parent) + "/stat");
  std::string stat;
  std::getline(parent_stat, stat);
  EXPECT_NE(stat.find(" " + std::to_string(::getpid()) + " "), std::string::npos)
      << "bwrap (the init's parent) is gone: " << stat;
  EXPECT_EQ(stat.find(") Z "), std::string::npos) << stat;
  const std::string ns = ns_of(sandbox->init_pid());
  EXPECT_FALSE(ns.empty());
  sandbox->stop(std::chrono::milliseconds(0));
  EXPECT_TRUE(members_of(ns).empty());
  ::close(channel);
}

// The server SIGKILLed with a command running in its sandbox: the channel's EOF ends the runner,
// which kills what it runs; nothing of the pid namespace is left.
TEST_F(SandboxProcessTest, AKilledServerLeavesNothingBehind) {
  namespace rp = execmcp::plugins::supervision::runner;
  auto spec = shell("");
  spec.program = EXECMCP_RUNNER_PATH;
  spec.args = {rp::kChannelArg};
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t server = ::fork();
  if (server == 0) {
    std::string error;
    auto sandbox = sb::SandboxProcess::start(spec, error);
    if (!sandbox) ::_exit(1);
    const int channel = sandbox->take_channel_fd();
    rp::RunSpec run;
    run.output_cap = 1024;
    run.work_dir = ws_;
    run.shell = "/bin/sh";
    run.command = "sleep 100 & sleep 100";
    std::string frames;
    rp::append_frame(frames, rp::FrameType::kRun, 1, rp::encode_run(run));
    rp::append_frame(frames, rp::FrameType::kStdinEnd, 1, {});
    if (::write(channel, frames.data(), frames.size()) != static_cast<ssize_t>(frames.size()))
      ::_exit(2);
    const pid_t init = sandbox->init_pid();
    if (::write(report[1], &init, sizeof init) != sizeof init) ::_exit(3);
    for (;;) ::pause();
  }
  ::close(report[1]);
  pid_t init = 0;
  ASSERT_EQ(::read(report[0], &init, sizeof init), static_cast<ssize_t>(sizeof init));
  ::close(report[0]);
  const std::string ns = ns_of(init);
  ASSERT_FALSE(ns.empty());
  // The command runs: the init, the runner, its pool, a spare, the shell and two sleeps.
  for (int i = 0; i < 200 && members_of(ns).size() < 6; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(members_of(ns).size(), 6U);
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
  for (int i = 0; i < 300 && !members_of(ns).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(members_of(ns).empty()) << "the sandbox outlived its server";
}

TEST_F(SandboxProcessTest, UnreachableSourceIsNamed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs a root server (the sandbox uid differs)";
  const std::string closed = root_ + "/closed";
  fs::create_directories(closed + "/inner");
  ::chmod(closed.c_str(), 0700);
  auto spec = shell("true");
  spec.mounts.push_back({closed + "/inner", "/inner", false});
  std::string error;
  EXPECT_EQ(sb::SandboxProcess::start(spec, error), nullptr);
  EXPECT_NE(error.find("the sandbox user " + std::to_string(uid_) + " cannot reach " + closed +
                       "/inner: it may not search " + closed + " (mode 0700, owner uid 0)"),
            std::string::npos)
      << error;
}

// bubblewrap sets the sandbox up after it reports the init: a mount it refuses shows as the
// channel at EOF and its own line on the diagnostics pipe, and nothing is left.
TEST_F(SandboxProcessTest, ASetUpFailureArrivesOnTheDiagnostics) {
  auto spec = shell("echo RAN");
  spec.mounts.push_back({ro_, "/usr/execmcp-cannot-be-made", false});
  std::string error;
  auto sandbox = sb::SandboxProcess::start(spec, error);
  ASSERT_NE(sandbox, nullptr) << error;
  const int channel = sandbox->take_channel_fd();
  const int diagnostics = sandbox->take_diagnostics_fd();
  EXPECT_EQ(read_all(channel), "");
  sandbox->stop(std::chrono::milliseconds(2000));
  const std::string said = read_all(diagnostics, std::chrono::milliseconds(500));
  EXPECT_NE(said.find("bwrap: Can't mkdir /usr/execmcp-cannot-be-made"), std::string::npos) << said;
  ::close(channel);
  ::close(diagnostics);
}

TEST_F(SandboxProcessTest, HostNetworkSharesTheHostsInterfaces) {
  auto spec = shell("cat /proc/net/dev");
  spec.network = sb::SandboxNetwork::kHost;
  std::string error;
  auto sandbox = sb::SandboxProcess::start(spec, error);
  ASSERT_NE(sandbox, nullptr) << error;
  const int channel = sandbox->take_channel_fd();
  const std::string out = read_all(channel);
  ::close(channel);
  sandbox->stop(std::chrono::milliseconds(2000));
  std::ifstream host("/proc/net/dev");
  std::string line, host_dev;
  while (std::getline(host, line)) host_dev += line.substr(0, line.find(':')) + "\n";
  std::string seen;
  std::istringstream in(out);
  while (std::getline(in, line)) seen += line.substr(0, line.find(':')) + "\n";
  EXPECT_EQ(seen, host_dev);
}

// A source reached through a symlink (swapped in, say, by an agent before a restart) is refused.
TEST_F(SandboxProcessTest, ASymlinkedSourceIsRefused) {
  fs::create_directory_symlink(ro_, root_ + "/link");
  {
    auto spec = shell("true");
    spec.mounts.push_back({root_ + "/link", "/linked", false});
    std::string error;
    EXPECT_EQ(sb::SandboxProcess::start(spec, error), nullptr);
    EXPECT_NE(error.find(root_ + "/link is not what it was"), std::string::npos) << error;
  }
  fs::create_directories(ro_ + "/sub");
  auto spec = shell("true");
  spec.mounts.push_back({root_ + "/link/sub", "/linked", false});
  std::string error;
  EXPECT_EQ(sb::SandboxProcess::start(spec, error), nullptr);
  EXPECT_NE(error.find(root_ + "/link/sub is not what it was"), std::string::npos) << error;
}

TEST_F(SandboxProcessTest, MissingBubblewrapNamesTheLayer) {
  ::setenv("EXECMCP_BWRAP", "/nonexistent/bwrap", 1);
  std::string error;
  auto sandbox = sb::SandboxProcess::start(shell("true"), error);
  ::unsetenv("EXECMCP_BWRAP");
  EXPECT_EQ(sandbox, nullptr);
  EXPECT_NE(error.find("bubblewrap: /nonexistent/bwrap not found"), std::string::npos) << error;
  EXPECT_NE(error.find("apt-get install bubblewrap"), std::string::npos) << error;
}

TEST_F(SandboxProcessTest, RootIsRefusedAsTheSandboxUser) {
  auto spec = shell("true");
  spec.uid = 0;
  std::string error;
  EXPECT_EQ(sb::SandboxProcess::start(spec, error), nullptr);
  EXPECT_NE(error.find("must not be root"), std::string::npos) << error;
}

// The production shape: execmcp-runner as the program, Landlock (forced to ABI 2, Debian 12's)
// applied by the runner before its hello, a command run over the channel's frames.
TEST_F(SandboxProcessTest, RunnerServesCommandsUnderLandlock) {
  namespace rp = execmcp::plugins::supervision::runner;
  auto spec = shell("");
  spec.program = EXECMCP_RUNNER_PATH;
  spec.args = {rp::kChannelArg};
  spec.runner_landlock = true;
  spec.landlock_max_abi = 2;
  std::string error;
  auto sandbox = sb::SandboxProcess::start(spec, error);
  ASSERT_NE(sandbox, nullptr) << error;
  const int channel = sandbox->take_channel_fd();
  const int diagnostics = sandbox->take_diagnostics_fd();
  rp::RunSpec run;
  run.output_cap = 1 << 16;
  run.work_dir = ws_;
  run.shell = "/bin/sh";
  run.command =
      "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; echo hi > ok.txt && echo WS-OK;"
      "mkdir /tmp/d && echo TMP-OK; cat /etc/hostname >/dev/null && echo ETC-OK;"
      "mkdir " +
      ro_ +
      "/x 2>&1; dd if=/proc/2/mem of=/dev/null bs=1 count=1 2>&1;"
      "echo RUNNER=$(cat /proc/2/comm)";
  std::string frames;
  rp::append_frame(frames, rp::FrameType::kRun, 1, rp::encode_run(run));
  rp::append_frame(frames, rp::FrameType::kStdinEnd, 1, {});
  ASSERT_EQ(::write(channel, frames.data(), frames.size()), static_cast<ssize_t>(frames.size()));
  rp::FrameReader reader;
  std::string out, hello;
  bool done = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done && std::chrono::steady_clock::now() < deadline) {
    pollfd p{channel, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(channel, buf, sizeof buf);
    if (n <= 0) break;
    reader.feed({buf, static_cast<std::size_t>(n)});
    while (auto frame = reader.next()) {
      if (frame->type == rp::FrameType::kHello) hello = frame->payload;
      if (frame->type == rp::FrameType::kStdout || frame->type == rp::FrameType::kStderr)
        out += frame->payload;
      if (frame->type == rp::FrameType::kDone) done = true;
    }
  }
  ::close(channel);
  sandbox->stop(std::chrono::milliseconds(2000));
  const std::string said = read_all(diagnostics, std::chrono::milliseconds(200));
  ::close(diagnostics);
  EXPECT_EQ(hello, rp::kVersion) << said;
  EXPECT_TRUE(done) << out << said;
  EXPECT_NE(out.find("NoNewPrivs:\t1"), std::string::npos) << out;
  EXPECT_NE(out.find("Seccomp:\t2"), std::string::npos) << out;
  EXPECT_NE(out.find("WS-OK"), std::string::npos) << out;
  EXPECT_NE(out.find("TMP-OK"), std::string::npos) << out;
  EXPECT_NE(out.find("ETC-OK"), std::string::npos) << out;
  EXPECT_NE(out.find("Read-only file system"), std::string::npos) << out;
  // The runner (PID 2, under bwrap's init) is not dumpable: its memory is closed to commands.
  EXPECT_NE(out.find("RUNNER=execmcp-runner"), std::string::npos) << out;
  EXPECT_NE(out.find("/proc/2/mem': Permission denied"), std::string::npos) << out;
}

// Fail closed: a runner asked for Landlock it cannot have (ABI 1 lacks REFER) never says hello.
TEST_F(SandboxProcessTest, RunnerRefusesToServeWithoutLandlock) {
  auto spec = shell("");
  spec.program = EXECMCP_RUNNER_PATH;
  spec.args = {execmcp::plugins::supervision::runner::kChannelArg};
  spec.runner_landlock = true;
  spec.landlock_max_abi = 1;
  std::string error;
  auto sandbox = sb::SandboxProcess::start(spec, error);
  ASSERT_NE(sandbox, nullptr) << error;
  const int channel = sandbox->take_channel_fd();
  const int diagnostics = sandbox->take_diagnostics_fd();
  EXPECT_EQ(read_all(channel), "") << "no hello";
  sandbox->stop(std::chrono::milliseconds(2000));
  const std::string said = read_all(diagnostics, std::chrono::milliseconds(500));
  EXPECT_NE(said.find("execmcp-runner: Landlock ABI 1 lacks REFER"), std::string::npos) << said;
  EXPECT_NE(said.find("refusing to run without it"), std::string::npos) << said;
  ::close(channel);
  ::close(diagnostics);
}

}  // namespace
