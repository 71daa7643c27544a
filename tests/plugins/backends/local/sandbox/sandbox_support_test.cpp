// check_sandbox_support(): what this machine gives, and a refusal that names the layer and the fix.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "sandbox_launcher.hpp"
#include "sandbox_test_support.hpp"

namespace fs = std::filesystem;
namespace sb = execmcp::plugins::local::sandbox;

namespace {

TEST(SandboxSupportTest, ReportsEveryLayer) {
  EXECMCP_REQUIRE_SANDBOX_OR_SKIP();
  const auto support = sb::check_sandbox_support();
  EXPECT_EQ(support.problem, "");
  EXPECT_FALSE(support.bwrap.empty());
  EXPECT_TRUE(support.user_namespaces);
  EXPECT_TRUE(support.seccomp);
  EXPECT_GE(support.landlock_abi, 0);
}

// A bubblewrap without the options the sandbox needs (an older release) is refused by name.
TEST(SandboxSupportTest, AnOldBubblewrapIsRefused) {
  char tmpl[] = "/tmp/execmcp-old-bwrap-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string fake = std::string(tmpl) + "/bwrap";
  std::ofstream(fake) << "#!/bin/sh\necho '    --unshare-all   --bind SRC DEST'\n";
  ::chmod(fake.c_str(), 0755);
  ::setenv("EXECMCP_BWRAP", fake.c_str(), 1);
  const auto support = sb::check_sandbox_support();
  ::unsetenv("EXECMCP_BWRAP");
  fs::remove_all(tmpl);
  EXPECT_EQ(support.bwrap, "");
  EXPECT_NE(support.problem.find("bubblewrap: " + fake + " has no --disable-userns"),
            std::string::npos)
      << support.problem;
  EXPECT_NE(support.problem.find("0.8.0-2+deb12u1"), std::string::npos) << support.problem;
}

TEST(SandboxSupportTest, AMissingBubblewrapIsRefused) {
  ::setenv("EXECMCP_BWRAP", "/nonexistent/bwrap", 1);
  const auto support = sb::check_sandbox_support();
  ::unsetenv("EXECMCP_BWRAP");
  EXPECT_EQ(support.problem,
            "bubblewrap: /nonexistent/bwrap not found (No such file or directory); install it: "
            "apt-get install bubblewrap");
}

}  // namespace
