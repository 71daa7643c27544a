// Tests for the docker-cli engine with a fake CLI: a shell script named docker (or podman) that
// records its arguments and answers from small scripts per command, so no engine is needed. Its
// `exec` runs the command on this machine, so the start line, stdin and both streams are real.
#include "docker_cli/docker_cli_engine.hpp"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace execmcp::plugins::docker_cli {
namespace {

namespace dc = docker_common;
namespace fs = std::filesystem;
using Kind = dc::EngineError::Kind;
using namespace std::chrono_literals;

// Records every call (its arguments, one a line, then "--") and sources <command>.sh if there is
// one; the command is the first argument that is not a flag.
constexpr const char* kFakeCli = R"SH(#!/bin/sh
{ for a in "$@"; do printf '%s\n' "$a"; done; echo --; } >> "$FAKE_DIR/calls"
cmd=
for a in "$@"; do case "$a" in -*) ;; *) cmd=$a; break ;; esac; done
if [ -f "$FAKE_DIR/$cmd.sh" ]; then . "$FAKE_DIR/$cmd.sh"; fi
exit 0
)SH";

// An `exec` that runs the command here: skips `exec`, the flags and the container name.
constexpr const char* kLocalExec = R"SH(
while [ $# -gt 0 ]; do case "$1" in exec|-*) shift ;; *) break ;; esac; done
shift
exec "$@"
)SH";

class FakeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/execmcp-fake-cli-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/bin");
    for (const char* name : {"docker", "podman"}) {
      write(std::string("bin/") + name, kFakeCli);
      ::chmod((dir_ + "/bin/" + name).c_str(), 0755);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name, std::ios::binary | std::ios::trunc) << text;
  }
  std::string read(const std::string& name) {
    std::ifstream in(dir_ + "/" + name, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Each call's arguments.
  std::vector<std::vector<std::string>> calls() {
    std::vector<std::vector<std::string>> out(1);
    std::istringstream in(read("calls"));
    for (std::string line; std::getline(in, line);) {
      if (line == "--") {
        out.emplace_back();
      } else {
        out.back().push_back(line);
      }
    }
    out.pop_back();
    return out;
  }

  dc::DockerSettings settings(const std::string& binary = "docker") {
    dc::DockerSettings s;
    s.docker_binary = binary;
    s.cli_env = {{"PATH", dir_ + "/bin:/usr/bin:/bin"}, {"FAKE_DIR", dir_}};
    return s;
  }
  std::unique_ptr<DockerCliEngine> engine(const dc::DockerSettings& s) {
    return std::make_unique<DockerCliEngine>(s, std::map<std::string, std::string>{});
  }

  std::string dir_;
};

struct Collect final : runner_client::ExecStreamDecoder::Handler {
  std::string out, err;
  void on_payload(runner_client::ExecStreamDecoder::Stream stream, std::string_view data) override {
    (stream == runner_client::ExecStreamDecoder::Stream::Stdout ? out : err).append(data);
  }
};

// Reads a session to its end.
Collect drain(dc::ExecSession& session) {
  Collect c;
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (!session.read(50ms, c).eof && std::chrono::steady_clock::now() < give_up) {
  }
  return c;
}

TEST(CliEnvironment, IsMadeFromTheSettingsAndFourVariablesOfOurs) {
  dc::DockerSettings s;
  const std::map<std::string, std::string> server = {{"PATH", "/p"},
                                                     {"HOME", "/h"},
                                                     {"DOCKER_HOST", "tcp://127.0.0.1:2375"},
                                                     {"DOCKER_CONFIG", "/cfg"}};
  auto env = cli_environment(s, server);
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"PATH", "/p"},
                                                     {"HOME", "/h"},
                                                     {"LC_ALL", "C"},
                                                     {"DOCKER_HOST", "tcp://127.0.0.1:2375"},
                                                     {"DOCKER_CONFIG", "/cfg"}}));
  s.docker_host = "ssh://me@h";
  EXPECT_EQ(cli_environment(s, server).at("DOCKER_HOST"), "ssh://me@h");
  // --context wins over DOCKER_HOST in the CLI: the child gets no DOCKER_HOST then.
  s.docker_host.clear();
  s.docker_context = "prod";
  EXPECT_EQ(cli_environment(s, server).count("DOCKER_HOST"), 0u);
  s.cli_env = {{"PATH", "/mine"}, {"SSH_AUTH_SOCK", "/a"}};
  env = cli_environment(s, {});
  EXPECT_EQ(env.at("PATH"), "/mine");
  EXPECT_EQ(env.at("SSH_AUTH_SOCK"), "/a");
  EXPECT_FALSE(env.at("HOME").empty());
}

