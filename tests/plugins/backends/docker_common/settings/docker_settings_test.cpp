// Tests for the strict parsing of the Docker backends' settings.
#include "docker_common/settings/docker_settings.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace execmcp::plugins::docker_common {
namespace {

std::string error_of(const std::string& json, EngineKind kind = EngineKind::kApi) {
  try {
    parse_docker_settings(json, kind);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(DockerSettings, DefaultsWhenEmpty) {
  auto s = parse_docker_settings("{}");
  EXPECT_EQ(s.image, "execmcp/runtime:latest");
  EXPECT_EQ(s.network, "none");
  EXPECT_EQ(s.pids_limit, 512);
  // Memory is bounded unless the operator says "none"; the disk has no default (see the docs).
  EXPECT_EQ(s.memory_bytes, DockerSettings::kDefaultMemoryBytes);
  EXPECT_FALSE(parse_docker_settings(R"({"memory": "none"})").memory_bytes);
  EXPECT_FALSE(s.disk_bytes);
  EXPECT_FALSE(s.cpus);
  EXPECT_EQ(s.shell, "/bin/sh");
  EXPECT_TRUE(s.user.empty());
  EXPECT_EQ(parse_docker_settings("").image, "execmcp/runtime:latest");
}

TEST(DockerSettings, ParsesEveryKey) {
  auto s = parse_docker_settings(R"({
    "image": "img:1", "memory": "512m", "cpus": 1.5, "pids_limit": 64, "network": "bridge",
    "user": "1234:1234", "env": {"A": "1"}, "docker_host": "unix:///x.sock",
    "extra_mounts": [{"source": "/data", "target": "/mnt/data", "read_only": false}],
    "command_prefix": "set -e;", "venv_path": "/opt/venv", "shell": "/bin/bash"})");
  EXPECT_EQ(s.image, "img:1");
  EXPECT_EQ(*s.memory_bytes, 512LL * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*s.cpus, 1.5);
  EXPECT_EQ(s.pids_limit, 64);
  EXPECT_EQ(s.network, "bridge");
  EXPECT_EQ(s.user, "1234:1234");
  EXPECT_EQ(s.env.at("A"), "1");
  EXPECT_EQ(s.docker_host, "unix:///x.sock");
  ASSERT_EQ(s.extra_mounts.size(), 1u);
  EXPECT_EQ(s.extra_mounts[0].target, "/mnt/data");
  EXPECT_FALSE(s.extra_mounts[0].read_only);
  EXPECT_EQ(s.command_prefix, "set -e;");
  EXPECT_EQ(s.venv_path, "/opt/venv");
  EXPECT_EQ(s.shell, "/bin/bash");
  EXPECT_EQ(*parse_docker_settings(R"({"memory": 1048576})").memory_bytes, 1048576);
  EXPECT_EQ(*parse_docker_settings(R"({"disk": "10g"})").disk_bytes, 10LL << 30);
  const auto scratch = parse_docker_settings(R"({"tmpfs_size": "64m", "writable_rootfs": true})");
  EXPECT_EQ(scratch.tmpfs_bytes, 64LL << 20);
  EXPECT_TRUE(scratch.writable_rootfs);
  EXPECT_NE(error_of(R"({"writable_rootfs": "yes"})").find("'writable_rootfs'"), std::string::npos);
}

TEST(DockerSettings, ErrorsNameTheKey) {
  EXPECT_NE(error_of(R"({"imagee": "x"})").find("unknown setting 'imagee' (known: image,"),
            std::string::npos);
  const auto mem = error_of(R"({"memory": "lots"})");
  EXPECT_NE(mem.find("'memory'"), std::string::npos) << mem;
  EXPECT_NE(mem.find("512m"), std::string::npos) << mem;
  EXPECT_NE(error_of(R"({"memory": true})").find("'memory'"), std::string::npos);
  EXPECT_NE(error_of(R"({"disk": "none"})").find("'disk'"), std::string::npos);
  EXPECT_NE(error_of(R"({"disk": 0})").find("'disk'"), std::string::npos);
  EXPECT_NE(error_of(R"({"cpus": "2"})").find("'cpus'"), std::string::npos);
  EXPECT_NE(error_of(R"({"cpus": -1})").find("'cpus'"), std::string::npos);
  EXPECT_NE(error_of(R"({"network": "overlay"})").find("none, bridge, host"), std::string::npos);
  EXPECT_NE(error_of(R"({"pids_limit": 1.5})").find("'pids_limit'"), std::string::npos);
  EXPECT_NE(error_of(R"({"env": {"A": 1}})").find("'env.A'"), std::string::npos);
  EXPECT_NE(error_of(R"({"extra_mounts": [{"source": "rel"}]})").find("extra_mounts[0].source"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"extra_mounts": [{"source": "/a", "mode": "ro"}]})").find("mode"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"shell": "sh"})").find("'shell'"), std::string::npos);
  EXPECT_NE(error_of("[1]").find("object"), std::string::npos);
  EXPECT_NE(error_of("{").find("JSON"), std::string::npos);
}

