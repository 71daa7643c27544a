// Tests for the container spec: name sanitizing, labels, mounts, limits and the create body.
#include "docker_common/lifecycle/container_spec.hpp"

#include "docker_common/engine/tar_archive.hpp"
#include "docker_common/lifecycle/runtime_check.hpp"
#include "execmcp/common/base64.hpp"

#include <gtest/gtest.h>

namespace execmcp::plugins::docker_common {
namespace {

sdk::BackendInit sample_init() {
  sdk::BackendInit init;
  init.agent_id = "agent_a";
  init.instance_id = "i42";
  init.cwd = "/work/ws/a";
  init.paths = {{"/work/ws/a", true}, {"/work/ctx/ro", false}, {"/work/ctx/rw", true}};
  init.tools_dir = "/opt/execmcp/tools";
  init.skills_dir = "/opt/execmcp/skills";
  init.temp_workspace = "/work/tmp_ws";
  return init;
}

// Issue 28, finding 1: names were made to fit by replacing characters and cutting at 128, so two
// agents or two users could share one. Now a name is what it says, or refused.
TEST(ContainerName, IsNeverChangedNorCutButRefused) {
  EXPECT_EQ(container_name("agent_a", "i42"), "execmcp-agent_a-i42");
  EXPECT_THROW((void)container_name("my agent/ü:1", "x"), std::invalid_argument);
  EXPECT_THROW((void)container_name("a", "x@y"), std::invalid_argument);
  const std::string fits(kMaxEngineName - kLongestNameSuffix.size() - 10, 'b');
  EXPECT_EQ(container_name("a", fits), "execmcp-a-" + fits);
  try {
    (void)container_name("a", fits + "c");
    FAIL() << "a name one character too long was not refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("shorten the agent id or the instance id"),
              std::string::npos)
        << e.what();
  }
}

TEST(ContainerMounts, SamePathsAsTheHostWithTheRightModes) {
  auto mounts = container_mounts(sample_init(), {{"/data", "/mnt/data", false}});
  ASSERT_EQ(mounts.size(), 8u);
  auto find = [&](const std::string& target) -> const MountSpec* {
    for (const auto& m : mounts)
      if (m.target == target) return &m;
    return nullptr;
  };
  ASSERT_TRUE(find("/work/ws/a"));
  EXPECT_FALSE(find("/work/ws/a")->read_only);
  EXPECT_EQ(find("/work/ws/a")->source, "/work/ws/a");
  EXPECT_TRUE(find("/work/ctx/ro")->read_only);
  EXPECT_FALSE(find("/work/ctx/rw")->read_only);
  EXPECT_TRUE(find("/work/tmp_ws")->read_only);
  EXPECT_EQ(find("/tools")->source, "/opt/execmcp/tools");
  EXPECT_TRUE(find("/tools")->read_only);
  EXPECT_EQ(find("/skills")->source, "/opt/execmcp/skills");
  // Also where skill loaders look in the image user's home (MassGen's .agent/skills).
  ASSERT_TRUE(find("/home/execmcp/.agent/skills"));
  EXPECT_EQ(find("/home/execmcp/.agent/skills")->source, "/opt/execmcp/skills");
  EXPECT_TRUE(find("/home/execmcp/.agent/skills")->read_only);
  EXPECT_FALSE(find("/mnt/data")->read_only);
}

TEST(ContainerMounts, SkipsUnsetDirsAndDuplicateTargets) {
  sdk::BackendInit init;
  init.cwd = "/w";
  init.paths = {{"/w", true}, {"/w", false}};
  auto mounts = container_mounts(init, {{"/other", "/w", true}});
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_FALSE(mounts[0].read_only);
}

// The config loader's default tools dir is <cwd>/tools: inside the workspace, so a mount of its
// own would take its source from a directory the agent can change. It is used in place instead.
TEST(ContainerMounts, NothingInsideAGrantGetsAMountOfItsOwnUnlessItsAccessDiffers) {
  sdk::BackendInit init;
  init.cwd = "/w";
  init.paths = {
      {"/w", true}, {"/w/out", true}, {"/w/ref", false}, {"/ro", false}, {"/ro/sub", false}};
  init.tools_dir = "/w/tools";
  init.skills_dir = "/w/skills";
  auto mounts = container_mounts(init, {});
  std::vector<std::string> targets;
  for (const auto& m : mounts) targets.push_back(m.target);
  // /w/ref keeps its mount (read-only inside read-write): check_mount_source() refuses it.
  EXPECT_EQ(targets, (std::vector<std::string>{"/w", "/w/ref", "/ro"}));
  EXPECT_EQ(container_tools_dir(init), "/w/tools");
  init.tools_dir = "/opt/tools";
  EXPECT_EQ(container_tools_dir(init), "/tools");
  const auto roots = writable_roots(init, {{"/notes", "/notes", false}, {"/r", "/r", true}});
  ASSERT_EQ(roots.size(), 3u);
  EXPECT_EQ(roots[2].path, "/notes");
}

// MassGen's protected_paths: a read-only bind over the writable grant, recognised as such (its
// source is checked against the other agents' paths only); a read-only grant's are not needed.
TEST(ContainerMounts, ProtectedPathsOfAWritableGrantGetReadOnlyMounts) {
  sdk::BackendInit init;
  init.cwd = "/w";
  init.paths = {{"/w", true, {"/w/.git", "/w/cfg.json"}}, {"/ro", false, {"/ro/x"}}};
  auto mounts = container_mounts(init, {});
  std::vector<std::string> targets;
  for (const auto& m : mounts) {
    targets.push_back(m.target);
    EXPECT_EQ(is_protected_mount(init, m), m.target != "/w" && m.target != "/ro") << m.target;
  }
  EXPECT_EQ(targets, (std::vector<std::string>{"/w", "/ro", "/w/.git", "/w/cfg.json"}));
  EXPECT_TRUE(mounts[2].read_only);
  EXPECT_EQ(mounts[2].source, "/w/.git");
  EXPECT_FALSE(is_protected_mount(init, {"/w/.git", "/w/.git", false}));
}

// Issue 17: each directory on the way from the writable grant to a protected path is bound onto
// itself (a mount point cannot be renamed), none inside a protected path (that would make it
// writable), each once.
TEST(ContainerMounts, DirectoriesOnTheWayToAProtectedPathAreMountPoints) {
  sdk::BackendInit init;
  init.cwd = "/w";
  init.paths = {{"/w", true},
                {"/c", true, {"/c/a/b/secret.txt", "/c/a/other.txt", "/c/keep", "/c/keep/d/x"}},
                {"/ro", false, {"/ro/a/b"}}};
  EXPECT_EQ(protected_path_parents(init), (std::vector<std::string>{"/c/a", "/c/a/b"}));
  std::vector<std::string> targets;
  for (const auto& m : container_mounts(init, {})) {
    targets.push_back(m.target + (m.read_only ? ":ro" : ":rw"));
    EXPECT_EQ(is_protected_parent_mount(init, m), m.target == "/c/a" || m.target == "/c/a/b")
        << m.target;
  }
  EXPECT_EQ(targets, (std::vector<std::string>{"/w:rw", "/c:rw", "/ro:ro", "/c/a/b/secret.txt:ro",
                                               "/c/a/other.txt:ro", "/c/keep:ro", "/c/keep/d/x:ro",
                                               "/c/a:rw", "/c/a/b:rw"}));
  EXPECT_FALSE(is_protected_parent_mount(init, {"/c/a", "/c/a", true}));
  EXPECT_FALSE(is_protected_parent_mount(init, {"/c", "/c", false}));
}

TEST(ContainerLabels, MarkOwnershipForOrphanRemoval) {
  auto labels = container_labels("a", "i", 1234, "hostx");
  EXPECT_EQ(labels.at(kLabelManaged), "true");
  EXPECT_EQ(labels.at(kLabelAgent), "a");
  EXPECT_EQ(labels.at(kLabelInstance), "i");
  EXPECT_EQ(labels.at(kLabelOwnerPid), "1234");
  EXPECT_EQ(labels.at(kLabelOwnerHost), "hostx");
}

TEST(ContainerCreateBody, CarriesLimitsHardeningAndMounts) {
  DockerSettings s;
  s.memory_bytes = 64LL * 1024 * 1024;
  s.cpus = 1.5;
  s.pids_limit = 64;
  s.env = {{"FOO", "bar"}};
  auto spec = make_container_spec(sample_init(), s, "1000:1000", 77, "h");
  const auto body = container_create_body(spec);
  EXPECT_EQ(body["Image"], "execmcp/runtime:latest");
  EXPECT_EQ(body["User"], "1000:1000");
  EXPECT_EQ(body["WorkingDir"], "/work/ws/a");
  EXPECT_EQ(body["Cmd"], nlohmann::json::array({"sleep", "infinity"}));
  EXPECT_EQ(body["Env"], nlohmann::json::array({"FOO=bar"}));
  EXPECT_EQ(body["Labels"]["execmcp.owner.pid"], "77");
  const auto& host = body["HostConfig"];
  EXPECT_EQ(host["NetworkMode"], "none");
  EXPECT_EQ(host["Memory"], 64LL * 1024 * 1024);
  EXPECT_EQ(host["MemorySwap"], 64LL * 1024 * 1024);
  EXPECT_EQ(host["NanoCpus"], 1500000000LL);
  EXPECT_EQ(host["PidsLimit"], 64);
  EXPECT_EQ(host["CapDrop"], nlohmann::json::array({"ALL"}));
  EXPECT_EQ(host["SecurityOpt"], nlohmann::json::array({"no-new-privileges"}));
  EXPECT_EQ(host["Init"], true);
  EXPECT_EQ(host["LogConfig"]["Type"], "json-file");
  EXPECT_EQ(host["LogConfig"]["Config"]["max-size"], kLogMaxSize);
  EXPECT_EQ(host["LogConfig"]["Config"]["max-file"], kLogMaxFiles);
  EXPECT_FALSE(host.contains("StorageOpt"));
  EXPECT_EQ(host["ReadonlyRootfs"], true);
  ASSERT_EQ(host["Tmpfs"].size(), kScratchDirs.size());
  EXPECT_NE(host["Tmpfs"]["/tmp"].get<std::string>().find(
                "size=" + std::to_string(DockerSettings::kDefaultTmpfsBytes)),
            std::string::npos);
  ASSERT_EQ(host["Mounts"].size(), 7u);  // the skills dir twice
  EXPECT_EQ(host["Mounts"][0]["Type"], "bind");
  EXPECT_EQ(host["Mounts"][0]["Source"], "/work/ws/a");
  EXPECT_EQ(host["Mounts"][0]["Target"], "/work/ws/a");
  EXPECT_EQ(host["Mounts"][0]["ReadOnly"], false);
  EXPECT_EQ(host["Mounts"][1]["ReadOnly"], true);
}

TEST(ContainerCreateBody, TheRuntimeIsSetOnlyWhenConfigured) {
  DockerSettings s;
  EXPECT_FALSE(container_create_body(
                   make_container_spec(sample_init(), s, "1000:1000", 77, "h"))["HostConfig"]
                   .contains("Runtime"));
  s.runtime = "runsc";
  const auto body =
      container_create_body(make_container_spec(sample_init(), s, "1000:1000", 77, "h"));
  EXPECT_EQ(body["HostConfig"]["Runtime"], "runsc");
}

TEST(ContainerCreateBody, WritableRootfsHasNoTmpfs) {
  DockerSettings s;
  s.writable_rootfs = true;
  const auto host =
      container_create_body(make_container_spec(sample_init(), s, "1", 1, "h"))["HostConfig"];
  EXPECT_FALSE(host.contains("ReadonlyRootfs"));
  EXPECT_FALSE(host.contains("Tmpfs"));
}

TEST(ContainerCreateBody, SudoGetsItsImageItsCapabilitiesAndAWritableImage) {
  DockerSettings s;
  s.sudo = true;
  const auto spec = make_container_spec(sample_init(), s, "1000:1000", 1, "h");
  const auto body = container_create_body(spec);
  EXPECT_EQ(body["Image"], "execmcp/runtime-sudo:latest");
  const auto& host = body["HostConfig"];
  EXPECT_EQ(host["CapDrop"], nlohmann::json::array({"ALL"}));
  EXPECT_EQ(host["CapAdd"],
            nlohmann::json::array({"CAP_AUDIT_WRITE", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER",
                                   "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID"}));
  EXPECT_FALSE(host.contains("SecurityOpt"));  // no no-new-privileges: sudo is setuid
  EXPECT_FALSE(host.contains("ReadonlyRootfs"));
  EXPECT_EQ(host["Tmpfs"].size(), kScratchDirs.size());  // the scratch dirs stay tmpfs
  EXPECT_EQ(body["User"], "1000:1000");
  EXPECT_EQ(host["NetworkMode"], "none");
  EXPECT_EQ(host["Init"], true);

  // A custom image is used as it is; without sudo nothing changes.
  s.image = "my/image:1";
  EXPECT_EQ(container_create_body(make_container_spec(sample_init(), s, "1", 1, "h"))["Image"],
            "my/image:1");
  s = DockerSettings{};
  const auto plain =
      container_create_body(make_container_spec(sample_init(), s, "1", 1, "h"))["HostConfig"];
  EXPECT_FALSE(plain.contains("CapAdd"));
  EXPECT_EQ(plain["SecurityOpt"], nlohmann::json::array({"no-new-privileges"}));
  EXPECT_EQ(plain["ReadonlyRootfs"], true);
}

TEST(ContainerCreateBody, AnEntrypointIsSentOnlyWhenSet) {
  DockerSettings s;
  auto spec = make_container_spec(sample_init(), s, "1", 1, "h");
  EXPECT_FALSE(container_create_body(spec).contains("Entrypoint"));
  spec.entrypoint = {"/.execmcp/prog", "--serve"};
  EXPECT_EQ(container_create_body(spec)["Entrypoint"],
            nlohmann::json::array({"/.execmcp/prog", "--serve"}));
}

TEST(ContainerCreateBody, DiskBoundIsAStorageOptSize) {
  DockerSettings s;
  s.disk_bytes = 1LL << 30;
  const auto host =
      container_create_body(make_container_spec(sample_init(), s, "1", 1, "h"))["HostConfig"];
  EXPECT_EQ(host["StorageOpt"]["size"], "1073741824");
}

TEST(ContainerCreateBody, NoLimitsMeansNoLimitKeys) {
  DockerSettings s;
  s.pids_limit = 0;
  s.memory_bytes.reset();
  const auto host =
      container_create_body(make_container_spec(sample_init(), s, "1", 1, "h"))["HostConfig"];
  EXPECT_FALSE(host.contains("Memory"));
  EXPECT_FALSE(host.contains("NanoCpus"));
  EXPECT_FALSE(host.contains("PidsLimit"));
  EXPECT_FALSE(host.contains("Ulimits"));  // RLIMIT_NPROC only under gVisor (nproc_limit)
}

TEST(ContainerSpec, UnderGvisorThePidsLimitCountsTheSandboxAndTheAgentsIsItsNproc) {
  DockerSettings s;
  s.pids_limit = 64;
  const auto runc = make_container_spec(sample_init(), s, "1000:1000", 1, "h");
  EXPECT_EQ(runc.pids_limit, 64);
  EXPECT_EQ(runc.nproc_limit, 0);  // Linux counts RLIMIT_NPROC per user, host-wide
  const auto gvisor =
      make_container_spec(sample_init(), s, "1000:1000", 1, "h", RuntimeProfile::gvisor());
  EXPECT_EQ(gvisor.pids_limit, kGvisorSandboxTasks + 64 * kGvisorTasksPerProcess);
  EXPECT_EQ(gvisor.nproc_limit, 64);
  s.pids_limit = 0;  // no limit stays no limit
  const auto unlimited =
      make_container_spec(sample_init(), s, "1000:1000", 1, "h", RuntimeProfile::gvisor());
  EXPECT_EQ(unlimited.pids_limit, 0);
  EXPECT_EQ(unlimited.nproc_limit, 0);
}

TEST(ContainerCreateBody, AnNprocLimitIsTheContainersNprocUlimit) {
  auto spec = make_container_spec(sample_init(), DockerSettings{}, "1", 1, "h");
  spec.nproc_limit = 64;
  EXPECT_EQ(container_create_body(spec)["HostConfig"]["Ulimits"],
            nlohmann::json::parse(R"([{"Name": "nproc", "Soft": 64, "Hard": 64}])"));
}

}  // namespace
}  // namespace execmcp::plugins::docker_common