TEST_F(FakeCli, DescribeAndWhetherTheEngineSeesOurFiles) {
  auto s = settings();
  EXPECT_EQ(engine(s)->describe(), "docker");
  EXPECT_TRUE(engine(s)->sees_host_files());
  s.docker_host = "unix:///run/docker.sock";
  EXPECT_TRUE(engine(s)->sees_host_files());
  s.docker_host = "ssh://root@127.0.0.1:2222";
  EXPECT_EQ(engine(s)->describe(), "docker (DOCKER_HOST=ssh://root@127.0.0.1:2222)");
  EXPECT_FALSE(engine(s)->sees_host_files());
  s.docker_host = "tcp://127.0.0.1:2375";
  EXPECT_FALSE(engine(s)->sees_host_files());
  s.docker_host.clear();
  s.docker_context = "prod";
  EXPECT_EQ(engine(s)->describe(), "docker --context prod");
  EXPECT_FALSE(engine(s)->sees_host_files());
  // DOCKER_HOST of the server counts too.
  auto remote = DockerCliEngine(settings(), {{"DOCKER_HOST", "ssh://h"}});
  EXPECT_FALSE(remote.sees_host_files());
}

TEST_F(FakeCli, ConnectAsksTheServerVersionOnceWithTheGlobalFlags) {
  auto s = settings();
  s.docker_context = "prod";
  s.docker_flags = {"--log-level=error"};
  auto e = engine(s);
  ASSERT_TRUE(e->connect().ok());
  ASSERT_TRUE(e->connect().ok());
  EXPECT_EQ(calls(), (std::vector<std::vector<std::string>>{{"--log-level=error", "--context=prod",
                                                             "version", "--format={{json .}}"}}));
}

TEST_F(FakeCli, PodmanBehindABinaryNamedDockerIsToldByItsVersion) {
  write("version.sh", R"(echo '{"Client":{"APIVersion":"4.3.1","Version":"4.3.1"}}')");
  auto e = engine(settings());
  EXPECT_EQ(e->flavor(), dc::CliFlavor::kDocker);
  ASSERT_TRUE(e->connect().ok());
  EXPECT_EQ(e->flavor(), dc::CliFlavor::kPodman);
  write("version.sh", R"(echo '{"Client":{"ApiVersion":"1.41"},"Server":{"Version":"20.10"}}')");
  // Another target (the answer of an engine is remembered by target for 30 s).
  auto other = settings();
  other.docker_context = "other";
  auto docker = engine(other);
  ASSERT_TRUE(docker->connect().ok());
  EXPECT_EQ(docker->flavor(), dc::CliFlavor::kDocker);
}

// Every backend object connects: a second one for the same target within 30 s trusts the first
// answer instead of running `docker version` again (a per-user agent makes one per user).
TEST_F(FakeCli, AnotherEngineForTheSameTargetTrustsARecentAnswer) {
  auto s = settings();
  s.docker_context = "recent";
  ASSERT_TRUE(engine(s)->connect().ok());
  ASSERT_TRUE(engine(s)->connect().ok());
  EXPECT_EQ(calls().size(), 1u);
}

TEST_F(FakeCli, AnUnreachableEngineIsSaidWithWhereItWasLookedFor) {
  write("version.sh",
        "echo 'Cannot connect to the Docker daemon at tcp://127.0.0.1:1. Is the docker daemon "
        "running?' >&2; exit 1");
  auto s = settings();
  s.docker_host = "tcp://127.0.0.1:1";
  const auto error = engine(s)->connect();
  EXPECT_EQ(error.kind, Kind::kUnreachable);
  EXPECT_NE(error.message.find("cannot reach Docker at tcp://127.0.0.1:1: is dockerd running?"),
            std::string::npos)
      << error.message;
  EXPECT_NE(error.message.find("Cannot connect to the Docker daemon"), std::string::npos);
}