TEST(DockerSettings, ExecModeIsAgentUnlessSetToExec) {
  EXPECT_EQ(parse_docker_settings("{}").exec_mode, ExecMode::Agent);
  EXPECT_EQ(parse_docker_settings(R"({"exec_mode": "agent"})").exec_mode, ExecMode::Agent);
  EXPECT_EQ(parse_docker_settings(R"({"exec_mode": "exec"})").exec_mode, ExecMode::Exec);
  for (const char* bad :
       {R"({"exec_mode": "Exec"})", R"({"exec_mode": "runner"})", R"({"exec_mode": ""})",
        R"({"exec_mode": 1})", R"({"exec_mode": null})"}) {
    const auto error = error_of(bad);
    EXPECT_NE(error.find("'exec_mode'"), std::string::npos) << bad << ": " << error;
    EXPECT_NE(error.find("agent, exec"), std::string::npos) << bad << ": " << error;
  }
  EXPECT_NE(error_of(R"({"exec_mod": "exec"})").find("exec_mode"), std::string::npos);
}

TEST(DockerSettings, RootIsNeverAccepted) {
  for (const char* user : {"root", "0", "0:0", "root:root", "00"}) {
    const std::string json = std::string(R"({"user": ")") + user + "\"}";
    EXPECT_NE(error_of(json).find("'user'"), std::string::npos) << user;
    EXPECT_TRUE(is_root_user(user)) << user;
  }
  EXPECT_FALSE(is_root_user("1000"));
  EXPECT_FALSE(is_root_user("1000:0"));
  EXPECT_FALSE(is_root_user("execmcp"));
}

TEST(DockerSettings, CliKeysParseForTheCli) {
  const auto defaults = parse_docker_settings("{}", EngineKind::kCli);
  EXPECT_EQ(defaults.docker_binary, "docker");
  EXPECT_TRUE(defaults.docker_context.empty());
  EXPECT_TRUE(defaults.docker_flags.empty());
  EXPECT_TRUE(defaults.cli_env.empty());
  const auto s = parse_docker_settings(R"({
    "docker_binary": "podman", "docker_flags": ["--cgroup-manager=cgroupfs", "--log-level=error"],
    "cli_env": {"PATH": "/opt/bin:/usr/bin", "HOME": "/var/lib/execmcp", "DOCKER_CONFIG": "/c"},
    "image": "img:1"})",
                                       EngineKind::kCli);
  EXPECT_EQ(s.docker_binary, "podman");
  EXPECT_EQ(s.docker_flags,
            (std::vector<std::string>{"--cgroup-manager=cgroupfs", "--log-level=error"}));
  EXPECT_EQ(s.cli_env.at("PATH"), "/opt/bin:/usr/bin");
  EXPECT_EQ(s.cli_env.at("HOME"), "/var/lib/execmcp");
  EXPECT_EQ(s.cli_env.at("DOCKER_CONFIG"), "/c");
  EXPECT_EQ(s.image, "img:1");
  EXPECT_EQ(parse_docker_settings(R"({"docker_binary": "/usr/local/bin/docker"})", EngineKind::kCli)
                .docker_binary,
            "/usr/local/bin/docker");
  EXPECT_EQ(parse_docker_settings(R"({"docker_context": "prod"})", EngineKind::kCli).docker_context,
            "prod");
  // An ssh:// engine is what the CLI is for.
  EXPECT_EQ(
      parse_docker_settings(R"({"docker_host": "ssh://me@h:2222"})", EngineKind::kCli).docker_host,
      "ssh://me@h:2222");
  EXPECT_NE(error_of(R"({"imagee": "x"})", EngineKind::kCli).find("docker_binary"),
            std::string::npos);
  EXPECT_NE(error_of("[1]", EngineKind::kCli).find("docker-cli settings"), std::string::npos);
}

