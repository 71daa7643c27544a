// Tests for the container spec rendered as `docker create` / `podman create` arguments, field by
// field and against the Engine API body of the same spec.
#include "docker_common/lifecycle/container_create_args.hpp"
#include "docker_common/parts/preinstall.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace execmcp::plugins::docker_common {
namespace {

ContainerSpec full_spec() {
  ContainerSpec spec;
  spec.name = "execmcp-a-1";
  spec.image = "execmcp/runtime:latest";
  spec.user = "1000:1000";
  spec.working_dir = "/work/ws";
  spec.env = {"A=1", "B=x=y"};
  spec.labels = {{"execmcp.managed", "true"}, {"execmcp.agent", "a"}};
  spec.mounts = {{"/work/ws", "/work/ws", false}, {"/ctx", "/ctx", true}};
  spec.memory_bytes = 512LL << 20;
  spec.disk_bytes = 1LL << 30;
  spec.read_only_rootfs = true;
  spec.tmpfs = {{"/tmp", "rw,size=64"}};
  spec.nano_cpus = 1'500'000'000;
  spec.pids_limit = 64;
  spec.network = "none";
  spec.cmd = {"sleep", "infinity"};
  spec.runner = RunnerDelivery::Bind;
  spec.runner_source = "/opt/execmcp/bin/execmcp-runner";
  return spec;
}

bool has(const std::vector<std::string>& args, const std::string& arg) {
  return std::find(args.begin(), args.end(), arg) != args.end();
}

std::vector<std::string> with_prefix(const std::vector<std::string>& args,
                                     const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& a : args)
    if (a.starts_with(prefix)) out.push_back(a.substr(prefix.size()));
  return out;
}