TEST_F(FakeCli, AMissingBinaryIsSaidInWords) {
  auto s = settings("docker-not-installed");
  const auto error = engine(s)->connect();
  EXPECT_EQ(error.kind, Kind::kUnreachable);
  EXPECT_EQ(error.message, "the docker CLI 'docker-not-installed' was not found in PATH (" + dir_ +
                               "/bin:/usr/bin:/bin): install docker.io, or set docker_binary");
}

TEST_F(FakeCli, CreateRendersTheSpecAndPodmanGetsItsFlavor) {
  dc::ContainerSpec spec;
  spec.name = "execmcp-a-1";
  spec.image = "img:1";
  spec.pids_limit = 0;
  spec.cmd = {"sleep", "infinity"};
  ASSERT_TRUE(engine(settings())->create(spec).ok());
  auto podman = engine(settings("podman"));
  EXPECT_EQ(podman->flavor(), dc::CliFlavor::kPodman);
  ASSERT_TRUE(podman->create(spec).ok());
  const auto c = calls();
  ASSERT_EQ(c.size(), 2u);
  auto with_create = dc::container_create_args(spec, dc::CliFlavor::kDocker).args;
  with_create.insert(with_create.begin(), "create");
  EXPECT_EQ(c[0], with_create);
  EXPECT_NE(std::find(c[1].begin(), c[1].end(), "--pids-limit=-1"), c[1].end());
  spec.disk_bytes = 1 << 30;
  const auto refused = podman->create(spec);
  EXPECT_NE(refused.message.find("Podman has no per-container size limit"), std::string::npos);
  EXPECT_EQ(calls().size(), 2u);  // refused before any run

  write("create.sh",
        "echo 'Error response from daemon: Conflict. The container name \"/execmcp-a-1\" is "
        "already in use by container \"0123\".' >&2; exit 1");
  spec.disk_bytes.reset();
  EXPECT_EQ(engine(settings())->create(spec).kind, Kind::kConflict);
  write("create.sh", "echo 'Error: No such image: img:1' >&2; exit 1");
  EXPECT_EQ(engine(settings())->create(spec).kind, Kind::kImageMissing);
}

TEST_F(FakeCli, ListInspectsAllTheIdsAtOnce) {
  write("ps.sh", "printf 'aaa\\nbbb\\n'");
  write("inspect.sh",
        R"(echo '[{"Id":"aaa","Name":"/one","Config":{"Labels":{"execmcp.managed":"true"}},
    "Mounts":[{"Type":"bind","Source":"/w","Destination":"/w","RW":true}],
    "State":{"Running":true,"ExitCode":0}}]'; echo 'Error: No such container: bbb' >&2; exit 1)");
  std::vector<dc::ContainerInfo> out;
  ASSERT_TRUE(engine(settings())->list({{"execmcp.managed", "true"}, {"k", "v"}}, out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, "one");
  EXPECT_TRUE(out[0].state.running);
  ASSERT_EQ(out[0].mounts.size(), 1u);
  EXPECT_TRUE(out[0].mounts[0].writable);
  const auto c = calls();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0], (std::vector<std::string>{"ps", "--all", "--quiet", "--no-trunc",
                                            "--filter=label=execmcp.managed=true",
                                            "--filter=label=k=v"}));
  EXPECT_EQ(c[1], (std::vector<std::string>{"inspect", "--type=container", "aaa", "bbb"}));
  // Nothing listed: no inspect.
  write("ps.sh", "");
  ASSERT_TRUE(engine(settings())->list({}, out).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(calls().size(), 3u);
}

TEST_F(FakeCli, InspectRemoveAndStartSayNotFound) {
  write("inspect.sh", "echo '[]'; echo 'Error: No such container: x' >&2; exit 1");
  write("rm.sh", "echo 'Error: No such container: x' >&2; exit 1");
  write("start.sh", "echo 'Error response from daemon: No such container: x' >&2; exit 1");
  auto e = engine(settings());
  dc::ContainerInfo info;
  EXPECT_EQ(e->inspect("x", info).kind, Kind::kNotFound);
  EXPECT_EQ(e->remove("x").kind, Kind::kNotFound);
  EXPECT_EQ(e->start("x").kind, Kind::kNotFound);
  EXPECT_TRUE(e->wait_stopped("x", 1s));
  const auto c = calls();
  EXPECT_EQ(c[1], (std::vector<std::string>{"rm", "--force", "--volumes", "x"}));
}

