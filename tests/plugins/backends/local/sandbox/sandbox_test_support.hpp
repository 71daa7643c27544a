// Shared by the local sandbox's tests: skip (with the layer and the fix) where this machine cannot
// give a sandbox, unless EXECMCP_REQUIRE_SANDBOX=1 (CI), where that is a failure.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "sandbox_launcher.hpp"

#define EXECMCP_REQUIRE_SANDBOX_OR_SKIP()                                                     \
  do {                                                                                        \
    const auto execmcp_support = ::execmcp::plugins::local::sandbox::check_sandbox_support(); \
    if (!execmcp_support.problem.empty()) {                                                   \
      const char* execmcp_require = std::getenv("EXECMCP_REQUIRE_SANDBOX");                   \
      if (execmcp_require != nullptr && std::string(execmcp_require) == "1")                  \
        FAIL() << execmcp_support.problem;                                                    \
      GTEST_SKIP() << execmcp_support.problem;                                                \
    }                                                                                         \
  } while (0)