namespace execmcp::plugins::docker_common {
namespace {

TEST(Base64, EncodesEveryLengthWithPadding) {
  EXPECT_EQ(common::base64_encode(""), "");
  EXPECT_EQ(common::base64_encode("f"), "Zg==");
  EXPECT_EQ(common::base64_encode("fo"), "Zm8=");
  EXPECT_EQ(common::base64_encode("foo"), "Zm9v");
  EXPECT_EQ(common::base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(common::base64_encode(std::string("\xff\x00\x80", 3)), "/wCA");
}

TEST(SingleFileTar, HeaderFieldsChecksumAndPadding) {
  const std::string tar = single_file_tar("execmcp-runner", "abc", 0555);
  ASSERT_EQ(tar.size(), 512u + 512u + 512u + 1024u);
  // First the directory it lands in, root's with 0755, so the container user cannot change it.
  EXPECT_EQ(tar.substr(0, 3), std::string("./\0", 3));
  EXPECT_EQ(tar.substr(100, 7), "0000755");
  EXPECT_EQ(tar.substr(108, 7), "0000000");  // uid
  EXPECT_EQ(tar.substr(116, 7), "0000000");  // gid
  EXPECT_EQ(tar[156], '5');
  const std::string file = tar.substr(512);
  EXPECT_EQ(file.substr(0, 14), "execmcp-runner");
  EXPECT_EQ(file.substr(100, 7), "0000555");
  EXPECT_EQ(file.substr(108, 7), "0000000");
  EXPECT_EQ(file.substr(124, 11), "00000000003");
  EXPECT_EQ(file[156], '0');
  EXPECT_EQ(file.substr(257, 5), "ustar");
  // Each checksum: the header's bytes summed with the checksum field as spaces.
  for (const std::size_t at : {std::size_t{0}, std::size_t{512}}) {
    std::string header = tar.substr(at, 512);
    const unsigned long stored = std::stoul(header.substr(148, 6), nullptr, 8);
    header.replace(148, 8, 8, ' ');
    unsigned long sum = 0;
    for (unsigned char c : header) sum += c;
    EXPECT_EQ(stored, sum) << at;
  }
  EXPECT_EQ(file.substr(512, 3), "abc");
  EXPECT_EQ(tar.find_first_not_of('\0', 1024 + 515), std::string::npos);
  EXPECT_THROW(single_file_tar("a/b", "", 0644), std::invalid_argument);
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
