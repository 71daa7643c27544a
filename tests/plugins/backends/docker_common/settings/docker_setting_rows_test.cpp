// Tests for the table of the Docker plugins' settings (docker_setting_rows()): one row for each key
// the plugins took before the table, with the engines, attach mode and defaults they had.
#include "docker_common/settings/docker_settings.hpp"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace execmcp::plugins::docker_common {
namespace {

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

// The keys each plugin took before the table, in the order its "unknown setting" error listed them.
const std::vector<std::string> kApiKeys = words(
    "image memory disk tmpfs_size writable_rootfs cpus pids_limit network user env extra_mounts "
    "docker_host command_prefix venv_path shell exec_mode egress runtime sudo credentials "
    "preinstall preinstall_on_failure container attach_accept_writable_context");
const std::vector<std::string> kCliOnlyKeys =
    words("docker_binary docker_context docker_flags cli_env");
// The settings attach mode refused, in the order its error named them.
const std::vector<std::string> kCreateOnlyKeys = words(
    "image memory disk tmpfs_size writable_rootfs cpus pids_limit network extra_mounts sudo "
    "preinstall preinstall_on_failure egress runtime");

std::string join(const std::vector<std::string>& items, const std::string& quote = "") {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + quote + item + quote;
  return out;
}

std::string error_of(const std::string& json, EngineKind kind) {
  try {
    parse_docker_settings(json, kind);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> names_for(EngineKind kind) {
  std::vector<std::string> names;
  for (const auto& row : docker_setting_rows())
    if (row.accepts(kind)) names.emplace_back(row.name);
  return names;
}

TEST(DockerSettingRows, AreTheKeysEachPluginTookInTheirOrder) {
  auto cli_keys = kApiKeys;
  cli_keys.insert(cli_keys.end(), kCliOnlyKeys.begin(), kCliOnlyKeys.end());
  EXPECT_EQ(names_for(EngineKind::kApi), kApiKeys);
  EXPECT_EQ(names_for(EngineKind::kCli), cli_keys);
  EXPECT_EQ(docker_setting_rows().size(), cli_keys.size());
  // The unknown-key error lists them as it did.
  EXPECT_EQ(error_of(R"({"zzz": 1})", EngineKind::kApi),
            "unknown setting 'zzz' (known: " + join(kApiKeys) + ")");
  EXPECT_EQ(error_of(R"({"zzz": 1})", EngineKind::kCli),
            "unknown setting 'zzz' (known: " + join(cli_keys) + ")");
  // docker-api refuses docker-cli's own keys by name.
  for (const auto& key : kCliOnlyKeys)
    EXPECT_EQ(error_of(R"({")" + key + R"(": 1})", EngineKind::kApi),
              "setting '" + key + "' is a docker-cli setting; use plugin docker-cli");
}

TEST(DockerSettingRows, EachHasADefaultADescriptionAndAParser) {
  std::set<std::string> names;
  for (const auto& row : docker_setting_rows()) {
    EXPECT_TRUE(names.emplace(row.name).second) << "twice: " << row.name;
    EXPECT_FALSE(row.default_text.empty()) << row.name;
    EXPECT_FALSE(row.description.empty()) << row.name;
    EXPECT_NE(row.parse, nullptr) << row.name;
  }
}

TEST(DockerSettingRows, AttachModeRefusesTheRowsItRefusedBefore) {
  std::vector<std::string> refused;
  for (const auto& row : docker_setting_rows())
    if (!row.attach) refused.emplace_back(row.name);
  EXPECT_EQ(std::set<std::string>(refused.begin(), refused.end()),
            std::set<std::string>(kCreateOnlyKeys.begin(), kCreateOnlyKeys.end()));
  // All at once: named in the order they were named before the table.
  const std::string all =
      R"({"container": "c1", "image": "i", "memory": "1g", "disk": "1g", "tmpfs_size": "1m",
          "writable_rootfs": true, "cpus": 1, "pids_limit": 5, "network": "egress",
          "extra_mounts": [{"source": "/d"}], "sudo": true, "preinstall": {"system": ["curl"]},
          "preinstall_on_failure": "continue", "egress": {"allow": ["a.test"]},
          "runtime": "runsc"})";
  EXPECT_EQ(error_of(all, EngineKind::kCli),
            "settings " + join(kCreateOnlyKeys, "'") +
                " cannot apply to a container execmcp does not create ('container': 'c1' "
                "attaches to an existing one): remove them, or remove 'container' to let execmcp "
                "create and manage the agent's container");
}

// A default that is a value (not words such as "no limit") reads back as the default itself.
TEST(DockerSettingRows, ADefaultThatIsAValueParsesToTheDefault) {
  const auto defaults = parse_docker_settings("{}", EngineKind::kCli);
  const auto shape = [](const DockerSettings& s) {
    return s.image + "|" + std::to_string(s.memory_bytes.value_or(-1)) + "|" +
           std::to_string(s.tmpfs_bytes) + "|" + std::to_string(s.writable_rootfs) + "|" +
           std::to_string(s.pids_limit) + "|" + s.network + "|" + std::to_string(s.env.size()) +
           "|" + std::to_string(s.extra_mounts.size()) + "|" + s.shell + "|" +
           std::to_string(static_cast<int>(s.exec_mode)) + "|" + std::to_string(s.sudo) + "|" +
           std::to_string(s.preinstall.continue_on_failure) + "|" + s.docker_binary + "|" +
           std::to_string(s.docker_flags.size()) + "|" + std::to_string(s.cli_env.size());
  };
  int checked = 0;
  for (const auto& row : docker_setting_rows()) {
    const std::string text(row.default_text);
    if (text.find(' ') != std::string::npos || text == "unset" || text == "empty") continue;
    const auto parsed = nlohmann::json::parse(text, nullptr, false);
    nlohmann::json settings = {
        {std::string(row.name), parsed.is_discarded() ? nlohmann::json(text) : parsed}};
    if (row.name == "attach_accept_writable_context") settings["container"] = "c1";
    const auto s = parse_docker_settings(settings.dump(), EngineKind::kCli);
    EXPECT_EQ(shape(s), shape(defaults)) << row.name << ": " << text;
    ++checked;
  }
  EXPECT_GE(checked, 15);
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