TEST(DockerSettings, CliKeysAreCheckedStrictly) {
  const auto cli = [](const char* json) { return error_of(json, EngineKind::kCli); };
  for (const char* bad :
       {R"({"docker_binary": ""})", R"({"docker_binary": "bin/docker"})",
        R"({"docker_binary": "-x"})", R"({"docker_binary": 1})", R"({"docker_binary": "/"})"})
    EXPECT_NE(cli(bad).find("'docker_binary'"), std::string::npos) << bad << ": " << cli(bad);
  EXPECT_NE(cli(R"({"docker_context": ""})").find("'docker_context'"), std::string::npos);
  EXPECT_NE(cli(R"({"docker_context": "--host=x"})").find("'docker_context'"), std::string::npos);
  EXPECT_NE(cli(R"({"docker_flags": "--debug"})").find("'docker_flags'"), std::string::npos);
  EXPECT_NE(cli(R"({"docker_flags": ["vfs"]})").find("'docker_flags[0]'"), std::string::npos);
  EXPECT_NE(cli(R"({"docker_flags": ["--x", 2]})").find("'docker_flags[1]'"), std::string::npos);
  EXPECT_NE(cli(R"({"cli_env": ["A=1"]})").find("'cli_env'"), std::string::npos);
  EXPECT_NE(cli(R"({"cli_env": {"A": 1}})").find("'cli_env.A'"), std::string::npos);
  EXPECT_NE(cli(R"({"cli_env": {"A=B": "1"}})").find("'cli_env'"), std::string::npos);
  // Each of these has a setting of its own, or must stay as the engine sets it.
  EXPECT_NE(cli(R"({"cli_env": {"DOCKER_HOST": "tcp://x:1"}})").find("'docker_host'"),
            std::string::npos);
  EXPECT_NE(cli(R"({"cli_env": {"DOCKER_CONTEXT": "x"}})").find("'docker_context'"),
            std::string::npos);
  EXPECT_NE(cli(R"({"cli_env": {"LC_ALL": "de_DE.UTF-8"}})").find("'cli_env.LC_ALL'"),
            std::string::npos);
}

TEST(DockerSettings, TheCliRefusesHostWithContext) {
  const auto error =
      error_of(R"({"docker_host": "ssh://h", "docker_context": "prod"})", EngineKind::kCli);
  EXPECT_NE(error.find("'docker_host' and 'docker_context'"), std::string::npos) << error;
  EXPECT_NE(error.find("keep one"), std::string::npos) << error;
}

TEST(DockerSettings, TheApiRefusesCliKeysAndSshByName) {
  for (const char* key : {"docker_binary", "docker_context", "docker_flags", "cli_env"}) {
    const std::string json = std::string(R"({")") + key + R"(": "x"})";
    const auto error = error_of(json);
    EXPECT_NE(
        error.find(std::string("'") + key + "' is a docker-cli setting; use plugin docker-cli"),
        std::string::npos)
        << error;
  }
  const auto ssh = error_of(R"({"docker_host": "ssh://root@127.0.0.1:2222"})");
  EXPECT_NE(ssh.find("'docker_host'"), std::string::npos) << ssh;
  EXPECT_NE(ssh.find("use plugin docker-cli"), std::string::npos) << ssh;
  EXPECT_EQ(parse_docker_settings(R"({"docker_host": "tcp://127.0.0.1:2375"})").docker_host,
            "tcp://127.0.0.1:2375");
  // The API's list of known keys does not offer the CLI's.
  EXPECT_EQ(error_of(R"({"imagee": "x"})").find("docker_binary"), std::string::npos);
}

TEST(DockerSettings, SudoAndCredentialsParseForBothBackends) {
  for (auto kind : {EngineKind::kApi, EngineKind::kCli}) {
    const auto s = parse_docker_settings(R"({"sudo": true, "credentials": {
      "mount": ["ssh_keys", "git_config", "ssh_keys"],
      "additional_mounts": {"/srv/data": {"bind": "/data", "mode": "rw"}, "/srv/ro": {"bind": "/ro"}},
      "env_file": "/etc/agent.env", "env_vars_from_file": ["A", "B"], "env_vars": ["C"],
      "pass_all_env": true}})",
                                         kind);
    EXPECT_TRUE(s.sudo);
    EXPECT_EQ(s.credentials.mount, (std::vector<std::string>{"ssh_keys", "git_config"}));
    EXPECT_EQ(s.credentials.env_file, "/etc/agent.env");
    ASSERT_TRUE(s.credentials.env_vars_from_file);
    EXPECT_EQ(*s.credentials.env_vars_from_file, (std::vector<std::string>{"A", "B"}));
    EXPECT_EQ(s.credentials.env_vars, (std::vector<std::string>{"C"}));
    EXPECT_TRUE(s.credentials.pass_all_env);
    // additional_mounts are extra mounts: checked and mounted like them.
    ASSERT_EQ(s.extra_mounts.size(), 2u);
    EXPECT_EQ(s.extra_mounts[0].source, "/srv/data");
    EXPECT_EQ(s.extra_mounts[0].target, "/data");
    EXPECT_FALSE(s.extra_mounts[0].read_only);
    EXPECT_EQ(s.extra_mounts[1].target, "/ro");
    EXPECT_TRUE(s.extra_mounts[1].read_only);  // mode defaults to ro
  }
  EXPECT_FALSE(parse_docker_settings("{}").sudo);
  EXPECT_FALSE(parse_docker_settings("{}").credentials.has_env());
}

TEST(DockerSettings, CredentialsAreCheckedStrictly) {
  EXPECT_EQ(error_of(R"({"sudo": "yes"})"), "setting 'sudo': expected true or false");
  EXPECT_EQ(error_of(R"({"credentials": {"mount": ["aws"]}})"),
            "setting 'credentials.mount[0]': expected one of ssh_keys, git_config, gh_config, "
            "npm_config, pypi_config (got 'aws')");
  EXPECT_EQ(error_of(R"({"credentials": {"mount": "ssh_keys"}})"),
            "setting 'credentials.mount': expected a list of ssh_keys, git_config, gh_config, "
            "npm_config, pypi_config");
  EXPECT_EQ(error_of(R"({"credentials": {"env_file": "agent.env"}})"),
            "setting 'credentials.env_file': expected an absolute path (relative paths are "
            "resolved by the config loader)");
  EXPECT_EQ(error_of(R"({"credentials": {"env_vars": ["A-B"]}})"),
            "setting 'credentials.env_vars[0]': expected a list of variable names "
            "([A-Za-z_][A-Za-z0-9_]*)");
  EXPECT_EQ(error_of(R"({"credentials": {"env_vars_from_file": ["A"]}})"),
            "setting 'credentials.env_vars_from_file' needs 'credentials.env_file' (the file the "
            "names are taken from)");
  EXPECT_EQ(error_of(R"({"credentials": {"pass_all_env": 1}})"),
            "setting 'credentials.pass_all_env': expected true or false");
  EXPECT_EQ(error_of(R"({"credentials": {"envfile": "/x"}})"),
            "unknown setting 'credentials.envfile' (known: mount, additional_mounts, env_file, "
            "env_vars_from_file, env_vars, pass_all_env)");
  EXPECT_EQ(error_of(R"({"credentials": {"additional_mounts": {"rel": {"bind": "/x"}}}})"),
            "setting 'credentials.additional_mounts.rel': expected an absolute host path as the "
            "key");
  EXPECT_EQ(
      error_of(R"({"credentials": {"additional_mounts": {"/a": {"bind": "/x", "mode": "w"}}}})"),
      "setting 'credentials.additional_mounts./a.mode': expected ro or rw (got 'w')");
  EXPECT_EQ(error_of(R"({"credentials": {"additional_mounts": {"/a": {}}}})"),
            "setting 'credentials.additional_mounts./a.bind': expected an absolute container path");
  EXPECT_EQ(
      error_of(R"({"credentials": []})").rfind("setting 'credentials': expected an object", 0), 0u);
}

TEST(DockerSettings, PreinstallTakesThreeListsAndAFailurePolicyBothEngines) {
  for (auto kind : {EngineKind::kApi, EngineKind::kCli}) {
    const auto s = parse_docker_settings(
        R"({"preinstall_on_failure": "continue",
            "preinstall": {"system": ["curl", "/x/a.deb"], "python": ["requests==2.31"],
                           "npm": ["/x/p.tgz"]}})",
        kind);
    EXPECT_EQ(s.preinstall.system, (std::vector<std::string>{"curl", "/x/a.deb"}));
    EXPECT_EQ(s.preinstall.python, (std::vector<std::string>{"requests==2.31"}));
    EXPECT_EQ(s.preinstall.npm, (std::vector<std::string>{"/x/p.tgz"}));
    EXPECT_TRUE(s.preinstall.continue_on_failure);
  }
  const auto d = parse_docker_settings(R"({"preinstall": {"python": ["x"]}})");
  EXPECT_FALSE(d.preinstall.continue_on_failure);  // fail is the default
  EXPECT_FALSE(d.preinstall.empty());
  EXPECT_TRUE(parse_docker_settings("{}").preinstall.empty());
}

