// Tests for the `runtime` setting's check against the engine's runtimes, and their parsing.
#include "docker_common/lifecycle/runtime_check.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "docker_common/engine/engine.hpp"

namespace execmcp::plugins::docker_common {
namespace {

TEST(RuntimeListFromInfo, TakesEachNameWithItsArguments) {
  const auto info = nlohmann::json::parse(R"({
    "runc": {"path": "runc"},
    "runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none", 7]},
    "odd": "not an object"})");
  const auto list = runtime_list_from_info(info);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list.at("runc").path, "runc");
  EXPECT_TRUE(list.at("runc").args.empty());
  EXPECT_EQ(list.at("runsc").path, "/usr/bin/runsc");
  EXPECT_EQ(list.at("runsc").args, (std::vector<std::string>{"--network=none"}));
  EXPECT_TRUE(list.at("odd").path.empty());
  EXPECT_TRUE(runtime_list_from_info(nlohmann::json::array()).empty());
}

const RuntimeInfo kRunc{"runc", {}};
const RuntimeInfo kRunsc{"/usr/bin/runsc", {"--network=none"}};

TEST(RuntimeProblem, ARegisteredRuntimeIsFine) {
  const RuntimeList list = {{"runc", kRunc}, {"runsc", kRunsc}};
  EXPECT_EQ(runtime_problem({"runc", "bridge", true}, list, "e"), "");
  EXPECT_EQ(runtime_problem({"runsc", "none", false}, list, "e"), "");
}

TEST(RuntimeProblem, AnUnknownRuntimeListsTheEnginesOnes) {
  const auto problem =
      runtime_problem({"kata", "none", false}, {{"runc", kRunc}, {"runsc", kRunsc}}, "unix:///s");
  EXPECT_NE(problem.find("runtime 'kata' is not registered with the engine at unix:///s (its "
                         "runtimes: runc, runsc)"),
            std::string::npos)
      << problem;
  EXPECT_NE(runtime_problem({"kata", "none", false}, {}, "e").find("none listed"),
            std::string::npos);
}

TEST(RuntimeProblem, ARuntimeWithoutNetworkRefusesEveryNetworkButNone) {
  for (const auto& args : {std::vector<std::string>{"--debug", "--network=none"},
                           std::vector<std::string>{"--network", "none"}}) {
    const RuntimeList list = {{"sandboxed", {"/opt/other", args}}};
    for (const char* network : {"bridge", "host", "egress"}) {
      const auto problem = runtime_problem({"sandboxed", network, false}, list, "e");
      EXPECT_NE(problem.find("runs with --network=none"), std::string::npos) << problem;
      EXPECT_NE(problem.find(std::string("'network: ") + network + "' cannot apply"),
                std::string::npos)
          << problem;
    }
  }
  // gVisor's host network (the container's own namespace) is the operator's choice.
  EXPECT_EQ(runtime_problem({"runsc", "bridge", false},
                            {{"runsc", {"/usr/bin/runsc", {"--network=host"}}}}, "e"),
            "");
}

TEST(RuntimeProblem, GvisorIsToldApartByItsProgram) {
  EXPECT_TRUE(is_gvisor(kRunsc));
  EXPECT_TRUE(is_gvisor({"runsc", {}}));
  EXPECT_FALSE(is_gvisor(kRunc));
  EXPECT_FALSE(is_gvisor({"/usr/bin/runc", {}}));
  // Both exec modes run there (execmcp-runner marks a command's processes without a subreaper).
  EXPECT_EQ(runtime_problem({"gv", "none", false}, {{"gv", kRunsc}}, "e"), "");
}

TEST(EnginePidsLimit, GvisorsLimitMakesRoomForTheSandboxsOwnTasks) {
  EXPECT_EQ(engine_pids_limit(512, false), 512);
  EXPECT_EQ(engine_pids_limit(512, true), kGvisorSandboxTasks + 512 * kGvisorTasksPerProcess);
  EXPECT_EQ(engine_pids_limit(0, true), 0);  // no limit stays none
  EXPECT_EQ(engine_pids_limit(-1, true), -1);
}

TEST(RuntimeProfile, Exit128IsTheSandboxsEndOnlyWhereTheProfileSaysSo) {
  const auto runc = RuntimeProfile::runc();
  const auto gvisor = RuntimeProfile::gvisor();
  EXPECT_FALSE(runc.exit_is_sandbox_end(128));
  EXPECT_TRUE(gvisor.exit_is_sandbox_end(128));
  EXPECT_FALSE(gvisor.exit_is_sandbox_end(137));
  // Ended from outside: a signal's code, an unknown one, or the sandbox's end.
  for (const auto& p : {runc, gvisor}) {
    EXPECT_TRUE(p.ended_from_outside(137));
    EXPECT_TRUE(p.ended_from_outside(143));
    EXPECT_TRUE(p.ended_from_outside(-1));
    EXPECT_FALSE(p.ended_from_outside(0));
    EXPECT_FALSE(p.ended_from_outside(1));
  }
  EXPECT_FALSE(runc.ended_from_outside(128));
  EXPECT_TRUE(gvisor.ended_from_outside(128));
}

TEST(RuntimeProblem, GvisorRefusesSudoForItsNoNewPrivs) {
  RuntimeUse use{"gv", "none", true};
  const auto problem = runtime_problem(use, {{"gv", kRunsc}}, "e");
  EXPECT_NE(problem.find("'sudo: true' cannot work there"), std::string::npos) << problem;
  EXPECT_EQ(runtime_problem(use, {{"gv", kRunc}}, "e"), "");
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
