// The docker-cli engine against the REAL engine (label `docker`): a container made from the shared
// spec, inspected, exec'd with stdin and both streams, execmcp-runner copied in and reached over
// a `docker exec -i` channel, its log, its removal; and the CLI's failures in the engine's words.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "docker_cli/docker_cli_engine.hpp"
#include "docker_common/engine/tar_archive.hpp"
#include "docker_common/lifecycle/container_spec.hpp"
#include "runner_client/runner_channel.hpp"
#include "supervision/runner_protocol.hpp"

namespace execmcp::plugins::docker_cli {
namespace {

namespace dc = docker_common;
namespace rp = supervision::runner;
using Kind = dc::EngineError::Kind;
using namespace std::chrono_literals;

struct Collect final : runner_client::ExecStreamDecoder::Handler {
  std::string out, err;
  void on_payload(runner_client::ExecStreamDecoder::Stream stream, std::string_view data) override {
    (stream == runner_client::ExecStreamDecoder::Stream::Stdout ? out : err).append(data);
  }
};

Collect drain(dc::ExecSession& session) {
  Collect c;
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (!session.read(50ms, c).eof && std::chrono::steady_clock::now() < give_up) {
  }
  return c;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class DockerCliEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* flag = std::getenv("EXECMCP_DOCKER_TESTS");
    if (flag != nullptr && std::string(flag) == "0") GTEST_SKIP() << "EXECMCP_DOCKER_TESTS=0";
    // EXECMCP_TEST_BACKEND_SETTINGS (tests/docker/ssh/with-sshd.sh sets an ssh:// host) and
    // EXECMCP_TEST_DOCKER_BINARY (e.g. /usr/bin/docker, Debian's 20.10) pick another engine/CLI.
    if (const char* json = std::getenv("EXECMCP_TEST_BACKEND_SETTINGS"); json != nullptr)
      settings_ = dc::parse_docker_settings(json, dc::EngineKind::kCli);
    if (const char* binary = std::getenv("EXECMCP_TEST_DOCKER_BINARY"); binary != nullptr)
      settings_.docker_binary = binary;
    engine_ = std::make_unique<DockerCliEngine>(settings_);
    const auto up = engine_->connect();
    ASSERT_TRUE(up.ok()) << up.message << " (start the engine with scripts/docker-engine.sh start)";
    ASSERT_TRUE(engine_->check_image(settings_.image).ok())
        << settings_.image << ": build it with docker/build.sh";
    char tmpl[] = "/tmp/execmcp-clieng-ws-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    workspace_ = tmpl;
    ::chmod(workspace_.c_str(), 0777);
    name_ = "execmcp-clieng-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  void TearDown() override {
    if (engine_) engine_->remove(name_);
    if (!workspace_.empty()) std::filesystem::remove_all(workspace_);
  }

  dc::ContainerSpec spec() {
    sdk::BackendInit init;
    init.agent_id = "clieng";
    init.instance_id = std::to_string(::getpid());
    init.cwd = workspace_;
    init.paths = {{workspace_, true}};
    dc::DockerSettings s = settings_;
    s.memory_bytes = 256LL << 20;
    s.cpus = 1.5;
    s.pids_limit = 128;
    auto spec = dc::make_container_spec(init, s, "1000:1000", ::getpid(), "clieng-host");
    spec.name = name_;
    // Something in the log from both streams, then the usual sleep.
    spec.cmd = {"/bin/sh", "-c", "echo to-stdout; echo to-stderr >&2; exec sleep infinity"};
    spec.runner = dc::RunnerDelivery::Copy;
    return spec;
  }

  void create_and_start() {
    const auto made = engine_->create(spec());
    ASSERT_TRUE(made.ok()) << made.message;
    const auto started = engine_->start(name_);
    ASSERT_TRUE(started.ok()) << started.message;
  }