TEST(DockerSettings, PreinstallRefusesWhatItCannotInstall) {
  EXPECT_EQ(error_of(R"({"preinstall": {"pip": ["x"]}})"),
            "unknown setting 'preinstall.pip' (known: system, python, npm)");
  EXPECT_EQ(
      error_of(R"({"preinstall": ["x"]})").rfind("setting 'preinstall': expected an object", 0),
      0u);
  // An entry is a package, never an option of the installer.
  for (const char* bad :
       {R"({"preinstall": {"python": ["--index-url=http://x"]}})",
        R"({"preinstall": {"system": [""]}})", R"({"preinstall": {"npm": ["a\nb"]}})"})
    EXPECT_NE(error_of(bad).find("expected a package name or an absolute path"), std::string::npos)
        << bad;
  EXPECT_EQ(error_of(R"({"preinstall": {"python": "x"}})"),
            "setting 'preinstall.python': expected a list of package names or absolute paths of "
            "local files");
  EXPECT_EQ(error_of(R"({"preinstall_on_failure": "ignore"})"),
            "setting 'preinstall_on_failure': expected one of fail, continue (got 'ignore')");
  // Attach mode cannot install anything into a container it does not create.
  EXPECT_NE(error_of(R"({"container": "dev", "preinstall": {"python": ["x"]}})")
                .find("'preinstall' cannot apply to a container execmcp does not create"),
            std::string::npos);
}

