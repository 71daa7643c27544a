// Tests for the `runtime` setting's check against the engine's runtimes, and their parsing.
#include "docker_common/runtime_check.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "docker_common/engine.hpp"

namespace execmcp::plugins::docker_common {
namespace {

TEST(RuntimeListFromInfo, TakesEachNameWithItsArguments) {
  const auto info = nlohmann::json::parse(R"({
    "runc": {"path": "runc"},
    "runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none", 7]},
    "odd": "not an object"})");
  const auto list = runtime_list_from_info(info);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_TRUE(list.at("runc").empty());
  EXPECT_EQ(list.at("runsc"), (std::vector<std::string>{"--network=none"}));
  EXPECT_TRUE(list.at("odd").empty());
  EXPECT_TRUE(runtime_list_from_info(nlohmann::json::array()).empty());
}

TEST(RuntimeProblem, ARegisteredRuntimeIsFine) {
  const RuntimeList list = {{"runc", {}}, {"runsc", {"--network=none"}}};
  EXPECT_EQ(runtime_problem("runc", list, "bridge", "e"), "");
  EXPECT_EQ(runtime_problem("runsc", list, "none", "e"), "");
}

TEST(RuntimeProblem, AnUnknownRuntimeListsTheEnginesOnes) {
  const auto problem = runtime_problem("kata", {{"runc", {}}, {"runsc", {}}}, "none", "unix:///s");
  EXPECT_NE(problem.find("runtime 'kata' is not registered with the engine at unix:///s (its "
                         "runtimes: runc, runsc)"),
            std::string::npos)
      << problem;
  EXPECT_NE(runtime_problem("kata", {}, "none", "e").find("none listed"), std::string::npos);
}

TEST(RuntimeProblem, ARuntimeWithoutNetworkRefusesEveryNetworkButNone) {
  for (const auto& args : {std::vector<std::string>{"--debug", "--network=none"},
                           std::vector<std::string>{"--network", "none"}}) {
    const RuntimeList list = {{"runsc", args}};
    for (const char* network : {"bridge", "host", "egress"}) {
      const auto problem = runtime_problem("runsc", list, network, "e");
      EXPECT_NE(problem.find("runs with --network=none"), std::string::npos) << problem;
      EXPECT_NE(problem.find(std::string("'network: ") + network + "' cannot apply"),
                std::string::npos)
          << problem;
    }
  }
  // gVisor's host network (the container's own namespace) is the operator's choice.
  EXPECT_EQ(runtime_problem("runsc", {{"runsc", {"--network=host"}}}, "bridge", "e"), "");
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
