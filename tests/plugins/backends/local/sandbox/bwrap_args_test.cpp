// bwrap_args and plan_grant_mounts are pure: the argv for each shape of mount plan, by strings.
#include "bwrap_args.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace sb = execmcp::plugins::local::sandbox;
namespace ll = execmcp::plugins::supervision::landlock;

namespace {

// Index of the sequence `seq` in `argv`, or -1.
long find_seq(const std::vector<std::string>& argv, const std::vector<std::string>& seq) {
  const auto it = std::search(argv.begin(), argv.end(), seq.begin(), seq.end());
  return it == argv.end() ? -1 : it - argv.begin();
}

bool has(const std::vector<std::string>& argv, const std::string& item) {
  return std::find(argv.begin(), argv.end(), item) != argv.end();
}

class BwrapArgsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/execmcp-bwrap-args-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/ws/a/b");
    fs::create_directories(root_ + "/ws/state");
    fs::create_directories(root_ + "/ctx");
    std::ofstream(root_ + "/ws/a/b/p.txt") << "p";
    std::ofstream(root_ + "/ws/config.yaml") << "c";
  }
  void TearDown() override { fs::remove_all(root_); }

  sb::SandboxSpec spec() const {
    sb::SandboxSpec s;
    s.mounts = {{root_ + "/ctx", "/ctx", false}, {root_ + "/ws", "/workspace", true}};
    s.protected_paths = {root_ + "/ws/a/b/p.txt"};
    s.private_paths = {root_ + "/ws/state", root_ + "/ws/config.yaml", "/srv/elsewhere"};
    s.program = "/usr/lib/execmcp/execmcp-runner";
    s.args = {"--execmcp-runner-channel=1"};
    s.env = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/home/agent"}};
    s.work_dir = "/workspace";
    s.uid = 1000;
    s.gid = 1000;
    return s;
  }

  std::string root_;
};

TEST_F(BwrapArgsTest, PlanMountsByDepthWithProtectedParentsAndHiddenPrivatePaths) {
  std::string error;
  const auto plan = sb::plan_grant_mounts(spec(), error);
  ASSERT_TRUE(error.empty()) << error;
  std::vector<std::string> got;
  for (const auto& m : plan) {
    const char* kind =
        m.kind == sb::PlannedMount::Kind::kBind
            ? (m.writable ? "rw " : "ro ")
            : (m.kind == sb::PlannedMount::Kind::kHideDir ? "hide-dir " : "hide-file ");
    got.push_back(kind + m.target);
  }
  const std::vector<std::string> want = {
      "ro /ctx",
      "rw /workspace",
      "rw /workspace/a",            // parents of the protected path bound onto themselves
      "hide-dir /workspace/state",  // private paths inside a mount
      "hide-file /workspace/config.yaml",
      "rw /workspace/a/b",
      "ro /workspace/a/b/p.txt",  // the protected path itself, read-only, last
  };
  EXPECT_EQ(got, want);
  EXPECT_EQ(plan[2].source, root_ + "/ws/a");
}

TEST_F(BwrapArgsTest, PlanRefusesUnsoundSpecs) {
  std::string error;
  auto s = spec();
  s.protected_paths = {"/etc/passwd"};
  EXPECT_TRUE(sb::plan_grant_mounts(s, error).empty());
  EXPECT_NE(error.find("inside no mount"), std::string::npos) << error;
  s = spec();
  s.private_paths = {root_};  // the workspace lies inside a private path
  error.clear();
  EXPECT_TRUE(sb::plan_grant_mounts(s, error).empty());
  EXPECT_NE(error.find("keeps private"), std::string::npos) << error;
  s = spec();
  s.mounts.push_back({"relative/path", "/x", false});
  error.clear();
  EXPECT_TRUE(sb::plan_grant_mounts(s, error).empty());
  EXPECT_NE(error.find("absolute"), std::string::npos) << error;
}