TEST(DockerSettings, AttachModeTakesAContainerNameAndItsOwnOptionBothEngines) {
  for (const auto kind : {EngineKind::kApi, EngineKind::kCli}) {
    const auto s = parse_docker_settings(
        R"({"container": "massgen-a_1.x", "attach_accept_writable_context": true, "user": "1000",
            "env": {"A": "1"}, "exec_mode": "exec", "shell": "/bin/bash"})",
        kind);
    EXPECT_EQ(s.container, "massgen-a_1.x");
    EXPECT_TRUE(s.attach_accept_writable_context);
    EXPECT_TRUE(parse_docker_settings("{}", kind).container.empty());
    EXPECT_FALSE(parse_docker_settings("{}", kind).attach_accept_writable_context);
  }
  for (const char* bad : {R"("")", R"("-rm")", R"("a b")", R"("x/y")", "1"}) {
    const auto error = error_of(std::string(R"({"container": )") + bad + "}");
    EXPECT_NE(error.find("setting 'container'"), std::string::npos) << bad << ": " << error;
  }
  // Without 'container' the option would do nothing: refused, not ignored.
  const auto alone = error_of(R"({"attach_accept_writable_context": true})");
  EXPECT_NE(alone.find("applies only with 'container'"), std::string::npos) << alone;
}

TEST(DockerSettings, RuntimeNamesARegisteredRuntimeBothEngines) {
  for (const auto kind : {EngineKind::kApi, EngineKind::kCli}) {
    EXPECT_EQ(parse_docker_settings("{}", kind).runtime, "");  // the engine's default
    EXPECT_EQ(parse_docker_settings(R"({"runtime": "runsc"})", kind).runtime, "runsc");
    EXPECT_EQ(parse_docker_settings(R"({"runtime": "io.containerd.runc.v2"})", kind).runtime,
              "io.containerd.runc.v2");
    EXPECT_NE(error_of(R"({"runtime": 1})", kind).find("setting 'runtime': expected a string"),
              std::string::npos);
    for (const char* bad : {R"("")", R"("--privileged")", R"("a b")", R"("/usr/bin/runsc")"}) {
      const auto error = error_of(std::string(R"({"runtime": )") + bad + "}", kind);
      EXPECT_NE(error.find("setting 'runtime': expected the name of a runtime"), std::string::npos)
          << bad << ": " << error;
    }
    // It is about the container execmcp creates.
    const auto attach = error_of(R"({"container": "c1", "runtime": "runsc"})", kind);
    EXPECT_NE(attach.find("'runtime'"), std::string::npos) << attach;
    EXPECT_NE(attach.find("cannot apply to a container execmcp does not create"), std::string::npos)
        << attach;
  }
}

