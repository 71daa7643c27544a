// Building, starting and stopping the process's agents (see agent_registry.hpp).
#include "agent/agent_registry.hpp"

#include <sys/stat.h>

#include <filesystem>

#include "agent/per_user_target.hpp"
#include "agent/single_agent_target.hpp"
#include "agent/user_sandboxes.hpp"

namespace execmcp::host {

std::unique_ptr<ConfiguredAgent> build_per_user_template(const Config& config,
                                                         const AgentConfig& agent,
                                                         const PluginRegistry& plugins,
                                                         AgentBuildOptions options) {
  AgentConfig shape = agent;
  shape.cwd = agent.per_user->workspace_root;
  options.sandbox_cwd = kUserSandboxCwd;
  options.touch_filesystem = false;
  auto built = build_agent(config, shape, plugins, options);
  if (built->sandbox_control() == nullptr || !built->traits().isolated)
    throw ConfigError(
        {agent.backend.location.str() + ": " + agent.backend.key_path + ": backend '" +
         agent.backend.plugin +
         "' cannot serve a per-user agent: it gives no sandbox it can stop and "
         "start again (execmcp.sandbox/1); use docker-api or docker-cli, or local with "
         "isolation: sandbox"});
  return built;
}

AgentRegistry::AgentRegistry(const Config& config, const std::vector<const AgentConfig*>& selected,
                             PluginRegistry plugins, const AgentBuildOptions& options)
    : config_(std::make_shared<const Config>(config)),
      plugins_(std::make_unique<const PluginRegistry>(std::move(plugins))) {
  entries_.reserve(selected.size());
  for (const AgentConfig* agent_config : selected) {
    if (agent_config->per_user) {
      entries_.push_back(build_per_user(*agent_config, options));
      continue;
    }
    auto agent = build_agent(config, *agent_config, *plugins_, options);
    const bool isolated = agent->traits().isolated;  // asked once, here
    entries_.push_back(std::make_unique<SingleAgentTarget>(std::move(agent), isolated));
  }
}

AgentRegistry::~AgentRegistry() {
  stop_all();
}

std::vector<std::string> AgentRegistry::ids() const {
  std::vector<std::string> ids;
  for (const auto& entry : entries_) ids.push_back(entry->id());
  return ids;
}

std::unique_ptr<AgentTarget> AgentRegistry::build_per_user(const AgentConfig& agent_config,
                                                           const AgentBuildOptions& options) {
  const PerUserConfig& per_user = *agent_config.per_user;
  if (options.touch_filesystem) {
    // Only the server's user may enter it: each user's container reaches its own directory
    // through its mount, no one else's.
    std::error_code ec;
    std::filesystem::create_directories(per_user.workspace_root, ec);
    if (!ec) ::chmod(per_user.workspace_root.c_str(), 0700);
  }
  const std::string instance =
      options.instance_id.empty() ? make_instance_id() : options.instance_id;
  // The template: checks the plugins' settings now and answers tools/list; never started. It has
  // the longest instance id a user's sandbox can have, so a name that would not fit is refused now.
  AgentBuildOptions template_options = options;
  template_options.instance_id = instance + "-" + SandboxTemplate::longest_sandbox_name();
  auto shape = build_per_user_template(*config_, agent_config, *plugins_, template_options);
  SandboxBuilder build = [config = config_, plugins = plugins_.get(), agent_config, options,
                          instance](const std::string& workspace, const std::string& name) {
    AgentConfig one = agent_config;
    one.cwd = workspace;
    one.per_user.reset();
    AgentBuildOptions one_options = options;
    one_options.instance_id = instance + "-" + name;
    one_options.sandbox_cwd = kUserSandboxCwd;
    return build_agent(*config, one, *plugins, one_options);
  };
  auto sandboxes = std::make_unique<UserSandboxes>(agent_config.id, per_user, std::move(build),
                                                   shape->capabilities(), shape->traits());
  return std::make_unique<PerUserTarget>(std::move(shape), std::move(sandboxes));
}

void AgentRegistry::start_all(const std::function<bool()>& keep_going) {
  for (const auto& entry : entries_) {
    if (!keep_going()) return;
    entry->start();
  }
}

void AgentRegistry::start_background() {
  for (const auto& entry : entries_) entry->start_background();
}

void AgentRegistry::stop_all() noexcept {
  for (const auto& entry : entries_) entry->stop();
}

}  // namespace execmcp::host
