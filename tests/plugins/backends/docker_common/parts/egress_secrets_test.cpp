// Tests of the egress secrets' values: read from the environment or a file (one trailing newline
// dropped), errors that name the secret and its source and never the value, files the agent can
// see refused (symlinks resolved), values the proxy cannot hold refused, placeholders made, the
// wiping holder, and the upstream roots file.
#include "docker_common/parts/egress_secrets.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace execmcp::plugins::docker_common {
namespace {

constexpr const char* kValue = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";

// Deterministic bytes, so the placeholders of a test are the same each run.
egress_secrets::RandomBytes counting_random() {
  auto next = std::make_shared<unsigned char>(0);
  return [next](unsigned char* out, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) out[i] = (*next)++;
  };
}

EgressSecretSetting secret(const std::string& name, EgressSecretSource from) {
  EgressSecretSetting s;
  s.name = name;
  s.from = std::move(from);
  s.hosts = {"api.test"};
  return s;
}

EgressSecretSource env(const std::string& name) {
  return {EgressSecretSource::Kind::kEnv, name};
}
EgressSecretSource file(const std::string& path) {
  return {EgressSecretSource::Kind::kFile, path};
}

class EgressSecretValues : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/execmcp-secrets-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    std::filesystem::create_directories(dir_ + "/workspace");
    std::filesystem::create_directories(dir_ + "/outside");
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string write(const std::string& relative, const std::string& text) {
    const std::string path = dir_ + "/" + relative;
    std::ofstream(path) << text;
    return path;
  }
  std::string resolve(const std::vector<EgressSecretSetting>& secrets, AgentSecrets& out,
                      const std::map<std::string, std::string>& server_env = {}) {
    EgressPolicy policy;
    policy.secrets = secrets;
    return resolve_secret_values(policy, {dir_ + "/workspace"}, server_env, counting_random(), out);
  }

  std::string dir_;
};

TEST_F(EgressSecretValues, ValuesComeFromTheEnvironmentAndFilesWithPlaceholders) {
  const auto path = write("outside/token", std::string(kValue) + "\n");
  const auto crlf = write("outside/crlf", std::string(kValue) + "\r\n");
  AgentSecrets out;
  ASSERT_EQ(resolve({secret("A", env("SRC")), secret("B", file(path)), secret("C", file(crlf))},
                    out, {{"SRC", kValue}}),
            "");
  ASSERT_EQ(out.rules().size(), 3u);
  EXPECT_EQ(out.rules()[0].name, "A");
  EXPECT_EQ(out.rules()[0].value, kValue);
  EXPECT_EQ(out.rules()[1].value, kValue);  // one trailing newline dropped
  EXPECT_EQ(out.rules()[2].value, kValue);  // and a CR before it
  for (const auto& rule : out.rules()) {
    EXPECT_EQ(rule.placeholder.size(), rule.value.size());
    EXPECT_NE(rule.placeholder, rule.value);
    EXPECT_TRUE(rule.placeholder.starts_with("ghp_"));  // the public prefix is kept
    EXPECT_EQ(rule.hosts, (std::vector<std::string>{"api.test"}));
  }
  EXPECT_EQ(out.placeholder_env()[0], "A=" + out.rules()[0].placeholder);
  EXPECT_EQ(out.hosts(), (std::vector<std::string>{"api.test"}));
}

TEST_F(EgressSecretValues, TheRuleCarriesTheSettings) {
  auto s = secret("A", env("SRC"));
  s.hosts = {"api.test", "git.test"};
  s.header = "Authorization";
  s.methods = {"GET"};
  s.paths = {"/repos/"};
  s.plain_http = true;
  AgentSecrets out;
  ASSERT_EQ(resolve({s, secret("B", env("SRC"))}, out, {{"SRC", kValue}}), "");
  const auto& rule = out.rules()[0];
  EXPECT_EQ(rule.hosts, s.hosts);
  EXPECT_EQ(rule.header, "Authorization");
  EXPECT_EQ(rule.methods, s.methods);
  EXPECT_EQ(rule.paths, s.paths);
  EXPECT_TRUE(rule.plain_http);
  EXPECT_EQ(out.hosts(), (std::vector<std::string>{"api.test", "git.test"}));
  // Each secret has a placeholder of its own, even for the same value.
  EXPECT_NE(out.rules()[0].placeholder, out.rules()[1].placeholder);
}