TEST(DockerSettings, AttachModeRefusesEverySettingAboutCreatingTheContainerByName) {
  const auto error = error_of(
      R"({"container": "c1", "image": "x", "memory": "1g", "pids_limit": 5, "network": "bridge",
          "extra_mounts": [{"source": "/data"}], "cpus": 1, "disk": "1g", "tmpfs_size": "1m",
          "writable_rootfs": true})");
  for (const char* key : {"'image'", "'memory'", "'pids_limit'", "'network'", "'extra_mounts'",
                          "'cpus'", "'disk'", "'tmpfs_size'", "'writable_rootfs'"})
    EXPECT_NE(error.find(key), std::string::npos) << key << ": " << error;
  EXPECT_NE(error.find("cannot apply to a container execmcp does not create"), std::string::npos)
      << error;
  EXPECT_NE(error.find("'c1'"), std::string::npos) << error;
  // One is enough, on either engine.
  EXPECT_NE(error_of(R"({"container": "c1", "memory": "none"})", EngineKind::kCli).find("'memory'"),
            std::string::npos);
}

TEST(DockerSettings, NetworkEgressTakesThePolicyOfTheEgressSetting) {
  for (auto kind : {EngineKind::kApi, EngineKind::kCli}) {
    const auto s = parse_docker_settings(
        R"({"network": "egress", "egress": {"allow": ["pypi.org", "*.npmjs.org", "10.20.0.0/16"],
            "ports": [443], "upstream_network": "uplink"}})",
        kind);
    EXPECT_EQ(s.network, "egress");
    ASSERT_TRUE(s.egress);
    ASSERT_EQ(s.egress->allow.size(), 3u);
    EXPECT_EQ(s.egress->allow[0].value, "pypi.org");
    EXPECT_EQ(s.egress->allow[1].kind, EgressEntry::Kind::kWildcard);
    EXPECT_EQ(s.egress->allow[2].kind, EgressEntry::Kind::kNetwork);
    EXPECT_EQ(s.egress->ports, std::vector<std::uint16_t>{443});
    EXPECT_EQ(s.egress->upstream_network, "uplink");
  }
  // The defaults of what is left out.
  const auto d = parse_docker_settings(R"({"network": "egress", "egress": {"allow": ["a.test"]}})");
  ASSERT_TRUE(d.egress);
  EXPECT_EQ(d.egress->ports, (std::vector<std::uint16_t>{80, 443}));
  EXPECT_EQ(d.egress->upstream_network, "bridge");
  EXPECT_FALSE(parse_docker_settings("{}").egress);
  EXPECT_FALSE(parse_docker_settings(R"({"network": "bridge"})").egress);
}

TEST(DockerSettings, NetworkEgressWithoutAnAllowListIsRefused) {
  const auto none = error_of(R"({"network": "egress"})");
  EXPECT_NE(none.find("setting 'network': egress needs 'egress' with 'allow'"), std::string::npos)
      << none;
  const auto empty = error_of(R"({"network": "egress", "egress": {"ports": [80]}})");
  EXPECT_NE(empty.find("setting 'egress': needs 'allow'"), std::string::npos) << empty;
  const auto nothing = error_of(R"({"network": "egress", "egress": {"allow": []}})");
  EXPECT_NE(nothing.find("setting 'egress.allow': an empty allow list"), std::string::npos)
      << nothing;
}

TEST(DockerSettings, AnEgressSettingWithoutNetworkEgressIsRefused) {
  for (const char* json : {R"({"egress": {"allow": ["a.test"]}})",
                           R"({"network": "bridge", "egress": {"allow": ["a.test"]}})"}) {
    const auto error = error_of(json);
    EXPECT_NE(error.find("setting 'egress' applies only with 'network: egress'"), std::string::npos)
        << json << ": " << error;
  }
}

