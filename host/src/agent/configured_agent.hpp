// The Agent behind an MCP session: a config entry made real (filter chain, backend, limits, audit).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/agent.hpp"
#include "agent/audit_log.hpp"
#include "agent/background_shells.hpp"
#include "config/config.hpp"
#include "execmcp/sdk/network_events.hpp"
#include "execmcp/sdk/sandbox_control.hpp"
#include "execmcp/sdk/secret_events.hpp"
#include "plugins/plugin_registry.hpp"

namespace execmcp::host {

struct NamedFilter {
  std::string name;  // the plugin name, reported when it denies
  PluginPtr<sdk::CommandFilter> filter;
};

class ConfiguredAgent final : public Agent {
 public:
  struct Parts {
    std::string id;
    std::string instance_id;
    std::string cwd;
    std::string backend_name;
    // Declared before the plugin objects: plugins keep raw pointers to these sinks.
    std::vector<std::unique_ptr<sdk::LogSink>> log_sinks;
    PluginPtr<sdk::ExecutorBackend> backend;
    std::vector<NamedFilter> filters;  // chain order
    std::chrono::milliseconds timeout{std::chrono::seconds(60)};
    std::chrono::milliseconds max_timeout{std::chrono::seconds(600)};
    std::size_t output_cap = sdk::kDefaultOutputCap;
    BackgroundConfig background;
    std::shared_ptr<AuditLog> audit;  // never null after construction
  };

  explicit ConfiguredAgent(Parts parts);
  ~ConfiguredAgent() override;
  ConfiguredAgent(const ConfiguredAgent&) = delete;
  ConfiguredAgent& operator=(const ConfiguredAgent&) = delete;

  // Starts the backend (creates or adopts its container, ...); from then until shutdown() each
  // request its network policy refuses (execmcp.network_events/1) is an audit record. Throws
  // std::runtime_error.
  void start();
  // Whether start() succeeded (and shutdown() has not run since).
  [[nodiscard]] bool started() const { return started_.load() && !shut_down_.load(); }
  // Stops and cleans up the backend if start() was tried; runs once. Also run by the destructor.
  void shutdown() noexcept;

  [[nodiscard]] const std::string& id() const override { return parts_.id; }
  [[nodiscard]] const std::string& cwd() const override { return parts_.cwd; }
  [[nodiscard]] const std::string& instance_id() const { return parts_.instance_id; }
  [[nodiscard]] const std::string& backend_name() const { return parts_.backend_name; }
  [[nodiscard]] std::vector<std::string> filter_names() const;

  ExecuteOutcome execute(const ExecuteArgs& args, sdk::OutputSink* sink,
                         const sdk::CancelToken* cancel) override;
  sdk::ExecResult run_internal(const std::string& command, const sdk::CancelToken* cancel,
                               const std::string& principal) override;
  sdk::FileReadResult read_file(const sdk::FileReadRequest& request,
                                const std::string& principal) override;
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request,
                                  const std::string& principal) override;
  [[nodiscard]] sdk::BackendTraits traits() const override;
  void audit_task(const TaskAuditEvent& event) override;

  [[nodiscard]] AgentCapabilities capabilities() const override;
  BackgroundShellControl* background_shells() override;
  // A per-user sandbox's user key, in each of its audit records from now on.
  void set_user(std::string user_key);
  // The backend's stop/resume/relocate (execmcp.sandbox/1), or null when it offers none.
  [[nodiscard]] sdk::SandboxControl* sandbox_control() const;

 private:
  struct Denial {
    std::string filter;
    std::string rule;
    std::string reason;
  };
  // The filter chain in order; the first denial, or none. A filter that throws denies.
  [[nodiscard]] std::optional<Denial> check_filters(const std::string& command,
                                                    const std::string& work_dir) const;
  sdk::ExecResult run_backend(sdk::ExecRequest& request);
  void audit(AuditRecord record, const sdk::ExecResult& result) const;
  // Who the record is about: this agent, its instance, its user.
  void stamp(AuditRecord& record) const;
  void audit_command(const std::string& tool, const ExecuteArgs& args, std::string verdict,
                     std::string reason, const sdk::ExecResult& result) const;
  // One record of tool "egress" for a request of the sandbox's (its text bounded and escaped).
  void audit_network(const sdk::NetworkEvent& event) const;
  // One record of tool "egress" for what the proxy did with a secret's placeholder.
  void audit_secret(const sdk::SecretEvent& event) const;

  Parts parts_;
  std::once_flag shutdown_once_;
  std::atomic<bool> shut_down_{false};
  // A backend that was never started (check-config) has nothing to stop or clean up.
  std::atomic<bool> start_attempted_{false};
  std::atomic<bool> started_{false};
  mutable std::mutex user_mutex_;
  std::string user_;  // set_user(); guarded by user_mutex_
  // After parts_: destroyed (all shells ended) before the backend that runs them.
  std::unique_ptr<BackgroundShells> background_;
  // The agent's side of background_ (filters first, output cap, shutdown); null without it.
  class Shells;
  std::unique_ptr<Shells> shells_;
  // Subscribed to the backend's network events from start() to shutdown().
  class NetworkAudit;
  std::unique_ptr<NetworkAudit> network_audit_;
  sdk::NetworkEvents* network_events_ = nullptr;
  // Subscribed to the backend's secret events, likewise.
  class SecretAudit;
  std::unique_ptr<SecretAudit> secret_audit_;
  sdk::SecretEvents* secret_events_ = nullptr;
};

struct AgentBuildOptions {
  std::string audit_file;        // overrides the config's audit_file when non-empty
  bool touch_filesystem = true;  // create the workspace, open the audit file; false: check only
  std::string instance_id;       // empty: make_instance_id()
  // Where commands see the workspace in the sandbox (BackendInit::sandbox_cwd): a per-user
  // sandbox's "/workspace". Also the agent's cwd() then; the workspace on the host is the
  // AgentConfig's cwd.
  std::string sandbox_cwd;
};

// A process-unique id: the pid and random hex, e.g. "12345-9f3a1c". Safe in container names.
std::string make_instance_id();

// The plugin's own check of `ref`'s settings (SDK 2.1), before it is created: each problem at the
// config line and key of the setting at fault. None when the plugin exports no check or is not
// loaded (PluginRegistry::absent() says so).
std::vector<std::string> plugin_settings_problems(const PluginRef& ref, sdk::PluginKind kind,
                                                  const PluginRegistry& registry);

// Creates the agent's filters and backend through the registry (does not start the backend).
// Throws ConfigError naming the config line of every plugin whose settings were refused.
std::unique_ptr<ConfiguredAgent> build_agent(const Config& config, const AgentConfig& agent,
                                             const PluginRegistry& registry,
                                             const AgentBuildOptions& options = {});

}  // namespace execmcp::host