TEST_F(EgressSecretValues, ErrorsNameTheSecretAndTheSourceNeverTheValue) {
  AgentSecrets out;
  EXPECT_EQ(resolve({secret("GITHUB_TOKEN", env("GITHUB_TOKEN"))}, out),
            "secret GITHUB_TOKEN: env:GITHUB_TOKEN is not set in the server's environment");
  EXPECT_EQ(resolve({secret("T", file(dir_ + "/outside/none"))}, out),
            "secret T: file:" + dir_ + "/outside/none: No such file or directory");
  EXPECT_EQ(resolve({secret("T", file(dir_ + "/outside"))}, out),
            "secret T: file:" + dir_ + "/outside: not a regular file");
  const auto big = write("outside/big", std::string(9000, 'a'));
  EXPECT_EQ(resolve({secret("T", file(big))}, out),
            "secret T: file:" + big + ": larger than 8 KiB, the most a secret's value may be");
  if (::geteuid() != 0) {
    const auto locked = write("outside/locked", kValue);
    ::chmod(locked.c_str(), 0);
    EXPECT_EQ(resolve({secret("T", file(locked))}, out),
              "secret T: file:" + locked + ": Permission denied");
  }
  // A value the proxy cannot hold: the sentence of placeholder_problem(), without the value.
  for (const std::string bad : {"", "short", "ghp_abc", "two\nlines-AbCdEfGhIjKlMnOp"}) {
    const auto err = resolve({secret("T", env("SRC"))}, out, {{"SRC", bad}});
    EXPECT_TRUE(err.starts_with("secret T: env:SRC: ")) << err;
    if (!bad.empty()) {
      EXPECT_EQ(err.find(bad), std::string::npos) << err;
    }
  }
  // Only one newline is dropped: a value with another is refused.
  const auto two = write("outside/two", std::string(kValue) + "\n\n");
  EXPECT_EQ(resolve({secret("T", file(two))}, out),
            "secret T: file:" + two + ": the value holds a CR, LF or NUL byte");
  // A failed resolution leaves `out` as it was.
  EXPECT_TRUE(out.rules().empty());
}

TEST_F(EgressSecretValues, AFileTheAgentCanSeeIsRefused) {
  const auto inside = write("workspace/token", kValue);
  AgentSecrets out;
  auto err = resolve({secret("T", file(inside))}, out);
  EXPECT_TRUE(
      err.starts_with("secret T: file:" + inside + ": it lies inside '" + dir_ + "/workspace'"))
      << err;
  // Through a symlink outside that leads inside: refused by where it leads.
  const std::string link = dir_ + "/outside/link";
  std::filesystem::create_symlink(inside, link);
  err = resolve({secret("T", file(link))}, out);
  EXPECT_NE(err.find("it lies inside '" + dir_ + "/workspace'"), std::string::npos) << err;
  EXPECT_EQ(err.find(kValue), std::string::npos);
  // A symlink inside that leads outside: refused by its name (the agent can repoint it).
  const auto outside = write("outside/token", kValue);
  std::filesystem::create_symlink(outside, dir_ + "/workspace/out-link");
  err = resolve({secret("T", file(dir_ + "/workspace/out-link"))}, out);
  EXPECT_NE(err.find("it lies inside"), std::string::npos) << err;
  // And a plain file outside is fine (Kubernetes' secret files are symlinks too).
  std::filesystem::create_symlink(outside, dir_ + "/outside/k8s-link");
  EXPECT_EQ(resolve({secret("T", file(dir_ + "/outside/k8s-link"))}, out), "");
}

TEST_F(EgressSecretValues, TheHolderMovesAndWipes) {
  AgentSecrets out;
  ASSERT_EQ(resolve({secret("A", env("SRC"))}, out, {{"SRC", kValue}}), "");
  out.bundle().leaves.push_back({"api.test", "cert", "key"});
  AgentSecrets moved(std::move(out));
  EXPECT_TRUE(out.rules().empty());  // NOLINT(bugprone-use-after-move): wiped on purpose
  EXPECT_TRUE(out.bundle().leaves.empty());
  ASSERT_EQ(moved.rules().size(), 1u);
  EXPECT_EQ(moved.rules()[0].value, kValue);
  AgentSecrets other;
  other = std::move(moved);
  EXPECT_EQ(other.rules()[0].value, kValue);
  EXPECT_EQ(other.bundle().leaves[0].key_pem, "key");

  std::string text = "secret";
  cleanse(text);
  EXPECT_TRUE(text.empty());
}

TEST_F(EgressSecretValues, TheUpstreamRootsAreAPemFile) {
  std::string pem;
  EXPECT_EQ(read_upstream_ca(dir_ + "/none.pem", pem),
            "egress.upstream_ca '" + dir_ + "/none.pem': No such file or directory");
  const auto junk = write("junk.pem", "not a certificate\n");
  EXPECT_EQ(
      read_upstream_ca(junk, pem),
      "egress.upstream_ca '" + junk + "': holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
  const auto broken = write("broken.pem",
                            "-----BEGIN CERTIFICATE-----\nAAAA\n"
                            "-----END CERTIFICATE-----\n");
  EXPECT_NE(read_upstream_ca(broken, pem), "");
  EXPECT_EQ(pem, "");
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