TEST(DockerSettings, AnEgressEntryAtFaultIsNamedByItsPlace) {
  const auto error =
      error_of(R"({"network": "egress", "egress": {"allow": ["pypi.org", "http://x/"]}})");
  EXPECT_NE(error.find("setting 'egress.allow[1]'"), std::string::npos) << error;
  const auto key = error_of(R"({"network": "egress", "egress": {"allow": ["a.test"], "x": 1}})");
  EXPECT_NE(key.find("setting 'egress.x': unknown setting 'x'"), std::string::npos) << key;
  EXPECT_NE(error_of(R"({"network": "egres"})").find("one of none, bridge, host, egress"),
            std::string::npos);
}

TEST(DockerSettings, EgressIsRefusedInAttachModeAndTakesPreinstall) {
  const auto attach =
      error_of(R"({"container": "c1", "network": "egress", "egress": {"allow": ["a.test"]}})");
  EXPECT_NE(attach.find("'egress'"), std::string::npos) << attach;
  EXPECT_NE(attach.find("cannot apply to a container execmcp does not create"), std::string::npos)
      << attach;
  // The install goes through the agent's proxy (ContainerLifecycle), under the same policy.
  const auto install = parse_docker_settings(
      R"({"network": "egress", "egress": {"allow": ["a.test"]}, "preinstall": {"python": ["x"]}})");
  EXPECT_EQ(install.preinstall.python, std::vector<std::string>{"x"});
  EXPECT_TRUE(install.egress);
}

std::vector<sdk::SettingsProblem> problems_of(const std::string& json,
                                              EngineKind kind = EngineKind::kApi) {
  std::vector<sdk::SettingsProblem> problems;
  check_docker_settings(json, kind, problems);
  return problems;
}

TEST(DockerSettingsCheck, ASettingAtFaultIsPointedAtWithoutItsNameInTheMessage) {
  auto problems = problems_of(R"({"extra_mounts": [{"source": "relative"}]})");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].pointer, "/extra_mounts/0/source");
  EXPECT_EQ(problems[0].message, "expected an absolute host path");

  problems = problems_of(R"({"cpus": "many"})");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].pointer, "/cpus");

  problems = problems_of(R"({"credentials": {"mount": ["ssh_keys", "x"]}})");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].pointer, "/credentials/mount/1");

  problems = problems_of(R"({"env": {"A": 1}})");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].pointer, "/env/A");

  // A host path as a key ends the pointer at the map that holds it.
  problems = problems_of(R"({"credentials": {"additional_mounts": {"/srv/a.b": {"mode": "x"}}}})");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].pointer, "/credentials/additional_mounts");
  EXPECT_EQ(problems[0].message, "expected ro or rw (got 'x')");
}

TEST(DockerSettingsCheck, AnUnknownOrMisplacedKeyIsPointedAtItself) {
  auto problems = problems_of(R"({"imagee": "x"})");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].pointer, "/imagee");
  EXPECT_NE(problems[0].message.find("unknown setting (known: image,"), std::string::npos)
      << problems[0].message;

  problems = problems_of(R"({"docker_binary": "podman"})");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].pointer, "/docker_binary");
  EXPECT_EQ(problems[0].message, "is a docker-cli setting; use plugin docker-cli");
  EXPECT_TRUE(problems_of(R"({"docker_binary": "podman"})", EngineKind::kCli).empty());

  problems = problems_of(R"({"network": "egress"})");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].pointer, "/network");
  // "egress" is valid on its own here, so the problem is egress's own key, once.
  problems = problems_of(R"({"network": "bridge", "egress": {"allow": ["a.test"]}})");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].pointer, "/egress");
  EXPECT_EQ(problems[0].message, "applies only with 'network: egress' (network is 'bridge')");
}

TEST(DockerSettingsCheck, EveryBadEgressEntryIsReportedAtItsOwnPlace) {
  const auto problems = problems_of(
      R"({"network": "egress", "egress": {"allow": ["pypi.org", "bad host", "10.0.0.0/33"],
          "ports": [80, 0]}})");
  std::vector<std::string> pointers;
  for (const auto& p : problems) pointers.push_back(p.pointer);
  EXPECT_EQ(pointers,
            (std::vector<std::string>{"/egress/allow/1", "/egress/allow/2", "/egress/ports/1"}));
  EXPECT_TRUE(problems_of(R"({"network": "egress", "egress": {"allow": ["pypi.org"]}})").empty());
}

TEST(DockerSettingsCheck, SettingsThatAreNotAnObjectAreAProblemOfTheWhole) {
  const auto problems = problems_of("[1]");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].pointer, "");
  EXPECT_FALSE(problems[0].message.empty());
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
