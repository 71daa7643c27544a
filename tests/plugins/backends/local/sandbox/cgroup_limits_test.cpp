// The local sandbox's cgroup of its own (plugins/backends/local/sandbox/cgroup_limits.hpp): the
// parsers on text from cgroup v1, v2 and hybrid machines, and on this kernel (where the server can
// make cgroups: root, a writable cgroup mount) a cgroup made, its limits written, a forked child
// that joins it by writing "0" held to them (an allocation past the memory limit OOM-killed and
// counted, a fork loop stopped at pids.max), and every directory gone after remove(); empty
// leftovers of a dead server's naming removed, a live one's kept. Skipped with the reason where
// cgroups cannot be made here; under EXECMCP_REQUIRE_SANDBOX=1 a machine that should be able to
// (root, a writable /sys/fs/cgroup) fails instead.
#include "cgroup_limits.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;
using namespace execmcp::plugins::local::sandbox;
using namespace execmcp::plugins::local::sandbox::cgroup_detail;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Whether this machine should be able to: root and a writable cgroup mount.
bool machine_can() {
  struct statvfs st {};
  return ::geteuid() == 0 && ::statvfs("/sys/fs/cgroup", &st) == 0 && (st.f_flag & ST_RDONLY) == 0;
}

#define EXECMCP_CGROUPS_OR_SKIP()                                                               \
  do {                                                                                          \
    const auto execmcp_available = probe_cgroups();                                             \
    std::string execmcp_why;                                                                    \
    for (auto c : {CgroupController::kMemory, CgroupController::kPids, CgroupController::kCpu}) \
      if (!execmcp_available.problem(c).empty())                                                \
        execmcp_why +=                                                                          \
            std::string(controller_name(c)) + ": " + execmcp_available.problem(c) + "; ";       \
    if (!execmcp_why.empty()) {                                                                 \
      const char* execmcp_require = std::getenv("EXECMCP_REQUIRE_SANDBOX");                     \
      if (execmcp_require != nullptr && std::string(execmcp_require) == "1" && machine_can())   \
        FAIL() << "this machine should give cgroups: " << execmcp_why;                          \
      GTEST_SKIP() << execmcp_why;                                                              \
    }                                                                                           \
  } while (0)

CgroupLimits pids_only(std::int64_t pids) {
  CgroupLimits limits;
  limits.pids = pids;
  return limits;
}

CgroupLimits memory_only(std::int64_t bytes) {
  CgroupLimits limits;
  limits.memory_bytes = bytes;
  return limits;
}

std::string unique_name(const std::string& what) {
  return "execmcp-test-" + what + "-" + std::to_string(::getpid());
}

