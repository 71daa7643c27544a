// Tests for resolving the `credentials` setting: mounts from $HOME, the secret environment, and
// errors that name files and variables but never a value.
#include "docker_common/parts/credentials.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace execmcp::plugins::docker_common {
namespace {

namespace fs = std::filesystem;
using Env = std::map<std::string, std::string>;

class Credentials : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = fs::temp_directory_path() /
            ("execmcp-cred-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(home_);
    fs::create_directories(home_ / ".ssh");
    fs::create_directories(home_ / ".config" / "gh");
    for (const char* f : {".gitconfig", ".npmrc", ".pypirc", ".ssh/id_ed25519"})
      std::ofstream(home_ / f) << "x\n";
  }
  void TearDown() override { fs::remove_all(home_); }

  CredentialsSettings with_env_file(const std::string& text) {
    std::ofstream(home_ / "agent.env") << text;
    CredentialsSettings c;
    c.env_file = (home_ / "agent.env").string();
    return c;
  }
  Env server_env() const { return {{"HOME", home_.string()}}; }

  fs::path home_;
};

TEST_F(Credentials, EachKindMountsItsHomeFileReadOnlyUnderTheImageUsersHome) {
  CredentialsSettings c;
  c.mount = {"ssh_keys", "git_config", "gh_config", "npm_config", "pypi_config"};
  const auto r = resolve_credentials(c, server_env());
  ASSERT_EQ(r.error, "");
  const std::vector<std::pair<std::string, std::string>> want = {
      {".ssh", "/home/execmcp/.ssh"},
      {".gitconfig", "/home/execmcp/.gitconfig"},
      {".config/gh", "/home/execmcp/.config/gh"},
      {".npmrc", "/home/execmcp/.npmrc"},
      {".pypirc", "/home/execmcp/.pypirc"}};
  ASSERT_EQ(r.mounts.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r.mounts[i].source, fs::canonical(home_ / want[i].first).string());
    EXPECT_EQ(r.mounts[i].target, want[i].second);
    EXPECT_TRUE(r.mounts[i].read_only);
  }
  EXPECT_TRUE(r.env->empty());
}

TEST_F(Credentials, AMissingFileIsAnErrorNamingIt) {
  fs::remove(home_ / ".gitconfig");
  CredentialsSettings c;
  c.mount = {"ssh_keys", "git_config"};
  const auto r = resolve_credentials(c, server_env());
  EXPECT_EQ(r.error, "credentials.mount: git_config needs '" + (home_ / ".gitconfig").string() +
                         "', which cannot be used: No such file or directory");
  EXPECT_TRUE(r.mounts.empty());
}

TEST_F(Credentials, ASymlinkedDotfileIsMountedFromWhereItLeads) {
  fs::rename(home_ / ".gitconfig", home_ / "real-gitconfig");
  fs::create_symlink(home_ / "real-gitconfig", home_ / ".gitconfig");
  CredentialsSettings c;
  c.mount = {"git_config"};
  const auto r = resolve_credentials(c, server_env());
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.mounts.at(0).source, fs::canonical(home_ / "real-gitconfig").string());
}

TEST_F(Credentials, EnvComesFromTheFileThenTheServerLaterWins) {
  auto c = with_env_file("A=from-file\nB=from-file\nC=from-file\n");
  c.env_vars = {"B"};
  const Env env = {{"HOME", home_.string()}, {"B", "from-server"}, {"PATH", "/bin"}};
  const auto r = resolve_credentials(c, env);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(*r.env, (SecretEnv{"A=from-file", "B=from-server", "C=from-file"}));
  EXPECT_EQ(r.names, (std::vector<std::string>{"A", "B", "C"}));
}

TEST_F(Credentials, EnvVarsFromFileTakesOnlyTheNamedOnesAndEachMustBeThere) {
  auto c = with_env_file("A=1\nB=2\nC=3\n");
  c.env_vars_from_file = std::vector<std::string>{"A", "C"};
  auto r = resolve_credentials(c, server_env());
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(*r.env, (SecretEnv{"A=1", "C=3"}));
  c.env_vars_from_file = std::vector<std::string>{"A", "D"};
  r = resolve_credentials(c, server_env());
  EXPECT_EQ(r.error, "credentials.env_vars_from_file: D is not in '" + c.env_file + "'");
  EXPECT_TRUE(r.env->empty());
}

TEST_F(Credentials, AMissingVariableOrFileIsAnError) {
  CredentialsSettings c;
  c.env_vars = {"NOT_SET_ANYWHERE"};
  EXPECT_EQ(resolve_credentials(c, server_env()).error,
            "credentials.env_vars: NOT_SET_ANYWHERE is not set in the server's environment");
  c = {};
  c.env_file = (home_ / "missing.env").string();
  EXPECT_EQ(resolve_credentials(c, server_env()).error,
            "credentials.env_file: env_file '" + c.env_file +
                "' cannot be read: No such file or directory");
}

TEST_F(Credentials, ABadLineNamesTheFileAndLineNotTheValue) {
  const auto c = with_env_file("OK=1\nBAD-NAME=hunter2\n");
  const auto r = resolve_credentials(c, server_env());
  EXPECT_NE(r.error.find(c.env_file + ":2:"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find("hunter2"), std::string::npos);
}

TEST_F(Credentials, PassAllEnvSkipsTheServersOwnVariables) {
  CredentialsSettings c;
  c.pass_all_env = true;
  Env env = {{"HOME", "/root"}, {"API_KEY", "k"}, {"GH_TOKEN", "t"}, {"bad-name", "x"}};
  for (const char* skipped :
       {"PATH", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD", "TERM", "TMPDIR", "LD_PRELOAD",
        "LD_LIBRARY_PATH", "DOCKER_HOST", "DOCKER_CONFIG", "EXECMCP_PLUGIN_PATH"})
    env[skipped] = "v";
  const auto r = resolve_credentials(c, env);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(*r.env, (SecretEnv{"API_KEY=k", "GH_TOKEN=t"}));
}

TEST_F(Credentials, UnreadableByTheContainerUserFailsNamingTheFile) {
  CredentialsSettings c;
  c.mount = {"ssh_keys"};
  const auto r = resolve_credentials(c, server_env());
  ASSERT_EQ(r.error, "");
  ::chmod((home_ / ".ssh").c_str(), 0755);
  ::chmod((home_ / ".ssh" / "id_ed25519").c_str(), 0644);
  EXPECT_EQ(check_credentials_readable(r.mounts, 54321, 54321), "");
  ::chmod((home_ / ".ssh" / "id_ed25519").c_str(), 0600);
  const auto err = check_credentials_readable(r.mounts, 54321, 54321);
  EXPECT_NE(err.find("id_ed25519' (for /home/execmcp/.ssh) is not readable by the container user "
                     "(uid 54321)"),
            std::string::npos)
      << err;
  // Its owner may read it.
  struct stat st {};
  ::stat((home_ / ".ssh" / "id_ed25519").c_str(), &st);
  if (st.st_uid != 0) {
    EXPECT_EQ(check_credentials_readable(r.mounts, st.st_uid, st.st_gid), "");
  }
  ::chmod((home_ / ".ssh").c_str(), 0700);
  EXPECT_NE(check_credentials_readable(r.mounts, 54321, 54321), "");
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