TEST_F(BwrapArgsTest, ArgvHasEveryLayerAndTheSystemReadOnly) {
  const auto s = spec();
  sb::BwrapInputs in;
  in.host.root_links = {{"/bin", "usr/bin"}, {"/lib", "usr/lib"}};
  in.host.root_dirs = {"/lib64"};
  in.host.has_opt = true;
  in.etc_hidden = {{"/etc/shadow", false}, {"/etc/sudoers.d", true}};
  std::string error;
  in.mounts = sb::plan_grant_mounts(s, error);
  in.mount_fds.assign(in.mounts.size(), -1);
  in.mount_fds[1] = 7;  // the workspace by fd
  in.program_fd = 8;
  in.seccomp_fd = 9;
  in.status_fd = 10;
  in.passwd_fd = 11;
  in.group_fd = 12;
  in.program_extra_args = {"--execmcp-landlock-rw=/workspace"};
  const auto argv = sb::bwrap_args(s, in);
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(argv[0], "/usr/bin/bwrap");
  for (const char* flag : {"--unshare-all", "--unshare-user", "--disable-userns",
                           "--die-with-parent", "--new-session", "--clearenv"})
    EXPECT_TRUE(has(argv, flag)) << flag;
  EXPECT_FALSE(has(argv, "--share-net")) << "network none: a namespace of its own";
  EXPECT_GE(find_seq(argv, {"--setenv", "PATH", "/usr/bin:/bin"}), 0);
  EXPECT_GE(find_seq(argv, {"--ro-bind", "/usr", "/usr"}), 0);
  EXPECT_GE(find_seq(argv, {"--symlink", "usr/bin", "/bin"}), 0);
  EXPECT_GE(find_seq(argv, {"--ro-bind", "/lib64", "/lib64"}), 0);
  EXPECT_GE(find_seq(argv, {"--ro-bind", "/opt", "/opt"}), 0);
  const long etc = find_seq(argv, {"--ro-bind", "/etc", "/etc"});
  EXPECT_GE(etc, 0);
  EXPECT_GT(find_seq(argv, {"--ro-bind", "/dev/null", "/etc/shadow"}), etc);
  EXPECT_GT(find_seq(argv, {"--tmpfs", "/etc/sudoers.d", "--remount-ro", "/etc/sudoers.d"}), etc);
  EXPECT_GT(find_seq(argv, {"--ro-bind-data", "11", "/etc/passwd"}), etc);
  EXPECT_GT(find_seq(argv, {"--ro-bind-data", "12", "/etc/group"}), etc);
  EXPECT_GE(find_seq(argv, {"--proc", "/proc", "--dev", "/dev"}), 0);
  const std::string size = std::to_string(s.tmp_bytes);
  EXPECT_GE(find_seq(argv, {"--size", size, "--perms", "1777", "--tmpfs", "/tmp"}), 0);
  EXPECT_GE(find_seq(argv, {"--size", size, "--perms", "0700", "--tmpfs", "/home/agent"}), 0);
  EXPECT_GE(find_seq(argv, {"--symlink", "../tmp", "/var/tmp"}), 0);
  const long ws = find_seq(argv, {"--bind-fd", "7", "/workspace"});
  EXPECT_GE(ws, 0);
  EXPECT_GE(find_seq(argv, {"--ro-bind", root_ + "/ctx", "/ctx"}), 0);
  EXPECT_GT(find_seq(argv, {"--ro-bind", root_ + "/ws/a/b/p.txt", "/workspace/a/b/p.txt"}), ws);
  EXPECT_GT(find_seq(argv, {"--tmpfs", "/workspace/state", "--remount-ro", "/workspace/state"}),
            ws);
  EXPECT_GE(find_seq(argv, {"--ro-bind-fd", "8", "/.execmcp/execmcp-runner"}), 0);
  const long ro_root = find_seq(argv, {"--remount-ro", "/"});
  EXPECT_GT(ro_root, ws) << "the root goes read-only after every mount is made";
  EXPECT_GE(find_seq(argv, {"--add-seccomp-fd", "9"}), 0);
  EXPECT_GE(find_seq(argv, {"--json-status-fd", "10"}), 0);
  EXPECT_GE(find_seq(argv, {"--chdir", "/workspace", "--", "/.execmcp/execmcp-runner",
                            "--execmcp-runner-channel=1", "--execmcp-landlock-rw=/workspace"}),
            0);
  // No host directory outside the grants and the system is named as a source.
  for (const char* never : {"/root", "/home", "/srv", "/var", "/run", "/mnt", "/boot"})
    EXPECT_FALSE(has(argv, never)) << never;
}

TEST_F(BwrapArgsTest, HostNetworkIsAnExplicitShare) {
  auto s = spec();
  s.network = sb::SandboxNetwork::kHost;
  const auto argv = sb::bwrap_args(s, sb::BwrapInputs{});
  EXPECT_GE(find_seq(argv, {"--unshare-all", "--share-net"}), 0);
}

TEST_F(BwrapArgsTest, EgressKeepsItsOwnNetworkAndBindsOnlyTheProxySocket) {
  auto s = spec();
  s.network = sb::SandboxNetwork::kEgress;
  s.egress_socket = "/tmp/execmcp-egress-x/egress.sock";
  const auto argv = sb::bwrap_args(s, sb::BwrapInputs{});
  EXPECT_FALSE(has(argv, "--share-net"));
  EXPECT_GE(find_seq(argv, {"--ro-bind", s.egress_socket, "/run/execmcp/egress.sock"}), 0);
  // Bound before the root is made read-only and before the program runs.
  EXPECT_LT(find_seq(argv, {"--ro-bind", s.egress_socket}), find_seq(argv, {"--remount-ro", "/"}));
}

TEST_F(BwrapArgsTest, ProgramByPathWhenNoFd) {
  const auto argv = sb::bwrap_args(spec(), sb::BwrapInputs{});
  EXPECT_GE(
      find_seq(argv, {"--ro-bind", "/usr/lib/execmcp/execmcp-runner", "/.execmcp/execmcp-runner"}),
      0);
  EXPECT_FALSE(has(argv, "--add-seccomp-fd"));
}

TEST_F(BwrapArgsTest, LandlockRulesFollowTheMounts) {
  sb::HostLayout host;
  host.root_dirs = {"/lib64"};
  host.has_opt = true;
  auto s = spec();
  s.landlock_max_abi = 2;
  const ll::Rules rules = sb::landlock_rules_for(s, host);
  EXPECT_EQ(rules.max_abi, 2);
  EXPECT_EQ(rules.list, std::vector<std::string>{"/"});
  EXPECT_EQ(rules.rw,
            (std::vector<std::string>{"/tmp", "/home/agent", "/dev", "/proc", "/workspace"}));
  EXPECT_EQ(rules.ro, (std::vector<std::string>{"/usr", "/etc", "/lib64", "/opt", "/ctx",
                                                "/.execmcp/execmcp-runner"}));
  const auto args = ll::to_args(rules);
  EXPECT_TRUE(has(args, "--execmcp-landlock-rw=/workspace"));
  EXPECT_TRUE(has(args, "--execmcp-landlock-ro=/ctx"));
  EXPECT_TRUE(has(args, "--execmcp-landlock-list=/"));
  EXPECT_TRUE(has(args, "--execmcp-landlock-max-abi=2"));
}

}  // namespace