TEST(ExactCpus, RendersTheExactDecimal) {
  EXPECT_EQ(exact_cpus(1'500'000'000), "1.5");
  EXPECT_EQ(exact_cpus(1'000'000'000), "1");
  EXPECT_EQ(exact_cpus(2'000'000'000), "2");
  EXPECT_EQ(exact_cpus(1), "0.000000001");
  EXPECT_EQ(exact_cpus(333'333'333), "0.333333333");
  EXPECT_EQ(exact_cpus(12'050'000'000), "12.05");
  EXPECT_EQ(exact_cpus(100'000'000), "0.1");
}

TEST(MountField, QuotesOnlyWhatCsvNeeds) {
  EXPECT_EQ(mount_field("source=/a/b"), "source=/a/b");
  EXPECT_EQ(mount_field("source=/a,b"), "\"source=/a,b\"");
  EXPECT_EQ(mount_field("source=/a\"b"), "\"source=/a\"\"b\"");
  EXPECT_EQ(mount_field("source=/a\nb"), "\"source=/a\nb\"");
}

TEST(ContainerCreateArgs, EveryFieldHasItsFlag) {
  const auto r = container_create_args(full_spec(), CliFlavor::kDocker);
  ASSERT_TRUE(r.error.empty()) << r.error;
  const auto& a = r.args;
  EXPECT_TRUE(has(a, "--name=execmcp-a-1"));
  EXPECT_TRUE(has(a, "--pull=never"));
  EXPECT_TRUE(has(a, "--label=execmcp.managed=true"));
  EXPECT_TRUE(has(a, "--label=execmcp.agent=a"));
  EXPECT_EQ(with_prefix(a, "--env="), (std::vector<std::string>{"A=1", "B=x=y"}));
  EXPECT_TRUE(has(a, "--user=1000:1000"));
  EXPECT_TRUE(has(a, "--workdir=/work/ws"));
  EXPECT_TRUE(has(a, "--network=none"));
  EXPECT_TRUE(has(a, "--cap-drop=ALL"));
  EXPECT_TRUE(has(a, "--security-opt=no-new-privileges"));
  EXPECT_TRUE(has(a, "--init"));
  EXPECT_TRUE(has(a, "--log-driver=json-file"));
  EXPECT_TRUE(has(a, std::string("--log-opt=max-size=") + kLogMaxSize));
  EXPECT_TRUE(has(a, std::string("--log-opt=max-file=") + kLogMaxFiles));
  EXPECT_TRUE(has(a, "--memory=536870912"));
  EXPECT_TRUE(has(a, "--memory-swap=536870912"));
  EXPECT_TRUE(has(a, "--cpus=1.5"));
  EXPECT_TRUE(has(a, "--storage-opt=size=1073741824"));
  EXPECT_TRUE(has(a, "--read-only"));
  EXPECT_FALSE(has(a, "--read-only-tmpfs=false"));  // Podman's flag
  EXPECT_TRUE(has(a, "--tmpfs=/tmp:rw,size=64"));
  EXPECT_TRUE(has(a, "--pids-limit=64"));
  EXPECT_EQ(
      with_prefix(a, "--mount="),
      (std::vector<std::string>{
          "type=bind,source=/work/ws,target=/work/ws", "type=bind,source=/ctx,target=/ctx,readonly",
          "type=bind,source=/opt/execmcp/bin/execmcp-runner,target=/.execmcp/execmcp-runner,"
          "readonly"}));
  // The image and the command come last, after every flag.
  ASSERT_GE(a.size(), 3u);
  EXPECT_EQ((std::vector<std::string>(a.end() - 3, a.end())),
            (std::vector<std::string>{"execmcp/runtime:latest", "sleep", "infinity"}));
  for (std::size_t i = 0; i + 3 < a.size(); ++i) EXPECT_EQ(a[i].rfind("--", 0), 0u) << a[i];
}

TEST(ContainerCreateArgs, UnsetLimitsGiveNoFlags) {
  ContainerSpec spec = full_spec();
  spec.memory_bytes.reset();
  spec.disk_bytes.reset();
  spec.nano_cpus.reset();
  spec.pids_limit = 0;
  spec.read_only_rootfs = false;
  spec.tmpfs.clear();
  spec.runner = RunnerDelivery::None;
  const auto r = container_create_args(spec, CliFlavor::kDocker);
  ASSERT_TRUE(r.error.empty()) << r.error;
  for (const char* flag : {"--memory", "--memory-swap", "--cpus", "--storage-opt", "--read-only",
                           "--tmpfs", "--pids-limit", "--ulimit"})
    EXPECT_TRUE(with_prefix(r.args, flag).empty()) << flag;
  EXPECT_EQ(with_prefix(r.args, "--mount=").size(), 2u);
}

TEST(ContainerCreateArgs, AnEntrypointIsItsProgramFlagWithItsArgumentsBeforeTheCommand) {
  auto spec = full_spec();
  spec.entrypoint = {"/.execmcp/prog", "--serve", "--"};
  spec.cmd = {"/usr/local/bin/run"};
  const auto r = container_create_args(spec, CliFlavor::kDocker);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(with_prefix(r.args, "--entrypoint="), (std::vector<std::string>{"/.execmcp/prog"}));
  const auto image = std::find(r.args.begin(), r.args.end(), spec.image);
  ASSERT_NE(image, r.args.end());
  EXPECT_EQ(std::vector<std::string>(image + 1, r.args.end()),
            (std::vector<std::string>{"--serve", "--", "/usr/local/bin/run"}));
  spec.entrypoint.clear();
  EXPECT_TRUE(
      with_prefix(container_create_args(spec, CliFlavor::kDocker).args, "--entrypoint=").empty());
}

TEST(ContainerCreateArgs, AnNprocLimitIsTheNprocUlimit) {
  auto spec = full_spec();
  spec.nproc_limit = 64;
  const auto r = container_create_args(spec, CliFlavor::kDocker);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(with_prefix(r.args, "--ulimit="), (std::vector<std::string>{"nproc=64:64"}));
}

TEST(ContainerCreateArgs, TheRuntimeHasItsFlagOnlyWhenConfigured) {
  ContainerSpec spec = full_spec();
  EXPECT_TRUE(
      with_prefix(container_create_args(spec, CliFlavor::kDocker).args, "--runtime").empty());
  spec.runtime = "runsc";
  spec.disk_bytes.reset();  // Podman refuses it
  for (const auto flavor : {CliFlavor::kDocker, CliFlavor::kPodman})
    EXPECT_TRUE(has(container_create_args(spec, flavor).args, "--runtime=runsc"));
}

TEST(ContainerCreateArgs, TheCopiedRunnerGetsAnAnonymousVolume) {
  ContainerSpec spec = full_spec();
  spec.runner = RunnerDelivery::Copy;
  const auto r = container_create_args(spec, CliFlavor::kDocker);
  EXPECT_TRUE(has(r.args, "--mount=type=volume,target=/.execmcp"));
  EXPECT_EQ(with_prefix(r.args, "--mount=type=bind").size(), 2u);
}

TEST(ContainerCreateArgs, MountPathsWithCommasAndQuotesAreCsvQuoted) {
  ContainerSpec spec = full_spec();
  spec.runner = RunnerDelivery::None;
  spec.mounts = {{"/data/a,b", "/mnt/x\"y", true}};
  const auto r = container_create_args(spec, CliFlavor::kDocker);
  EXPECT_EQ(with_prefix(r.args, "--mount="),
            (std::vector<std::string>{"type=bind,\"source=/data/a,b\",\"target=/mnt/x\"\"y\","
                                      "readonly"}));
}

TEST(ContainerCreateArgs, PodmanGetsDockersDefaultsAndNoDiskLimit) {
  ContainerSpec spec = full_spec();
  const auto refused = container_create_args(spec, CliFlavor::kPodman);
  EXPECT_NE(refused.error.find("'disk'"), std::string::npos) << refused.error;
  EXPECT_NE(refused.error.find("Podman has no per-container size limit"), std::string::npos);
  EXPECT_TRUE(refused.args.empty());

  spec.disk_bytes.reset();
  auto r = container_create_args(spec, CliFlavor::kPodman);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(has(r.args, "--read-only"));
  EXPECT_TRUE(has(r.args, "--read-only-tmpfs=false"));
  EXPECT_TRUE(has(r.args, "--pids-limit=64"));
  spec.pids_limit = 0;
  r = container_create_args(spec, CliFlavor::kPodman);
  EXPECT_TRUE(has(r.args, "--pids-limit=-1"));
  spec.read_only_rootfs = false;
  r = container_create_args(spec, CliFlavor::kPodman);
  EXPECT_FALSE(has(r.args, "--read-only-tmpfs=false"));
}

TEST(ContainerCreateArgs, AnImageThatLooksLikeAFlagIsRefused) {
  ContainerSpec spec = full_spec();
  spec.image = "--privileged";
  EXPECT_FALSE(container_create_args(spec, CliFlavor::kDocker).error.empty());
}

// The two renderings of one spec agree: every HostConfig field of the Engine API body has its
// flag with the same value, and so does every field of the body's Config.
// Issue 17: the preinstall container drops every capability but what dpkg and apt need, as the
// Engine API body does.
TEST(InstallCreateArgs, DropEveryCapabilityButThoseOfThePackageManagers) {
  InstallSpec spec;
  spec.name = "execmcp-preinstall-x";
  spec.image = "sha256:base";
  spec.user = "0:0";
  spec.cmd = {"/bin/sh", "-eu", "-c", "true"};
  for (const auto flavor : {CliFlavor::kDocker, CliFlavor::kPodman}) {
    const auto out = install_create_args(spec, flavor);
    ASSERT_EQ(out.error, "");
    EXPECT_EQ(with_prefix(out.args, "--cap-drop="), std::vector<std::string>{"ALL"});
    EXPECT_EQ(with_prefix(out.args, "--cap-add="),
              (std::vector<std::string>{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID",
                                        "CAP_SETGID", "CAP_SETUID"}));
    EXPECT_TRUE(has(out.args, "--security-opt=no-new-privileges"));
    const auto body = install_create_body(spec);
    EXPECT_EQ(nlohmann::json(with_prefix(out.args, "--cap-add=")), body["HostConfig"]["CapAdd"]);
  }
}

TEST(ContainerCreateArgs, SameSpecAsTheCreateBody) {
  for (const auto& [runner, sudo] :
       {std::pair{RunnerDelivery::Bind, false}, std::pair{RunnerDelivery::Copy, false},
        std::pair{RunnerDelivery::Bind, true}}) {
    ContainerSpec spec = full_spec();
    spec.runner = runner;
    spec.sudo = sudo;
    if (sudo) spec.read_only_rootfs = false;
    if (sudo) spec.runtime = "runsc";
    const auto body = container_create_body(spec);
    const auto r = container_create_args(spec, CliFlavor::kDocker);
    ASSERT_TRUE(r.error.empty()) << r.error;
    const auto& a = r.args;
    for (const auto& [key, value] : body["HostConfig"].items()) {
      SCOPED_TRACE(key);
      if (key == "NetworkMode") {
        EXPECT_TRUE(has(a, "--network=" + value.get<std::string>()));
      } else if (key == "Mounts") {
        const auto flags = with_prefix(a, "--mount=");
        ASSERT_EQ(flags.size(), value.size());
        for (std::size_t i = 0; i < value.size(); ++i) {
          const auto& m = value[i];
          std::string want = "type=" + m["Type"].get<std::string>();
          if (m.contains("Source")) want += ",source=" + m["Source"].get<std::string>();
          want += ",target=" + m["Target"].get<std::string>();
          if (m.value("ReadOnly", false)) want += ",readonly";
          EXPECT_EQ(flags[i], want);
        }
      } else if (key == "CapDrop") {
        EXPECT_EQ(value, nlohmann::json::array({"ALL"}));
        EXPECT_TRUE(has(a, "--cap-drop=ALL"));
      } else if (key == "SecurityOpt") {
        for (const auto& opt : value)
          EXPECT_TRUE(has(a, "--security-opt=" + opt.get<std::string>()));
        EXPECT_EQ(with_prefix(a, "--security-opt=").size(), value.size());
      } else if (key == "CapAdd") {
        EXPECT_EQ(with_prefix(a, "--cap-add="), value.get<std::vector<std::string>>());
      } else if (key == "Init") {
        EXPECT_TRUE(value.get<bool>());
        EXPECT_TRUE(has(a, "--init"));
      } else if (key == "RestartPolicy") {
        EXPECT_TRUE(has(a, "--restart=" + value["Name"].get<std::string>()));
      } else if (key == "LogConfig") {
        EXPECT_TRUE(has(a, "--log-driver=" + value["Type"].get<std::string>()));
        for (const auto& [k, v] : value["Config"].items())
          EXPECT_TRUE(has(a, "--log-opt=" + k + "=" + v.get<std::string>())) << k;
      } else if (key == "Memory") {
        EXPECT_TRUE(has(a, "--memory=" + std::to_string(value.get<std::int64_t>())));
      } else if (key == "MemorySwap") {
        EXPECT_TRUE(has(a, "--memory-swap=" + std::to_string(value.get<std::int64_t>())));
      } else if (key == "NanoCpus") {
        EXPECT_EQ(value.get<std::int64_t>(), 1'500'000'000);
        EXPECT_TRUE(has(a, "--cpus=1.5"));
      } else if (key == "StorageOpt") {
        EXPECT_TRUE(has(a, "--storage-opt=size=" + value["size"].get<std::string>()));
      } else if (key == "ReadonlyRootfs") {
        EXPECT_FALSE(sudo);
        EXPECT_EQ(has(a, "--read-only"), value.get<bool>());
      } else if (key == "Tmpfs") {
        for (const auto& [path, options] : value.items())
          EXPECT_TRUE(has(a, "--tmpfs=" + path + ":" + options.get<std::string>()));
        EXPECT_EQ(with_prefix(a, "--tmpfs=").size(), value.size());
      } else if (key == "PidsLimit") {
        EXPECT_TRUE(has(a, "--pids-limit=" + std::to_string(value.get<std::int64_t>())));
      } else if (key == "Runtime") {
        EXPECT_TRUE(has(a, "--runtime=" + value.get<std::string>()));
      } else {
        ADD_FAILURE() << "HostConfig." << key
                      << " has no flag in container_create_args (add it there and here)";
      }
    }
    // A flag without its field: sudo's container has neither no-new-privileges nor --read-only.
    EXPECT_EQ(body["HostConfig"].contains("SecurityOpt"),
              has(a, "--security-opt=no-new-privileges"));
    EXPECT_EQ(body["HostConfig"].contains("CapAdd"), !with_prefix(a, "--cap-add=").empty());
    EXPECT_EQ(body["HostConfig"].contains("ReadonlyRootfs"), has(a, "--read-only"));
    for (const auto& [key, value] : body.items()) {
      SCOPED_TRACE(key);
      if (key == "Image") {
        EXPECT_EQ(a.at(a.size() - spec.cmd.size() - 1), value.get<std::string>());
      } else if (key == "Cmd") {
        EXPECT_EQ(std::vector<std::string>(a.end() - static_cast<long>(value.size()), a.end()),
                  value.get<std::vector<std::string>>());
      } else if (key == "User") {
        EXPECT_TRUE(has(a, "--user=" + value.get<std::string>()));
      } else if (key == "WorkingDir") {
        EXPECT_TRUE(has(a, "--workdir=" + value.get<std::string>()));
      } else if (key == "Env") {
        EXPECT_EQ(with_prefix(a, "--env="), value.get<std::vector<std::string>>());
      } else if (key == "Labels") {
        EXPECT_EQ(with_prefix(a, "--label=").size(), value.size());
        for (const auto& [k, v] : value.items())
          EXPECT_TRUE(has(a, "--label=" + k + "=" + v.get<std::string>()));
      } else if (key == "Tty" || key == "OpenStdin") {
        EXPECT_FALSE(value.get<bool>());  // the CLI's defaults without -t / -i
      } else if (key == "AttachStdout" || key == "AttachStderr") {
        EXPECT_TRUE(value.get<bool>());  // the CLI's defaults without -a
      } else if (key != "HostConfig") {
        ADD_FAILURE() << key << " has no flag in container_create_args (add it there and here)";
      }
    }
  }
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
