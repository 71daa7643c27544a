// What the local sandbox's limits come to (plugins/backends/local/sandbox_limits.hpp), from the
// settings and what a machine gives, without a kernel: a limit given in the config that cannot be
// applied is an error naming it, the controller and the reason; defaults that cannot be are left
// out with a warning that says which and why; the summary check-config and the start log print;
// the memory notice in the Docker backends' words; names that differ by user.
#include "sandbox_limits.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using execmcp::plugins::local::LimitsPlan;
using execmcp::plugins::local::memory_limit_notice;
using execmcp::plugins::local::plan_limits;
using execmcp::plugins::local::sandbox_cgroup_name;
using execmcp::plugins::local::SandboxSettings;
using execmcp::plugins::local::sandbox::CgroupAvailability;
using execmcp::plugins::local::sandbox::CgroupController;

constexpr const char* kNotRoot =
    "the server (uid 1000) may not make cgroups in /sys/fs/cgroup/memory: run it as root";

CgroupAvailability everything() {
  CgroupAvailability a;
  a.version = "v2";
  return a;
}

CgroupAvailability nothing() {
  CgroupAvailability a;
  for (auto c : {CgroupController::kMemory, CgroupController::kPids, CgroupController::kCpu})
    a.problems[c] = kNotRoot;
  return a;
}

TEST(SandboxLimits, TheDefaultsWhereTheMachineGivesThem) {
  const LimitsPlan plan = plan_limits(SandboxSettings{}, everything());
  EXPECT_EQ(plan.error, "");
  EXPECT_EQ(plan.warning, "");
  EXPECT_FALSE(plan.required);
  EXPECT_EQ(plan.limits.memory_bytes, std::int64_t{2} << 30);
  EXPECT_EQ(plan.limits.pids, 512);
  EXPECT_FALSE(plan.limits.cpus);
  EXPECT_TRUE(plan.limits.cpu_share);
  EXPECT_EQ(plan.summary,
            "memory 2048 MiB, pids 512, CPU shared with other sandboxes (no quota) (a cgroup v2 "
            "of its own per sandbox)");
}

TEST(SandboxLimits, DefaultsTheMachineCannotGiveAreLeftOutAndSaid) {
  const LimitsPlan plan = plan_limits(SandboxSettings{}, nothing());
  EXPECT_EQ(plan.error, "");
  EXPECT_TRUE(plan.limits.controllers().empty());
  EXPECT_EQ(plan.summary, "none");
  EXPECT_NE(plan.warning.find("WITHOUT its default limits on memory (2048 MiB), pids (512), a CPU "
                              "share of its own: " +
                              std::string(kNotRoot)),
            std::string::npos)
      << plan.warning;
}

TEST(SandboxLimits, ALimitGivenInTheConfigThatCannotBeAppliedIsAnError) {
  SandboxSettings settings;
  settings.memory_bytes = std::int64_t{64} << 20;
  settings.memory_set = true;
  settings.cpus = 1.5;
  settings.cpus_set = true;
  CgroupAvailability some = everything();
  some.problems[CgroupController::kMemory] = kNotRoot;
  const LimitsPlan plan = plan_limits(settings, some);
  EXPECT_TRUE(plan.required);
  EXPECT_NE(
      plan.error.find("sandbox.memory (64 MiB) needs a memory cgroup: " + std::string(kNotRoot)),
      std::string::npos)
      << plan.error;
  EXPECT_EQ(plan.error.find("sandbox.cpus"), std::string::npos) << plan.error;
  // "none" asks for nothing: no error, no cgroup for memory.
  settings.memory_bytes.reset();
  const LimitsPlan none = plan_limits(settings, some);
  EXPECT_EQ(none.error, "");
  EXPECT_EQ(none.summary, "pids 512, cpus 1.5 (a cgroup v2 of its own per sandbox)");
  SandboxSettings pids;
  pids.pids_limit = 100;
  pids.pids_limit_set = true;
  EXPECT_NE(plan_limits(pids, nothing()).error.find("sandbox.pids_limit (100) needs a pids cgroup"),
            std::string::npos);
}

TEST(SandboxLimits, TheMemoryNoticeAndNames) {
  EXPECT_EQ(memory_limit_notice(std::int64_t{64} << 20),
            "the command was killed by the kernel's out-of-memory killer (exit 137): the sandbox "
            "reached its memory limit (sandbox.memory, 64 MiB)");
  const std::string alice = sandbox_cgroup_name("agent", "123-ab-u-alice");
  const std::string bob = sandbox_cgroup_name("agent", "123-ab-u-bob");
  EXPECT_EQ(alice.rfind("execmcp-agent-123-ab-u-alice-", 0), 0u) << alice;
  EXPECT_NE(alice, bob);
  // Each sandbox of one agent its own name, even with the same instance.
  EXPECT_NE(sandbox_cgroup_name("agent", "1-a"), sandbox_cgroup_name("agent", "1-a"));
}

}  // namespace