TEST_F(FakeCli, CopyIntoSendsTheTarOnStdin) {
  write("cp.sh", "cat > \"$FAKE_DIR/cp.in\"");
  const std::string tar(300000, 't');
  ASSERT_TRUE(engine(settings())->copy_into("c", "/.execmcp", tar).ok());
  EXPECT_EQ(read("cp.in"), tar);
  // As root with the archive's owners (Podman's default would give them to the container user).
  EXPECT_EQ(calls()[0], (std::vector<std::string>{"cp", "--archive=false", "-", "c:/.execmcp"}));
}

TEST_F(FakeCli, CopyFromReadsTheTarOnStdoutWithinItsBound) {
  write("cp.sh", "printf 'the tar'");
  std::string tar;
  ASSERT_TRUE(engine(settings())->copy_from("c", "/etc/f", tar).ok());
  EXPECT_EQ(tar, "the tar");
  EXPECT_EQ(calls()[0], (std::vector<std::string>{"cp", "c:/etc/f", "-"}));
  // The path missing is kNotFound, as the container missing is.
  write("cp.sh", "echo 'Error: Could not find the file /etc/f in container c' >&2; exit 1");
  EXPECT_EQ(engine(settings())->copy_from("c", "/etc/f", tar).kind, Kind::kNotFound);
  // One byte past the bound: refused, nothing kept.
  write("cp.sh", "head -c " + std::to_string(dc::Engine::kMaxCopyFromBytes + 1) + " /dev/zero");
  const auto err = engine(settings())->copy_from("c", "/usr", tar);
  EXPECT_EQ(err.kind, Kind::kOther);
  EXPECT_NE(err.message.find("larger than 8 MiB"), std::string::npos) << err.message;
  EXPECT_TRUE(tar.empty());
}

TEST_F(FakeCli, LogsKeepArrivalOrder) {
  write("logs.sh", "echo 1; echo 2 >&2; echo 3; exit 0");
  std::string text;
  ASSERT_TRUE(engine(settings())->logs("c", text).ok());
  EXPECT_EQ(text, "1\n2\n3\n");
  write("logs.sh", "echo 'Error: No such container: c' >&2; exit 1");
  EXPECT_EQ(engine(settings())->logs("c", text).kind, Kind::kNotFound);
}

TEST_F(FakeCli, ExecStripsTheStartLineAndCarriesInputAndBothStreams) {
  write("exec.sh", kLocalExec);
  dc::ExecOptions options;
  options.cmd = {"/bin/sh", "-c", "cat; echo err >&2; exit 5"};
  options.user = "1000:1000";
  options.work_dir = "/";
  options.env = {"A=1"};
  options.attach_stdin = true;
  dc::EngineError error;
  auto session = engine(settings())->exec("c", options, error);
  ASSERT_TRUE(session) << error.message;
  EXPECT_TRUE(session->carries_input());
  std::string_view input = "hello";
  while (!input.empty()) {
    const auto w = session->write_some(input, 100ms);
    ASSERT_TRUE(w.error.empty()) << w.error;
    input.remove_prefix(w.bytes);
  }
  session->close_stdin();
  const auto c = drain(*session);
  EXPECT_EQ(c.out, "hello");
  EXPECT_EQ(c.err, "err\n");
  const auto exit = session->finish(false);
  EXPECT_EQ(exit.code, 5);
  EXPECT_TRUE(exit.engine_answered);
  const auto c0 = calls().at(0);
  EXPECT_EQ(c0, exec_args("c", options, true));
  EXPECT_EQ(std::vector<std::string>(c0.begin(), c0.begin() + 6),
            (std::vector<std::string>{"exec", "--interactive", "--user=1000:1000", "--workdir=/",
                                      "--env=A", "c"}));
}

