// The /etc view's deny list on a fake /etc, and the synthesized account files.
#include "etc_view.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
namespace sb = execmcp::plugins::local::sandbox;

namespace {

TEST(EtcViewTest, HidesKnownSecretsAndWhatOtherMayNotRead) {
  char tmpl[] = "/tmp/execmcp-etc-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string etc = tmpl;
  ::chmod(etc.c_str(), 0755);
  auto make = [&](const std::string& rel, mode_t mode) {
    const std::string path = etc + "/" + rel;
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << "x";
    ::chmod(path.c_str(), mode);
  };
  make("shadow", 0644);  // by name, whatever its mode
  make("hostname", 0644);
  make("ssh/ssh_host_ed25519_key", 0644);
  make("ssh/ssh_host_ed25519_key.pub", 0644);
  make("ssh/sshd_config", 0644);
  make("app/token", 0600);  // by mode
  make("app/public.conf", 0644);
  make("vault/a", 0644);
  ::chmod((etc + "/vault").c_str(), 0750);  // a directory other may not enter: hidden whole
  make("private/deep/file", 0600);
  ::chmod((etc + "/private").c_str(), 0700);
  fs::create_symlink("/nonexistent", etc + "/dangling");
  const auto hidden = sb::etc_hidden_entries(etc);
  std::vector<std::string> got;
  for (const auto& e : hidden) got.push_back(e.path.substr(etc.size()) + (e.is_dir ? "/" : ""));
  const std::vector<std::string> want = {"/app/token", "/private/", "/shadow",
                                         "/ssh/ssh_host_ed25519_key", "/vault/"};
  EXPECT_EQ(got, want);
  fs::remove_all(etc);
}

TEST(EtcViewTest, AccountsNameTheAgentFirst) {
  const std::string passwd = sb::synthesized_passwd(1000, 1001, "/home/agent");
  EXPECT_EQ(passwd.rfind("agent:x:1000:1001:agent:/home/agent:/bin/sh\n", 0), 0U) << passwd;
  EXPECT_NE(passwd.find("\nroot:x:0:0:"), std::string::npos);
  EXPECT_NE(passwd.find("\nnobody:x:65534:"), std::string::npos);
  EXPECT_EQ(sb::synthesized_group(1001).rfind("agent:x:1001:\n", 0), 0U);
}

TEST(EtcViewTest, HostEtcHidesShadow) {
  if (!fs::exists("/etc/shadow")) GTEST_SKIP() << "no /etc/shadow here";
  bool found = false;
  for (const auto& e : sb::host_etc_hidden_entries()) found |= e.path == "/etc/shadow";
  EXPECT_TRUE(found);
}

}  // namespace
