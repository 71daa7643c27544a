// Every example config shipped in configs/ must load and validate, so none of them rots.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "test_support.hpp"

namespace execmcp::host {
namespace {

TEST(ExampleConfigs, EveryYamlInConfigsValidates) {
  tests::TempDir workspace;
  tests::ScopedEnv env("EXECMCP_WORKSPACE", workspace.str());
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(EXECMCP_SOURCE_DIR) / "configs")) {
    if (entry.path().extension() == ".yaml" || entry.path().extension() == ".yml")
      files.push_back(entry.path());
  }
  ASSERT_GE(files.size(), 4u) << "configs/ should hold the example configs";
  std::set<std::string> backends;
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    try {
      const auto config = load_config(file.string());
      EXPECT_FALSE(config->agents.empty());
      bool any_served = false;
      for (const auto& agent : config->agents) {
        any_served = any_served || agent.mcp_enabled;
        backends.insert(agent.backend.plugin);
      }
      EXPECT_TRUE(any_served) << "an example config should have an agent execmcp can serve";
    } catch (const ConfigError& e) {
      ADD_FAILURE() << e.what();
    }
  }
  // Each built-in backend has an example that loads (its settings are the plugin's to check).
  for (const char* backend : {"local", "docker-api", "docker-cli", "docker-swarm"})
    EXPECT_EQ(backends.count(backend), 1u) << "no example config in configs/ uses " << backend;
}

}  // namespace
}  // namespace execmcp::host

namespace execmcp::host {
namespace {

std::shared_ptr<const Config> load_example(const char* name) {
  return load_config((std::filesystem::path(EXECMCP_SOURCE_DIR) / "configs" / name).string());
}

TEST(ExampleConfigs, MassgenFullDevMapsSudoCredentialsAndPreinstall) {
  tests::TempDir workspace;
  tests::ScopedEnv env("EXECMCP_WORKSPACE", workspace.str());
  const auto config = load_example("massgen-full-dev.yaml");
  const auto& agent = config->agents.at(0);
  EXPECT_EQ(agent.backend.plugin, "docker-api");
  const auto& settings = agent.backend.settings;
  EXPECT_EQ(settings.at("sudo"), true);
  EXPECT_EQ(settings.at("credentials").at("mount"), (nlohmann::json{"ssh_keys", "git_config"}));
  EXPECT_EQ(settings.at("credentials").at("env_file").get<std::string>().front(), '/');
  EXPECT_EQ(settings.at("credentials").at("additional_mounts").count(workspace.str() + "/datasets"),
            1u);
  EXPECT_EQ(settings.at("preinstall").at("python"), (nlohmann::json{"requests", "pytest"}));
  EXPECT_EQ(agent.filters.at(0).settings.at("allow"),
            (nlohmann::json{"sudo", "su", "chown", "chmod"}));
}

TEST(ExampleConfigs, MassgenProtectedKeepsReferenceReadOnly) {
  const auto config = load_example("massgen-protected.yaml");
  const auto& context = config->agents.at(0).context_paths.at(0);
  EXPECT_TRUE(context.writable);
  ASSERT_EQ(context.protected_paths.size(), 1u);
  EXPECT_EQ(context.protected_paths[0], context.path + "/reference");
}

TEST(ExampleConfigs, DockerPreinstallNamesItsListsAndFailurePolicy) {
  const auto config = load_example("docker-preinstall.yaml");
  const auto& settings = config->agents.at(0).backend.settings;
  EXPECT_EQ(settings.at("preinstall").at("system"), (nlohmann::json{"jq"}));
  EXPECT_EQ(settings.at("preinstall").at("python"), (nlohmann::json{"requests==2.31.0"}));
  EXPECT_EQ(settings.at("preinstall_on_failure"), "fail");
}

TEST(ExampleConfigs, DockerAttachNamesTheContainer) {
  const auto config = load_example("docker-attach.yaml");
  EXPECT_EQ(config->agents.at(0).backend.settings.at("container"), "my-dev");
}

}  // namespace
}  // namespace execmcp::host