TEST_F(FakeCli, ExecEnvValuesAreInTheChildsEnvironmentNeverInItsArgv) {
  write("exec.sh", kLocalExec);
  dc::ExecOptions options;
  options.cmd = {"/bin/sh", "-c",
                 "printf '%s|%s|%s|%s' \"$SECRET\" \"$PATH\" \"$DOCKER_HOST\" "
                 "\"${EXECMCP_ENV_0-unset}\""};
  // A name the CLI reads itself (its PATH, DOCKER_HOST) must not change the CLI: it travels
  // under another name and is renamed in the container.
  options.env = {"SECRET=canary-secret-1", "PATH=/canary-path/bin:/usr/bin:/bin",
                 "DOCKER_HOST=tcp://canary-host:1", "SECRET=canary-secret-2"};
  dc::EngineError error;
  auto session = engine(settings())->exec("c", options, error);
  ASSERT_TRUE(session) << error.message;
  const auto c = drain(*session);
  EXPECT_EQ(c.out, "canary-secret-2|/canary-path/bin:/usr/bin:/bin|tcp://canary-host:1|unset");
  EXPECT_EQ(session->finish(false).code, 0);
  // The fake CLI wrote down its own argv: no value is there, only names.
  const auto args = calls().at(0);
  for (const auto& arg : args) EXPECT_EQ(arg.find("canary"), std::string::npos) << arg;
  EXPECT_NE(std::find(args.begin(), args.end(), "--env=SECRET"), args.end());
  EXPECT_EQ(std::count_if(args.begin(), args.end(),
                          [](const std::string& a) { return a.starts_with("--env="); }),
            3);
}

TEST(ExecCall, OnlyNamesTheCliDoesNotReadGoByTheirOwnName) {
  const std::map<std::string, std::string> cli_env = {
      {"PATH", "/bin"}, {"HOME", "/root"}, {"EXTRA", "x"}};
  for (const char* name : {"PATH", "HOME", "EXTRA", "DOCKER_CONFIG", "PODMAN_X", "LD_PRELOAD",
                           "SSH_AUTH_SOCK", "LC_ALL", "https_proxy", "EXECMCP_ENV_3"})
    EXPECT_TRUE(cli_reads_variable(name, cli_env)) << name;
  for (const char* name : {"GH_TOKEN", "API_KEY", "EXECMCP_CALL", "NPM_TOKEN"})
    EXPECT_FALSE(cli_reads_variable(name, cli_env)) << name;
  dc::ExecOptions options;
  options.cmd = {"true"};
  options.env = {"HOME=/h", "TOKEN=t"};
  const auto call = exec_call("c", options, false, cli_env);
  EXPECT_EQ(call.args, (std::vector<std::string>{
                           "exec", "--env=EXECMCP_ENV_0", "--env=TOKEN", "c", "/bin/sh", "-c",
                           "export 'HOME'=\"$EXECMCP_ENV_0\"; unset EXECMCP_ENV_0; exec \"$@\"",
                           "execmcp-exec", "true"}));
}

TEST_F(FakeCli, ExecFailuresBeforeTheStartLineAreTheEnginesWords) {
  dc::ExecOptions options;
  options.cmd = {"true"};
  dc::EngineError error;
  write("exec.sh", "echo 'Error response from daemon: Container 0123 is not running' >&2; exit 1");
  EXPECT_FALSE(engine(settings())->exec("c", options, error));
  EXPECT_EQ(error.kind, Kind::kNotRunning);
  write("exec.sh", "echo 'Error: No such container: c' >&2; exit 1");
  EXPECT_FALSE(engine(settings())->exec("c", options, error));
  EXPECT_EQ(error.kind, Kind::kNotFound);
  // A command that exits 1 after it started is the command's exit, not an engine error.
  write("exec.sh", kLocalExec);
  options.cmd = {"/bin/sh", "-c", "echo 'Error: No such container: c' >&2; exit 1"};
  auto ran = engine(settings())->exec("c", options, error);
  ASSERT_TRUE(ran) << error.message;
  EXPECT_EQ(drain(*ran).err, "Error: No such container: c\n");
  EXPECT_EQ(ran->finish(false).code, 1);
}