  dc::DockerSettings settings_;
  std::unique_ptr<DockerCliEngine> engine_;
  std::string workspace_;
  std::string name_;
};

TEST_F(DockerCliEngineTest, CreateInspectListAndRemove) {
  create_and_start();
  dc::ContainerInfo info;
  const auto looked = engine_->inspect(name_, info);
  ASSERT_TRUE(looked.ok()) << looked.message;
  EXPECT_EQ(info.name, name_);
  EXPECT_TRUE(info.state.exists);
  EXPECT_TRUE(info.state.running);
  EXPECT_EQ(info.labels.at(dc::kLabelManaged), "true");
  EXPECT_EQ(info.labels.at(dc::kLabelOwnerHost), "clieng-host");
  bool workspace_rw = false, runner_volume = false;
  for (const auto& m : info.mounts) {
    workspace_rw |=
        m.type == "bind" && m.source == workspace_ && m.target == workspace_ && m.writable;
    runner_volume |= m.type == "volume" && m.target == dc::kRunnerDir;
  }
  EXPECT_TRUE(workspace_rw);
  EXPECT_TRUE(runner_volume);

  std::vector<dc::ContainerInfo> listed;
  ASSERT_TRUE(engine_->list({{dc::kLabelOwnerHost, "clieng-host"}}, listed).ok());
  bool found = false;
  for (const auto& c : listed) found |= c.name == name_;
  EXPECT_TRUE(found);

  // The limits arrived as the Engine API body would have set them.
  CliRun raw = engine_->launcher().run(
      {"inspect", "--type=container",
       "--format={{.HostConfig.Memory}} {{.HostConfig.MemorySwap}} {{.HostConfig.NanoCpus}} "
       "{{.HostConfig.PidsLimit}} {{.HostConfig.ReadonlyRootfs}} "
       "{{.HostConfig.SecurityOpt}} {{.HostConfig.Init}} {{.HostConfig.NetworkMode}} "
       "{{.Config.User}}",
       name_},
      nullptr, 60s);
  ASSERT_TRUE(raw.ok()) << raw.err;
  EXPECT_EQ(raw.out,
            "268435456 268435456 1500000000 128 true [no-new-privileges] true none 1000:1000\n");
  // No capability left (Podman's inspect lists each dropped one where Docker says [ALL]).
  dc::ExecOptions caps;
  caps.cmd = {"/bin/sh", "-c", "grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status"};
  dc::EngineError error;
  auto session = engine_->exec(name_, caps, error);
  ASSERT_TRUE(session) << error.message;
  EXPECT_EQ(drain(*session).out,
            "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n");
  EXPECT_EQ(session->finish(false).code, 0);

  ASSERT_TRUE(engine_->remove(name_).ok());
  EXPECT_EQ(engine_->inspect(name_, info).kind, Kind::kNotFound);
  // Removing what is gone: done either way (docker 20.10 says "No such container", 28 nothing).
  const auto again = engine_->remove(name_);
  EXPECT_TRUE(again.ok() || again.kind == Kind::kNotFound) << again.message;
  EXPECT_EQ(engine_->create(spec()).kind, Kind::kNone);
  EXPECT_EQ(engine_->create(spec()).kind, Kind::kConflict);
}

TEST_F(DockerCliEngineTest, ExecWithInputAndBothStreams) {
  create_and_start();
  dc::ExecOptions options;
  options.cmd = {"/bin/sh", "-c", "cat > \"$1/in.txt\"; echo out; echo err >&2; exit 3", "sh",
                 workspace_};
  options.user = "1000:1000";
  options.work_dir = workspace_;
  options.attach_stdin = true;
  dc::EngineError error;
  auto session = engine_->exec(name_, options, error);
  ASSERT_TRUE(session) << error.message;
  std::string input(1 << 20, 'x');
  input += "end";
  std::string_view left = input;
  while (!left.empty()) {
    const auto w = session->write_some(left, 1s);
    ASSERT_TRUE(w.error.empty()) << w.error;
    left.remove_prefix(w.bytes);
  }
  session->close_stdin();
  const auto c = drain(*session);
  EXPECT_EQ(c.out, "out\n");
  EXPECT_EQ(c.err, "err\n");  // no start line
  EXPECT_EQ(session->finish(false).code, 3);
  EXPECT_EQ(read_file(workspace_ + "/in.txt"), input);
}

TEST_F(DockerCliEngineTest, ExecFailuresAreKinds) {
  dc::ExecOptions options;
  options.cmd = {"true"};
  dc::EngineError error;
  EXPECT_FALSE(engine_->exec(name_, options, error));
  EXPECT_EQ(error.kind, Kind::kNotFound) << error.message;
  ASSERT_TRUE(engine_->create(spec()).ok());
  EXPECT_FALSE(engine_->exec(name_, options, error));
  EXPECT_EQ(error.kind, Kind::kNotRunning) << error.message;
  EXPECT_TRUE(engine_->wait_stopped(name_, 5s));
  ASSERT_TRUE(engine_->start(name_).ok());
  EXPECT_FALSE(engine_->wait_stopped(name_, 300ms));
  // A command the runtime cannot start is its (replayed) output with its exit code.
  options.cmd = {"/no/such/program"};
  auto session = engine_->exec(name_, options, error);
  ASSERT_TRUE(session) << error.message;
  const auto c = drain(*session);
  EXPECT_EQ(session->finish(false).code, 127) << c.out << c.err;
}

TEST_F(DockerCliEngineTest, TheRunnerOverADockerExecChannel) {
  create_and_start();
  const std::string runner = read_file(EXECMCP_RUNNER_PATH);
  ASSERT_FALSE(runner.empty()) << EXECMCP_RUNNER_PATH;
  const auto copied = engine_->copy_into(name_, dc::kRunnerDir,
                                         dc::single_file_tar("execmcp-runner", runner, 0555));
  ASSERT_TRUE(copied.ok()) << copied.message;
  dc::ExecOptions options;
  options.cmd = {dc::kRunnerPath, rp::kChannelArg};
  options.user = "1000:1000";
  options.work_dir = "/";
  options.attach_stdin = true;
  dc::EngineError error;
  auto ends = engine_->open_channel(name_, options, error);
  ASSERT_TRUE(ends) << error.message;
  runner_client::RunnerChannel channel(std::move(*ends),
                                       [](sdk::LogLevel, const std::string& line) {
                                         std::fprintf(stderr, "  [runner] %s\n", line.c_str());
                                       });
  ASSERT_EQ(channel.wait_ready(30s), "");
  rp::RunSpec run;
  run.output_cap = 1 << 20;
  run.work_dir = workspace_;
  run.shell = "/bin/sh";
  run.command = "cat; echo out; echo err >&2; exit 4";
  const std::string input = "from-stdin\n";
  std::string start_error;
  auto call = channel.start(run, &input, start_error);
  ASSERT_TRUE(call) << start_error;
  std::string out, err;
  std::vector<runner_client::RunnerCall::Chunk> chunks;
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  bool over = false;
  while (!over && std::chrono::steady_clock::now() < give_up) {
    chunks.clear();
    over = call->wait(100ms, chunks);
    for (const auto& c : chunks) (c.kind == sdk::StreamKind::Stdout ? out : err) += c.data;
  }
  ASSERT_TRUE(call->done()) << call->lost();
  EXPECT_EQ(call->done()->exit_code, 4);
  EXPECT_EQ(out, "from-stdin\nout\n");
  EXPECT_EQ(err, "err\n");
}

TEST_F(DockerCliEngineTest, TheCopiedRunnerAndItsDirectoryStayRoots) {
  // The agent must not be able to replace the program that runs its commands. Podman gives a new
  // volume, and what `podman cp` copies by default, to the container user.
  create_and_start();
  const auto copied = engine_->copy_into(
      name_, dc::kRunnerDir, dc::single_file_tar("execmcp-runner", "#!/bin/sh\n", 0555));
  ASSERT_TRUE(copied.ok()) << copied.message;
  dc::ExecOptions options;
  options.cmd = {"/bin/sh", "-c",
                 "stat -c '%u:%g %a' /.execmcp /.execmcp/execmcp-runner; "
                 "touch /.execmcp/x 2>/dev/null && echo wrote; "
                 "mv /.execmcp/execmcp-runner /.execmcp/y 2>/dev/null && echo moved; true"};
  options.user = "1000:1000";
  options.work_dir = "/";
  dc::EngineError error;
  auto session = engine_->exec(name_, options, error);
  ASSERT_TRUE(session) << error.message;
  const auto c = drain(*session);
  EXPECT_EQ(session->finish(false).code, 0) << c.err;
  EXPECT_EQ(c.out, "0:0 755\n0:0 555\n");
}

TEST_F(DockerCliEngineTest, LogsHaveBothStreams) {
  create_and_start();
  std::string text;
  for (int i = 0; i < 100 && text.find("to-stderr") == std::string::npos; ++i) {
    ASSERT_TRUE(engine_->logs(name_, text).ok());
    if (text.find("to-stderr") == std::string::npos) std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(text.find("to-stdout\n"), std::string::npos) << text;
  EXPECT_NE(text.find("to-stderr\n"), std::string::npos) << text;
  EXPECT_EQ(engine_->logs("execmcp-clieng-no-such", text).kind, Kind::kNotFound);
}

TEST_F(DockerCliEngineTest, AMissingImageAndAnUnreachableEngineInWords) {
  EXPECT_EQ(engine_->check_image("execmcp/no-such-image:0").kind, Kind::kImageMissing);
  if (engine_->flavor() == dc::CliFlavor::kPodman) return;  // Podman ignores DOCKER_HOST
  dc::DockerSettings elsewhere;
  elsewhere.docker_host = "unix:///nonexistent/docker.sock";
  elsewhere.docker_binary = settings_.docker_binary;
  DockerCliEngine gone(elsewhere);
  const auto e = gone.connect();
  EXPECT_EQ(e.kind, Kind::kUnreachable);
  EXPECT_NE(e.message.find("unix:///nonexistent/docker.sock"), std::string::npos) << e.message;
}

// Under tests/docker/ssh/with-sshd.sh: a key sshd refuses and an unknown host key, each in ssh's
// own words with the user@host:port that was tried.
TEST_F(DockerCliEngineTest, SshFailuresInPlainWords) {
  const char* dir = std::getenv("EXECMCP_TEST_SSH_DIR");
  const char* target = std::getenv("EXECMCP_TEST_SSH_TARGET");
  if (dir == nullptr || target == nullptr) GTEST_SKIP() << "not under with-sshd.sh";
  for (const auto& [shim, says] :
       {std::pair<std::string, std::string>{"wrong-key", "authentication failed ("},
        {"unknown-host", "the host key is not the known one"}}) {
    dc::DockerSettings s = settings_;
    s.cli_env["PATH"] = std::string(dir) + "/" + shim + "/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    DockerCliEngine engine(s);
    const auto e = engine.connect();
    EXPECT_EQ(e.kind, Kind::kUnreachable) << e.message;
    EXPECT_EQ(e.message.rfind("SSH to " + std::string(target) + " failed: " + says, 0), 0u)
        << e.message;
  }
}

}  // namespace
}  // namespace execmcp::plugins::docker_cli
