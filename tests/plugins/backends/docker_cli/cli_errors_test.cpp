// Table tests: canned stderr of docker 20.10 (and 28) and podman 4.3 classified into engine errors
// with plain words.
#include "docker_cli/cli_errors.hpp"

#include <gtest/gtest.h>

#include <string>

namespace execmcp::plugins::docker_cli {
namespace {

using Kind = docker_common::EngineError::Kind;

CliRun failed(const std::string& err, int status = 1) {
  CliRun run;
  run.exit_status = status;
  run.err = err;
  return run;
}

const CliTarget kSsh{"docker (DOCKER_HOST=ssh://root@127.0.0.1:2222)", "ssh://root@127.0.0.1:2222",
                     "", false};
const CliTarget kLocal{"docker", "", "", false};

struct Case {
  const char* name;
  const char* err;
  Kind kind;
  std::vector<const char*> says;  // each must be in the message
};

TEST(CliErrors, CannedStderrOfDockerAndPodman) {
  const std::vector<Case> cases = {
      {"docker 20.10 daemon down",
       "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon "
       "running?\n",
       Kind::kUnreachable,
       {"cannot reach Docker at unix:///var/run/docker.sock: is dockerd running? (Cannot connect"}},
      {"docker 28 tcp refused",
       "error during connect: Get \"http://127.0.0.1:1/v1.50/version\": dial tcp 127.0.0.1:1: "
       "connect: connection refused\n",
       Kind::kUnreachable,
       {"cannot reach Docker at", "connection refused"}},
      {"podman 4.3 no socket",
       "Cannot connect to Podman. Please verify your connection to the Linux system using "
       "`podman system connection list`, or try `podman machine init` and `podman machine "
       "start` to manage a new Linux VM\nError: unable to connect to Podman socket: Get "
       "\"http://d/v4.3.1/libpod/_ping\": dial unix ///run/podman/podman.sock: connect: no such "
       "file or directory\n",
       Kind::kUnreachable,
       {"cannot reach Docker", "podman.sock"}},
      {"docker 20.10 socket permission",
       "Got permission denied while trying to connect to the Docker daemon socket at "
       "unix:///var/run/docker.sock: Get \"http://%2Fvar%2Frun%2Fdocker.sock/v1.24/version\": "
       "dial unix /var/run/docker.sock: connect: permission denied\n",
       Kind::kUnreachable,
       {"no permission to use the Docker socket at unix:///var/run/docker.sock", "'docker' group"}},
      {"docker 20.10 context missing",
       "unable to resolve docker endpoint: context \"nope\" does "
       "not exist\n",
       Kind::kUnreachable,
       {"docker context", "does not exist", "docker_context"}},
      {"docker 20.10 image inspect",
       "Error: No such image: execmcp/runtime:nope\n",
       Kind::kImageMissing,
       {"No such image: execmcp/runtime:nope"}},
      {"docker 20.10 create without the image",
       "Unable to find image 'execmcp/runtime:nope' locally\nError: No such image: "
       "execmcp/runtime:nope\n",
       Kind::kImageMissing,
       {"No such image"}},
      {"podman 4.3 image",
       "Error: execmcp/runtime:nope: image not known\n",
       Kind::kImageMissing,
       {"image not known"}},
      {"docker 20.10 inspect",
       "Error: No such container: execmcp-a-1\n",
       Kind::kNotFound,
       {"No such container: execmcp-a-1"}},
      {"docker 20.10 inspect without --type",
       "Error: No such object: execmcp-a-1\n",
       Kind::kNotFound,
       {"No such object"}},
      {"docker 20.10 exec gone",
       "Error response from daemon: No such container: execmcp-a-1\n",
       Kind::kNotFound,
       {"No such container"}},
      {"podman 4.3 gone",
       "Error: no container with name or ID \"execmcp-a-1\" found: no such container\n",
       Kind::kNotFound,
       {"no container with name or ID"}},
      {"docker 20.10 exec stopped",
       "Error response from daemon: Container 0123abcd is not running\n",
       Kind::kNotRunning,
       {"Container 0123abcd is not running"}},
      {"docker 20.10 exec into a gVisor sandbox that is ending",
       "OCI runtime exec failed: exec failed: cannot exec in a deleted state: unknown\n",
       Kind::kNotRunning,
       {"cannot exec in a deleted state"}},
      {"podman 4.3 exec stopped",
       "Error: can only create exec sessions on running containers: container state improper\n",
       Kind::kNotRunning,
       {"container state improper"}},
      {"docker 20.10 name taken",
       "Error response from daemon: Conflict. The container name \"/execmcp-a-1\" is already in "
       "use by container \"0123\". You have to remove (or rename) that container to be able to "
       "reuse that name.\n",
       Kind::kConflict,
       {"already in use"}},
      {"podman 4.3 name taken",
       "Error: creating container storage: the container name \"execmcp-a-1\" is already in use "
       "by 0123. You have to remove that container to be able to reuse that name: that name is "
       "already in use\n",
       Kind::kConflict,
       {"already in use"}},
      {"anything else",
       "Error response from daemon: invalid mount config\n",
       Kind::kOther,
       {"invalid mount config"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto e = classify_cli_failure(failed(c.err), kLocal);
    EXPECT_EQ(e.kind, c.kind) << e.message;
    for (const char* s : c.says) EXPECT_NE(e.message.find(s), std::string::npos) << e.message;
    EXPECT_EQ(e.message.find("Error response from daemon: "), std::string::npos) << e.message;
  }
}

TEST(CliErrors, SshFailuresNameTheDestinationAndKeepSshsWords) {
  const std::string prefix =
      "error during connect: Get \"http://docker.example.com/v1.24/version\": command [ssh -l "
      "root -p 2222 -- 127.0.0.1 docker system dial-stdio] has exited with exit status 255, "
      "please make sure the URL is valid, and Docker 18.09 or later is installed on the remote "
      "host: stderr=";
  auto e = classify_cli_failure(failed(prefix + "root@127.0.0.1: Permission denied "
                                                "(publickey).\n"),
                                kSsh);
  EXPECT_EQ(e.kind, Kind::kUnreachable);
  EXPECT_EQ(e.message.rfind("SSH to root@127.0.0.1:2222 failed: authentication failed", 0), 0u)
      << e.message;
  EXPECT_NE(e.message.find("Permission denied (publickey)"), std::string::npos) << e.message;

  e = classify_cli_failure(failed(prefix + "Host key verification failed.\n"), kSsh);
  EXPECT_EQ(e.message.rfind("SSH to root@127.0.0.1:2222 failed: the host key", 0), 0u) << e.message;
  EXPECT_NE(e.message.find("Host key verification failed."), std::string::npos) << e.message;

  // docker 28 adds ssh options before -l; the destination still comes from the command line.
  e = classify_cli_failure(
      failed("error during connect: Get \"http://docker.example.com/v1.50/containers/json\": "
             "command [ssh -o ConnectTimeout=30 -T -l nobody -p 1 -- 127.0.0.1 docker system "
             "dial-stdio] has exited with exit status 255, make sure the URL is valid, and Docker "
             "18.09 or later is installed on the remote host: stderr=ssh: connect to host "
             "127.0.0.1 port 1: Connection refused\n"),
      kLocal);
  EXPECT_EQ(e.message.rfind("SSH to nobody@127.0.0.1:1 failed: ssh: connect to host 127.0.0.1 "
                            "port 1: Connection refused",
                            0),
            0u)
      << e.message;
}

TEST(CliErrors, SshDestinationFromTheUrl) {
  EXPECT_EQ(ssh_destination("", "ssh://root@127.0.0.1:2222"), "root@127.0.0.1:2222");
  EXPECT_EQ(ssh_destination("", "ssh://host"), "host:22");
  EXPECT_EQ(ssh_destination("", "ssh://me@host/"), "me@host:22");
  EXPECT_EQ(ssh_destination("", "unix:///x"), "");
}

TEST(CliErrors, SpawnErrorsAndTimeoutsAreUnreachable) {
  CliRun run;
  run.spawn_error =
      "the docker CLI 'docker' was not found in PATH (/x): install docker.io, or "
      "set docker_binary";
  auto e = classify_cli_failure(run, kLocal);
  EXPECT_EQ(e.kind, Kind::kUnreachable);
  EXPECT_EQ(e.message, run.spawn_error);
  CliRun slow;
  slow.timed_out = true;
  e = classify_cli_failure(slow, kSsh);
  EXPECT_EQ(e.kind, Kind::kUnreachable);
  EXPECT_NE(e.message.find("ssh://root@127.0.0.1:2222"), std::string::npos) << e.message;
  e = classify_cli_failure(failed("", 3), kLocal);
  EXPECT_EQ(e.kind, Kind::kOther);
  EXPECT_NE(e.message.find("status 3"), std::string::npos) << e.message;
}

TEST(CliErrors, WhereTheEngineWasLookedFor) {
  EXPECT_EQ(engine_address("", kSsh), "ssh://root@127.0.0.1:2222");
  EXPECT_EQ(engine_address("", CliTarget{"docker --context prod", "", "prod", false}),
            "context 'prod'");
  EXPECT_EQ(engine_address("Cannot connect to the Docker daemon at unix:///x.sock. Is the docker "
                           "daemon running?",
                           kLocal),
            "unix:///x.sock");
  const CliTarget podman{"podman", "", "", true};
  const auto e = classify_cli_failure(
      failed("Error: unable to connect to Podman socket: dial unix ///run/podman/podman.sock: "
             "connect: no such file or directory\n"),
      podman);
  EXPECT_EQ(
      e.message.rfind("cannot reach Podman at its default socket: is its service running?", 0), 0u)
      << e.message;
}

TEST(CliErrors, StderrIsTrimmedAndKept) {
  EXPECT_EQ(trimmed_stderr("WARNING: Error loading config file: x\nError: No such image: y\n"),
            "No such image: y");
  EXPECT_EQ(trimmed_stderr("Error: a\n\n  b  \n"), "a; b");
  const std::string long_text = "Error: " + std::string(600, 'x') + "\n";
  const auto t = trimmed_stderr(long_text);
  EXPECT_EQ(t, std::string(kStderrKept, 'x') + "...");
  // Never cut inside a UTF-8 character.
  const std::string utf8 = std::string(kStderrKept - 1, 'x') + "\xc3\xa9" + "tail";
  EXPECT_EQ(trimmed_stderr(utf8), std::string(kStderrKept - 1, 'x') + "...");
  const auto e = classify_cli_failure(failed(long_text), kLocal);
  EXPECT_LE(e.message.size(), kStderrKept + 3);
}

}  // namespace
}  // namespace execmcp::plugins::docker_cli