// The engine copies a command's stdout and stderr to the CLI independently, so a command's
// output can overtake the start line; seen under load with Docker 28 (a 60 s hang, then "did not
// start the command", for commands writing more than a pipe holds at once).
TEST_F(FakeCli, OutputThatOvertakesTheStartLineIsKeptAndNothingWaitsForIt) {
  for (const std::size_t bytes : {std::size_t{256} << 10, std::size_t{3} << 20}) {
    SCOPED_TRACE(bytes);
    write("exec.sh", "head -c " + std::to_string(bytes) +
                         " /dev/zero | tr '\\000' a\n"
                         "printf '%s\\n' " +
                         kExecStarted + " >&2\necho err >&2\nexit 3\n");
    dc::ExecOptions options;
    options.cmd = {"true"};
    dc::EngineError error;
    const auto began = std::chrono::steady_clock::now();
    auto session = engine(settings())->exec("c", options, error);
    ASSERT_TRUE(session) << error.message;
    const auto c = drain(*session);
    EXPECT_LT(std::chrono::steady_clock::now() - began, 20s);
    EXPECT_EQ(c.out.size(), bytes);
    EXPECT_EQ(c.out.find_first_not_of('a'), std::string::npos);
    EXPECT_EQ(c.err, "err\n");  // the start line is never the command's
    EXPECT_EQ(session->finish(false).code, 3);
  }
}

TEST_F(FakeCli, TheRuntimesRefusalIsPlayedBackAsTheCommandsOutput) {
  write("exec.sh",
        "echo 'OCI runtime exec failed: exec failed: cannot exec a container that has stopped: "
        "unknown' >&2; exit 126");
  dc::ExecOptions options;
  options.cmd = {"true"};
  dc::EngineError error;
  auto session = engine(settings())->exec("c", options, error);
  ASSERT_TRUE(session) << error.message;
  EXPECT_NE(drain(*session).err.find("OCI runtime exec failed"), std::string::npos);
  EXPECT_EQ(session->finish(false).code, 126);
}

TEST_F(FakeCli, AKilledExecSaysNoExitCodeOfItsOwn) {
  write("exec.sh", kLocalExec);
  dc::ExecOptions options;
  options.cmd = {"/bin/sh", "-c", "exec sleep 30"};
  dc::EngineError error;
  auto session = engine(settings())->exec("c", options, error);
  ASSERT_TRUE(session) << error.message;
  const auto exit = session->finish(true);
  EXPECT_FALSE(exit.code.has_value());
}

TEST_F(FakeCli, TheChannelIsOneSocketBothWaysAndItsChildEndsWithIt) {
  write("exec.sh", kLocalExec);
  dc::ExecOptions options;
  options.cmd = {"/bin/sh", "-c", "echo diag >&2; cat"};
  options.user = "1000:1000";
  dc::EngineError error;
  auto ends = engine(settings())->open_channel("c", options, error);
  ASSERT_TRUE(ends) << error.message;
  EXPECT_EQ(ends->framing, runner_client::ChannelEnds::Framing::kRaw);
  EXPECT_EQ(ends->read_fd, ends->write_fd);
  ASSERT_GE(ends->diagnostics_fd, 0);
  ASSERT_TRUE(ends->owner);
  ASSERT_EQ(::write(ends->write_fd, "frame", 5), 5);
  char buf[16];
  pollfd p{ends->read_fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  EXPECT_EQ(::read(ends->read_fd, buf, sizeof buf), 5);
  p = {ends->diagnostics_fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  EXPECT_EQ(std::string(buf, static_cast<std::size_t>(::read(ends->diagnostics_fd, buf, 5))),
            "diag\n");
  EXPECT_EQ(calls()[0][1], "--interactive");
  // The channel closes its ends, then lets go of the owner: the child has ended by then.
  auto owner = std::static_pointer_cast<Child>(ends->owner);
  ::close(ends->read_fd);
  ::close(ends->diagnostics_fd);
  ends->owner.reset();
  EXPECT_TRUE(owner->poll_exit().has_value() || owner.use_count() == 1);
  const pid_t pid = owner->pid();
  owner.reset();
  EXPECT_NE(::kill(pid, 0), 0);  // reaped: the pid is gone
}

}  // namespace
}  // namespace execmcp::plugins::docker_cli
