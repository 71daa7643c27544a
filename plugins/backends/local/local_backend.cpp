// The `local` executor backend: picks how commands run from the settings, and the plugin's export.
#include "local_backend.hpp"

#include "execmcp/sdk/plugin.hpp"
#include "host_execution.hpp"
#include "sandbox_execution.hpp"
#include "settings_hooks.hpp"

namespace execmcp::plugins::local {

namespace {

std::unique_ptr<LocalExecution> make_execution(const sdk::BackendInit& init,
                                               LocalSettings settings) {
  if (settings.isolation == Isolation::kSandbox)
    return std::make_unique<SandboxExecution>(init, std::move(settings));
  return std::make_unique<HostExecution>(init, std::move(settings));
}

}  // namespace

LocalBackend::LocalBackend(const sdk::BackendInit& init)
    : LocalBackend(init, parse_local_settings(init.settings_json)) {}

LocalBackend::LocalBackend(const sdk::BackendInit& init, LocalSettings settings)
    : tools_dir_(init.tools_dir),
      isolated_(settings.isolation == Isolation::kSandbox),
      execution_(make_execution(init, std::move(settings))) {}

LocalBackend::~LocalBackend() {
  execution_.reset();  // stops what runs before the rest goes
}

void* LocalBackend::query_interface(std::string_view id) noexcept {
  if (id == sdk::kBackgroundProcessesId) return static_cast<sdk::BackgroundProcesses*>(this);
  // Only a sandbox can be stopped and made again (per-user agents, idle stop and resume).
  if (id == sdk::kSandboxControlId) return execution_->sandbox_control();
  if (id == sdk::kNetworkEventsId) return execution_->network_events();
  return nullptr;
}

sdk::BackendTraits LocalBackend::traits() const {
  sdk::BackendTraits traits;
  // The sandbox mounts the tools dir at its host path: commands see it where the host does.
  traits.tools_dir = tools_dir_;
  traits.python = "python3";
  traits.isolated = isolated_;
  return traits;
}

}  // namespace execmcp::plugins::local

EXECMCP_BACKEND_PLUGIN(execmcp::plugins::local::LocalBackend, "local", "0.1.0",
                       "runs commands as subprocesses on the host, or in an OS sandbox of their "
                       "own (isolation: sandbox), killing the whole tree on timeout or cancel")
EXECMCP_SETTINGS_CHECK(execmcp::plugins::local::check_local_settings)
EXECMCP_SETTINGS_DESCRIPTION(execmcp::plugins::local::describe_local_settings)