// A child that joins `cgroup` and runs `body`, whose return value is its exit code.
template <typename Body>
int in_child(const SandboxCgroup& cgroup, Body body, bool* killed = nullptr) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int fd : cgroup.procs_fds())
      if (::write(fd, "0", 1) != 1) ::_exit(90);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (killed != nullptr) *killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(CgroupParsing, MountsOfAHybridMachine) {
  const std::string mountinfo =
      "25 1 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
      "30 25 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "32 30 0:28 / /sys/fs/cgroup/memory rw,relatime shared:5 - cgroup cgroup rw,memory\n"
      "33 30 0:29 / /sys/fs/cgroup/pids ro,relatime - cgroup cgroup rw,pids\n"
      "34 30 0:30 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n"
      "35 30 0:31 /docker/x /mnt/my\\040cg rw - cgroup cgroup rw,cpu,cpuacct\n";
  const auto mounts = parse_cgroup_mounts(mountinfo);
  ASSERT_EQ(mounts.size(), 5u);
  EXPECT_EQ(mounts[0].mount_point, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(mounts[0].options, std::vector<std::string>{"cpu"});
  EXPECT_FALSE(mounts[1].v2);
  EXPECT_TRUE(mounts[2].read_only);
  EXPECT_TRUE(mounts[3].v2);
  EXPECT_EQ(mounts[4].mount_point, "/mnt/my cg");
  EXPECT_EQ(mounts[4].root, "/docker/x");
  EXPECT_EQ(mounts[4].options, (std::vector<std::string>{"cpu", "cpuacct"}));

  const auto self =
      parse_proc_cgroup("9:name=systemd:/\n8:pids:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n");
  ASSERT_EQ(self.size(), 5u);
  EXPECT_TRUE(self[4].v2);
  EXPECT_EQ(self[2].path, "/process_api/abc");

  const auto memory = place_of("memory", mounts, self, "hugetlb\n");
  ASSERT_TRUE(memory);
  EXPECT_FALSE(memory->v2);
  EXPECT_EQ(memory->dir, "/sys/fs/cgroup/memory/process_api/abc");
  const auto pids = place_of("pids", mounts, self, "");
  ASSERT_TRUE(pids);
  EXPECT_EQ(pids->dir, "/sys/fs/cgroup/pids");
  EXPECT_TRUE(pids->read_only);
  // A controller v1 does not have and v2 does not list: nowhere.
  EXPECT_FALSE(place_of("io", mounts, self, "hugetlb\n"));
}

TEST(CgroupParsing, AUnifiedMachineAndAPathOutsideTheMount) {
  const auto mounts = parse_cgroup_mounts(
      "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 "
      "rw,nsdelegate,memory_recursiveprot\n");
  const auto self = parse_proc_cgroup("0::/system.slice/execmcp.service\n");
  const auto memory = place_of("memory", mounts, self, "cpuset cpu io memory pids\n");
  ASSERT_TRUE(memory);
  EXPECT_TRUE(memory->v2);
  EXPECT_EQ(memory->dir, "/sys/fs/cgroup/system.slice/execmcp.service");
  EXPECT_FALSE(place_of("hugetlb", mounts, self, "cpuset cpu io memory pids\n"));
  // A mount of another part of the tree does not hold the process's cgroup.
  const auto other = parse_cgroup_mounts("1 1 0:1 /elsewhere /cg rw - cgroup2 cgroup2 rw\n");
  EXPECT_FALSE(place_of("memory", other, self, "memory"));
}

TEST(CgroupParsing, OomKillCountsAndNames) {
  EXPECT_EQ(parse_oom_kill("low 0\nhigh 0\nmax 4\noom 2\noom_kill 3\noom_group_kill 0\n"), 3);
  EXPECT_EQ(parse_oom_kill("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n"), 0);
  EXPECT_FALSE(parse_oom_kill("oom_kill_disable 0\nunder_oom 0\n"));
  EXPECT_TRUE(valid_cgroup_name("execmcp-a.b_c-1234-ff-u-bob_d1-3"));
  for (const char* bad : {"", ".", "..", "a/b", "a b", "a\nb"})
    EXPECT_FALSE(valid_cgroup_name(bad)) << bad;
  EXPECT_FALSE(valid_cgroup_name(std::string(241, 'a')));
  std::string error;
  EXPECT_EQ(SandboxCgroup::create("../escape", pids_only(16), error), nullptr);
  EXPECT_NE(error.find("not a cgroup name of ours"), std::string::npos) << error;
}

TEST(CgroupLimitsOnThisKernel, MadeWithItsLimitsJoinedAndRemoved) {
  EXECMCP_CGROUPS_OR_SKIP();
  CgroupLimits limits;
  limits.memory_bytes = std::int64_t{48} << 20;
  limits.pids = 24;
  limits.cpus = 0.5;
  std::string error;
  auto cgroup = SandboxCgroup::create(unique_name("made"), limits, error);
  ASSERT_NE(cgroup, nullptr) << error;
  ASSERT_FALSE(cgroup->paths().empty());
  EXPECT_EQ(cgroup->procs_fds().size(), cgroup->paths().size());
  std::string memory, pids, cpu;
  for (const auto& dir : cgroup->paths()) {
    EXPECT_TRUE(fs::is_directory(dir)) << dir;
    if (fs::exists(dir + "/memory.max")) memory = read_text(dir + "/memory.max");
    if (fs::exists(dir + "/memory.limit_in_bytes"))
      memory = read_text(dir + "/memory.limit_in_bytes");
    if (fs::exists(dir + "/pids.max")) pids = read_text(dir + "/pids.max");
    if (fs::exists(dir + "/cpu.max")) cpu = read_text(dir + "/cpu.max");
    if (fs::exists(dir + "/cpu.cfs_quota_us")) cpu = read_text(dir + "/cpu.cfs_quota_us");
  }
  EXPECT_EQ(memory, std::to_string(48 << 20) + "\n");
  EXPECT_EQ(pids, "24\n");
  EXPECT_TRUE(cpu == "50000\n" || cpu == "50000 100000\n") << cpu;
  EXPECT_EQ(cgroup->oom_kills(), 0);

  // A child that joins is in every directory, as /proc/<pid>/cgroup says.
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    for (int fd : cgroup->procs_fds())
      if (::write(fd, "0", 1) != 1) ::_exit(90);
    char c;
    ::close(pipe_fds[1]);
    [[maybe_unused]] auto n = ::read(pipe_fds[0], &c, 1);  // until the parent has looked
    ::_exit(0);
  }
  ::close(pipe_fds[0]);
  std::string seen;
  for (int i = 0; i < 200; ++i) {
    seen = read_text("/proc/" + std::to_string(child) + "/cgroup");
    std::size_t in = 0;
    for (auto at = seen.find(unique_name("made")); at != std::string::npos;
         at = seen.find(unique_name("made"), at + 1))
      ++in;
    if (in == cgroup->paths().size()) break;
    ::usleep(5000);
  }
  for (const auto& dir : cgroup->paths())
    EXPECT_NE(read_text(dir + "/cgroup.procs").find(std::to_string(child)), std::string::npos)
        << dir << "\n"
        << seen;
  ::close(pipe_fds[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(cgroup->remove(), "");
  for (const auto& dir : cgroup->paths()) EXPECT_FALSE(fs::exists(dir)) << dir;
  EXPECT_EQ(cgroup->remove(), "");  // idempotent
  // The name can be made again once it is gone.
  auto again = SandboxCgroup::create(unique_name("made"), limits, error);
  EXPECT_NE(again, nullptr) << error;
}

TEST(CgroupLimitsOnThisKernel, AnAllocationPastTheMemoryLimitIsKilledAndCounted) {
  EXECMCP_CGROUPS_OR_SKIP();
  std::string error;
  auto cgroup =
      SandboxCgroup::create(unique_name("oom"), memory_only(std::int64_t{32} << 20), error);
  ASSERT_NE(cgroup, nullptr) << error;
  bool killed = false;
  in_child(
      *cgroup,
      [] {
        // Touch every page: 128 MiB against a 32 MiB limit.
        const std::size_t size = std::size_t{128} << 20;
        char* block = static_cast<char*>(std::malloc(size));
        for (std::size_t i = 0; block != nullptr && i < size; i += 4096) block[i] = 1;
        return 0;
      },
      &killed);
  EXPECT_TRUE(killed);
  EXPECT_GE(cgroup->oom_kills().value_or(0), 1);
  EXPECT_EQ(cgroup->remove(), "");
}

TEST(CgroupLimitsOnThisKernel, AForkLoopStopsAtPidsMax) {
  EXECMCP_CGROUPS_OR_SKIP();
  std::string error;
  auto cgroup = SandboxCgroup::create(unique_name("pids"), pids_only(16), error);
  ASSERT_NE(cgroup, nullptr) << error;
  const int forked = in_child(*cgroup, [] {
    int n = 0;
    for (; n < 100; ++n) {
      const pid_t pid = ::fork();
      if (pid < 0) return errno == EAGAIN ? n : 200;
      if (pid == 0) {
        ::pause();
        ::_exit(0);
      }
    }
    return n;
  });
  // The children of the loop are in the cgroup: remove() waits for them, so end them first.
  for (const auto& dir : cgroup->paths()) {
    std::ifstream procs(dir + "/cgroup.procs");
    for (pid_t pid; procs >> pid;) ::kill(pid, SIGKILL);
  }
  EXPECT_GE(forked, 10);
  EXPECT_LT(forked, 16);
  EXPECT_EQ(cgroup->remove(), "");
}

TEST(CgroupLimitsOnThisKernel, EmptyLeftoversOfADeadServerGoAndALiveOnesStay) {
  EXECMCP_CGROUPS_OR_SKIP();
  std::string error;
  auto probe = SandboxCgroup::create(unique_name("where"), pids_only(16), error);
  ASSERT_NE(probe, nullptr) << error;
  const std::string parent = fs::path(probe->paths().front()).parent_path().string();
  probe.reset();
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string prefix = "execmcp-lo" + std::to_string(::getpid()) + "-";
  const std::string gone = parent + "/" + prefix + std::to_string(dead) + "-x";
  const std::string kept = parent + "/" + prefix + "1-x";  // pid 1 lives
  ASSERT_EQ(::mkdir(gone.c_str(), 0755), 0) << std::strerror(errno);
  ASSERT_EQ(::mkdir(kept.c_str(), 0755), 0) << std::strerror(errno);
  EXPECT_EQ(remove_leftover_cgroups(prefix), 0);  // made just now: kept
  EXPECT_EQ(remove_leftover_cgroups(prefix, std::chrono::seconds(0)), 1);
  EXPECT_FALSE(fs::exists(gone));
  EXPECT_TRUE(fs::exists(kept));
  ::rmdir(kept.c_str());
}

}  // namespace
