// The Agent behind an MCP session: a config entry made real (filter chain, backend, limits, audit).
#include "agent/configured_agent.hpp"

#include <unistd.h>

#include <filesystem>
#include <random>
#include <sstream>

#include <spdlog/spdlog.h>

#include "agent/spdlog_sink.hpp"
#include "execmcp/sdk/log_text.hpp"

namespace execmcp::host {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string format_seconds(std::chrono::milliseconds value) {
  std::ostringstream out;
  out << static_cast<double>(value.count()) / 1000.0 << "s";
  return out.str();
}

}  // namespace

// Filters the command before background_ starts it, and refuses once the agent shuts down.
class ConfiguredAgent::Shells final : public BackgroundShellControl {
 public:
  explicit Shells(ConfiguredAgent& agent) : agent_(agent) {}

  BackgroundStartResult start(const BackgroundStartArgs& args) override {
    BackgroundStartResult result;
    if (const auto denial = agent_.check_filters(args.command, args.work_dir)) {
      result.error = "Command validation error: " + denial->reason;
      result.blocked_by = denial->filter;
      result.rule = denial->rule;
      AuditRecord record;
      record.tool = "start_background_shell";
      record.principal = args.principal;
      record.command = args.command;
      record.work_dir = args.work_dir;
      record.verdict = "blocked:" + denial->filter + "/" + denial->rule;
      record.reason = denial->reason;
      sdk::ExecResult nothing;
      agent_.audit(std::move(record), nothing);
      return result;
    }
    if (agent_.shut_down_.load()) {
      result.error =
          "Failed to start background shell: agent '" + agent_.parts_.id + "' is shutting down";
      return result;
    }
    return agent_.background_->start(args.command, args.work_dir, args.principal);
  }

  BackgroundOutput output(const std::string& shell_id, const std::optional<std::string>& cursor,
                          std::optional<std::size_t> max_lines,
                          const std::string& principal) override {
    BackgroundOutput output = agent_.background_->output(shell_id, cursor, max_lines, principal);
    output.output_cap = agent_.parts_.output_cap;
    return output;
  }

  std::optional<BackgroundShellStatus> status(const std::string& shell_id,
                                              const std::string& principal) override {
    return agent_.background_->status(shell_id, principal);
  }

  BackgroundKillResult kill(const std::string& shell_id, const std::string& principal) override {
    return agent_.background_->kill(shell_id, principal);
  }

  std::vector<BackgroundShellStatus> list(const std::string& principal) override {
    return agent_.background_->list(principal);
  }

 private:
  ConfiguredAgent& agent_;
};

// Makes an audit record of each request the backend's network policy judged.
class ConfiguredAgent::NetworkAudit final : public sdk::NetworkEventSink {
 public:
  explicit NetworkAudit(const ConfiguredAgent& agent) : agent_(agent) {}
  void on_network_event(const sdk::NetworkEvent& event) noexcept override {
    try {
      agent_.audit_network(event);
    } catch (...) {
      // AuditLog::record() never throws; a failed string copy loses this one record only.
    }
  }

 private:
  const ConfiguredAgent& agent_;
};

// Makes an audit record of each decision the backend's proxy took on a secret's placeholder.
class ConfiguredAgent::SecretAudit final : public sdk::SecretEventSink {
 public:
  explicit SecretAudit(const ConfiguredAgent& agent) : agent_(agent) {}
  void on_secret_event(const sdk::SecretEvent& event) noexcept override {
    try {
      agent_.audit_secret(event);
    } catch (...) {
      // As NetworkAudit: one record lost at most.
    }
  }

 private:
  const ConfiguredAgent& agent_;
};

std::string make_instance_id() {
  std::random_device device;
  std::ostringstream out;
  out << ::getpid() << "-" << std::hex << (device() & 0xffffffU);
  return out.str();
}

ConfiguredAgent::ConfiguredAgent(Parts parts) : parts_(std::move(parts)) {
  if (!parts_.audit) parts_.audit = std::make_shared<AuditLog>();
  if (parts_.instance_id.empty()) parts_.instance_id = make_instance_id();
  if (!parts_.backend || !parts_.background.enabled) return;
  // Asked once, before the backend starts: the tool list must not change under a client.
  sdk::BackgroundProcesses* processes = nullptr;
  try {
    processes = static_cast<sdk::BackgroundProcesses*>(
        parts_.backend->query_interface(sdk::kBackgroundProcessesId));
  } catch (...) {
    spdlog::warn(
        "agent '{}': backend '{}' threw when asked for background processes; the agent "
        "gets no background-shell tools",
        parts_.id, parts_.backend_name);
    processes = nullptr;
  }
  if (processes == nullptr) return;
  background_ = std::make_unique<BackgroundShells>(*processes, parts_.background, parts_.cwd,
                                                   [this](AuditRecord record) {
                                                     stamp(record);
                                                     parts_.audit->record(record);
                                                   });
  shells_ = std::make_unique<Shells>(*this);
}

ConfiguredAgent::~ConfiguredAgent() {
  shutdown();
}

void ConfiguredAgent::start() {
  if (!parts_.backend) throw std::runtime_error("agent '" + parts_.id + "' has no backend");
  std::string error;
  start_attempted_.store(true);
  try {
    // Before the start: a request refused while the sandbox comes up is audited too.
    if (network_events_ == nullptr) network_events_ = sdk::network_events(*parts_.backend);
    if (network_events_ != nullptr) {
      if (!network_audit_) network_audit_ = std::make_unique<NetworkAudit>(*this);
      network_events_->subscribe(network_audit_.get());
    }
    if (secret_events_ == nullptr) secret_events_ = sdk::secret_events(*parts_.backend);
    if (secret_events_ != nullptr) {
      if (!secret_audit_) secret_audit_ = std::make_unique<SecretAudit>(*this);
      secret_events_->subscribe(secret_audit_.get());
    }
    error = parts_.backend->start();
  } catch (const std::exception& e) {
    error = std::string("threw: ") + e.what();
  } catch (...) {
    error = "threw an unknown exception";
  }
  if (!error.empty())
    throw std::runtime_error("agent '" + parts_.id + "': backend '" + parts_.backend_name +
                             "' failed to start: " + error);
  started_.store(true);
}

void ConfiguredAgent::shutdown() noexcept {
  std::call_once(shutdown_once_, [this] {
    shut_down_.store(true);
    // Every background shell ends (no grace) before the backend that runs them stops.
    if (background_) background_->close();
    if (!parts_.backend || !start_attempted_.load()) return;
    try {
      parts_.backend->stop();
    } catch (...) {
      spdlog::error("agent '{}': backend '{}' threw in stop()", parts_.id, parts_.backend_name);
    }
    try {
      parts_.backend->cleanup();
    } catch (...) {
      spdlog::error("agent '{}': backend '{}' threw in cleanup()", parts_.id, parts_.backend_name);
    }
    // After cleanup (its last events are recorded); before network_audit_ goes.
    if (network_events_ != nullptr) network_events_->subscribe(nullptr);
    if (secret_events_ != nullptr) secret_events_->subscribe(nullptr);
  });
}

std::vector<std::string> ConfiguredAgent::filter_names() const {
  std::vector<std::string> names;
  for (const auto& filter : parts_.filters) names.push_back(filter.name);
  return names;
}

sdk::ExecResult ConfiguredAgent::run_backend(sdk::ExecRequest& request) {
  sdk::ExecResult result;
  if (shut_down_.load()) {
    result.error = "agent '" + parts_.id + "' is shutting down";
    return result;
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    result = parts_.backend->execute(request);
  } catch (const std::exception& e) {
    result = {};
    result.error = "backend '" + parts_.backend_name + "' failed: " + e.what();
  } catch (...) {
    result = {};
    result.error = "backend '" + parts_.backend_name + "' failed with an unknown exception";
  }
  if (result.duration_seconds <= 0.0) result.duration_seconds = seconds_since(start);
  return result;
}

void ConfiguredAgent::set_user(std::string user_key) {
  std::lock_guard lock(user_mutex_);
  user_ = std::move(user_key);
}

void ConfiguredAgent::stamp(AuditRecord& record) const {
  record.agent_id = parts_.id;
  record.instance_id = parts_.instance_id;
  std::lock_guard lock(user_mutex_);
  record.user = user_;
}

void ConfiguredAgent::audit(AuditRecord record, const sdk::ExecResult& result) const {
  stamp(record);
  record.exit_code = result.exit_code;
  record.duration_seconds = result.duration_seconds;
  record.timed_out = result.timed_out;
  record.cancelled = result.cancelled;
  // A blocked command's error only repeats the reason.
  if (record.reason.empty()) record.error = result.error;
  parts_.audit->record(record);
}

void ConfiguredAgent::audit_command(const std::string& tool, const ExecuteArgs& args,
                                    std::string verdict, std::string reason,
                                    const sdk::ExecResult& result) const {
  AuditRecord record;
  record.tool = tool;
  record.principal = args.principal;
  record.command = args.command;
  record.work_dir = args.work_dir;
  record.verdict = std::move(verdict);
  record.reason = std::move(reason);
  if (!args.task.empty()) record.task = task_audit_reference(args.task);
  audit(std::move(record), result);
}

void ConfiguredAgent::audit_task(const TaskAuditEvent& event) {
  AuditRecord record;
  record.tool = "execute_command";
  record.principal = event.principal;
  record.command = event.command;
  record.verdict = event.verdict;
  record.task = task_audit_reference(event.task);
  stamp(record);
  parts_.audit->record(record);
}

void ConfiguredAgent::audit_network(const sdk::NetworkEvent& event) const {
  // A plugin's bytes, which came from the sandbox: bounded and escaped here too.
  constexpr std::size_t kHostMax = 512, kMethodMax = 32, kReasonMax = 512;
  AuditRecord record;
  record.tool = "egress";
  record.principal = "sandbox";  // the request came from inside it, not from a client
  record.verdict = event.refused ? "refused" : "allowed";
  record.remote_host = sdk::log_text(event.host, kHostMax);
  record.remote_port = event.port;
  record.method = sdk::log_text(event.method, kMethodMax);
  record.reason = sdk::log_text(event.reason, kReasonMax);
  if (event.dropped_before > 0)
    record.reason +=
        (record.reason.empty() ? "" : "; ") + std::to_string(event.dropped_before) +
        " earlier requests were refused but not reported (beyond the backend's budget)";
  stamp(record);
  parts_.audit->record(record);
}

void ConfiguredAgent::audit_secret(const sdk::SecretEvent& event) const {
  // A plugin's bytes, partly from the sandbox's request: bounded and escaped here too.
  constexpr std::size_t kHostMax = 512, kMethodMax = 32, kPathMax = 512, kNameMax = 128,
                        kDetailMax = 512;
  AuditRecord record;
  record.tool = "egress";
  record.principal = "sandbox";
  record.verdict = std::string(sdk::secret_event_verdict(event.kind));
  record.remote_host = sdk::log_text(event.host, kHostMax);
  record.method = sdk::log_text(event.method, kMethodMax);
  record.path = sdk::log_text(event.path, kPathMax);
  record.secret = sdk::log_text(event.secret, kNameMax);
  record.reason = sdk::log_text(event.detail, kDetailMax);
  if (event.dropped_before > 0)
    record.reason += (record.reason.empty() ? "" : "; ") + std::to_string(event.dropped_before) +
                     " earlier secret events were not reported (beyond the backend's budget)";
  stamp(record);
  parts_.audit->record(record);
}

ExecuteOutcome ConfiguredAgent::execute(const ExecuteArgs& args, sdk::OutputSink* sink,
                                        const sdk::CancelToken* cancel) {
  ExecuteOutcome outcome;
  const auto start = std::chrono::steady_clock::now();
  if (args.command.find_first_not_of(" \t\r\n") == std::string::npos) {
    outcome.result.error = "empty command";
    outcome.result.work_dir = lexical_work_dir(parts_.cwd, args.work_dir);
    audit_command("execute_command", args, "internal", {}, outcome.result);
    return outcome;
  }

  if (const auto denial = check_filters(args.command, args.work_dir)) {
    outcome.blocked = true;
    outcome.blocked_by = denial->filter;
    outcome.rule = denial->rule;
    outcome.reason = denial->reason;
    outcome.result.error = "blocked by the '" + denial->filter + "' filter (rule '" + denial->rule +
                           "'): " + denial->reason;
    outcome.result.duration_seconds = seconds_since(start);
    outcome.result.work_dir = lexical_work_dir(parts_.cwd, args.work_dir);
    audit_command("execute_command", args, "blocked:" + denial->filter + "/" + denial->rule,
                  denial->reason, outcome.result);
    return outcome;
  }

  sdk::ExecRequest request;
  request.command = args.command;
  request.work_dir = args.work_dir;
  request.output_cap = parts_.output_cap;
  request.sink = sink;
  request.cancel = cancel;
  request.timeout = parts_.timeout;
  std::string notice;
  if (args.timeout && args.timeout->count() > 0) {
    request.timeout = *args.timeout;
    if (request.timeout > parts_.max_timeout) {
      notice = "requested timeout " + format_seconds(*args.timeout) +
               " is above this agent's max_timeout; used " + format_seconds(parts_.max_timeout);
      request.timeout = parts_.max_timeout;
    }
  }
  outcome.output_cap = parts_.output_cap;
  outcome.result = run_backend(request);
  // Backends before ABI 2 (and any that did not run the command) leave it empty.
  if (outcome.result.work_dir.empty())
    outcome.result.work_dir = lexical_work_dir(parts_.cwd, args.work_dir);
  if (!notice.empty()) outcome.result.notices.push_back(notice);
  audit_command("execute_command", args, "allowed", {}, outcome.result);
  return outcome;
}

std::optional<ConfiguredAgent::Denial> ConfiguredAgent::check_filters(
    const std::string& command, const std::string& work_dir) const {
  const sdk::FilterRequest filter_request{parts_.id, command, work_dir};
  for (const auto& filter : parts_.filters) {
    sdk::FilterVerdict verdict;
    try {
      verdict = filter.filter->check(filter_request);
    } catch (...) {
      // A filter that cannot decide must not let the command through.
      verdict = sdk::FilterVerdict::deny("filter-error", "the '" + filter.name +
                                                             "' filter failed, so the command "
                                                             "was refused");
    }
    if (verdict.denied()) return Denial{filter.name, verdict.rule, verdict.reason};
  }
  return std::nullopt;
}

sdk::ExecResult ConfiguredAgent::run_internal(const std::string& command,
                                              const sdk::CancelToken* cancel,
                                              const std::string& principal) {
  sdk::ExecRequest request;
  request.command = command;
  request.timeout = parts_.timeout;
  request.output_cap = parts_.output_cap;
  request.cancel = cancel;
  auto result = run_backend(request);
  ExecuteArgs args;
  args.command = command;
  args.principal = principal;
  audit_command("read_docstring", args, "internal", {}, result);
  return result;
}

sdk::FileReadResult ConfiguredAgent::read_file(const sdk::FileReadRequest& request,
                                               const std::string& principal) {
  const auto start = std::chrono::steady_clock::now();
  sdk::FileReadResult result;
  try {
    result = parts_.backend->read_file(request);
  } catch (const std::exception& e) {
    result.error = "backend '" + parts_.backend_name + "' failed to read: " + e.what();
  } catch (...) {
    result.error = "backend '" + parts_.backend_name + "' failed to read";
  }
  AuditRecord record;
  record.tool = "read_file";
  record.principal = principal;
  record.path = request.path;
  record.verdict = "allowed";
  record.bytes = result.data.size();
  sdk::ExecResult outcome;
  outcome.exit_code = result.error.empty() ? 0 : 1;
  outcome.error = result.error;
  outcome.duration_seconds = seconds_since(start);
  audit(std::move(record), outcome);
  return result;
}

sdk::FileWriteResult ConfiguredAgent::write_file(const sdk::FileWriteRequest& request,
                                                 const std::string& principal) {
  const auto start = std::chrono::steady_clock::now();
  sdk::FileWriteResult result;
  try {
    result = parts_.backend->write_file(request);
  } catch (const std::exception& e) {
    result.error = "backend '" + parts_.backend_name + "' failed to write: " + e.what();
  } catch (...) {
    result.error = "backend '" + parts_.backend_name + "' failed to write";
  }
  AuditRecord record;
  record.tool = "write_file";
  record.principal = principal;
  record.path = request.path;
  record.verdict = "allowed";
  record.bytes = result.bytes_written;
  sdk::ExecResult outcome;
  outcome.exit_code = result.error.empty() ? 0 : 1;
  outcome.error = result.error;
  outcome.duration_seconds = seconds_since(start);
  audit(std::move(record), outcome);
  return result;
}

sdk::BackendTraits ConfiguredAgent::traits() const {
  try {
    return parts_.backend->traits();
  } catch (...) {
    return {};
  }
}

AgentCapabilities ConfiguredAgent::capabilities() const {
  return AgentCapabilities{background_ != nullptr};
}

BackgroundShellControl* ConfiguredAgent::background_shells() {
  return shells_.get();
}

sdk::SandboxControl* ConfiguredAgent::sandbox_control() const {
  return parts_.backend ? sdk::sandbox_control(*parts_.backend) : nullptr;
}

std::vector<std::string> plugin_settings_problems(const PluginRef& ref, sdk::PluginKind kind,
                                                  const PluginRegistry& registry) {
  std::vector<std::string> problems;
  for (const auto& p : registry.check_settings(ref.plugin, kind, ref.settings.dump())) {
    const auto source = ref.source_of(p.pointer);
    problems.push_back(source.location.str() + ": " + source.key_path + ": " + p.message);
  }
  return problems;
}

std::unique_ptr<ConfiguredAgent> build_agent(const Config& config, const AgentConfig& agent,
                                             const PluginRegistry& registry,
                                             const AgentBuildOptions& options) {
  if (!agent.mcp_enabled)
    throw ConfigError({agent.location.str() + ": agent '" + agent.id +
                       "' has enable_mcp_command_line turned off; set "
                       "`enable_mcp_command_line: true` in its backend to serve it"});
  if (options.touch_filesystem) {
    std::error_code ec;
    std::filesystem::create_directories(agent.cwd, ec);
    if (ec)
      throw ConfigError({agent.location.str() + ": agent '" + agent.id +
                         "': cannot create workspace '" + agent.cwd + "': " + ec.message()});
  }

  ConfiguredAgent::Parts parts;
  parts.id = agent.id;
  parts.instance_id = options.instance_id.empty() ? make_instance_id() : options.instance_id;
  parts.cwd = options.sandbox_cwd.empty() ? agent.cwd : options.sandbox_cwd;
  parts.backend_name = agent.backend.plugin;
  parts.timeout = agent.timeout;
  parts.max_timeout = agent.max_timeout;
  parts.output_cap = agent.output_cap;
  parts.background = agent.background;
  const std::string audit_file =
      options.audit_file.empty() ? config.audit_file : options.audit_file;
  try {
    // One writer per file, shared by every agent that names it.
    parts.audit = AuditLog::shared(options.touch_filesystem ? audit_file : "");
  } catch (const std::exception& e) {
    throw ConfigError({config.source_file + ": " + e.what()});
  }

  std::vector<std::string> problems;
  auto problem = [&](const PluginRef& ref, const std::string& message) {
    // An unknown plugin is the name's fault; anything else is about its settings.
    if (registry.find(ref.plugin) == nullptr && !ref.plugin_key_path.empty()) {
      problems.push_back(ref.plugin_location.str() + ": " + ref.plugin_key_path + ": " + message);
    } else {
      problems.push_back(ref.location.str() + ": " + ref.key_path + ": " + message);
    }
  };

  // A plugin checks its own settings before it is created (SDK 2.1), so each problem can name
  // the line the setting was written on.
  auto settings_ok = [&](const PluginRef& ref, sdk::PluginKind kind) {
    const auto found = plugin_settings_problems(ref, kind, registry);
    problems.insert(problems.end(), found.begin(), found.end());
    return found.empty();
  };

  for (const auto& ref : agent.filters) {
    if (!settings_ok(ref, sdk::PluginKind::Filter)) continue;
    parts.log_sinks.push_back(std::make_unique<SpdlogSink>(ref.plugin, agent.id));
    sdk::FilterInit init;
    init.agent_id = agent.id;
    init.settings_json = ref.settings.dump();
    init.log = parts.log_sinks.back().get();
    try {
      parts.filters.push_back({ref.plugin, registry.create_filter(ref.plugin, init)});
    } catch (const std::exception& e) {
      problem(ref, e.what());
    }
  }

  sdk::BackendInit init;
  init.agent_id = agent.id;
  init.instance_id = parts.instance_id;
  init.cwd = agent.cwd;
  init.sandbox_cwd = options.sandbox_cwd;
  init.paths.push_back({agent.cwd, true});
  for (const auto& context : agent.context_paths)
    init.paths.push_back({context.path, context.writable, context.protected_paths});
  if (!agent.skills_dir.empty()) init.paths.push_back({agent.skills_dir, false});
  if (!agent.temp_workspace.empty()) init.paths.push_back({agent.temp_workspace, false});
  init.tools_dir = agent.tools_dir;
  init.skills_dir = agent.skills_dir;
  init.temp_workspace = agent.temp_workspace;
  init.log_dir = config.log_dir;
  init.settings_json = agent.backend.settings.dump();
  parts.log_sinks.push_back(std::make_unique<SpdlogSink>(agent.backend.plugin, agent.id));
  init.log = parts.log_sinks.back().get();
  try {
    if (settings_ok(agent.backend, sdk::PluginKind::Backend))
      parts.backend = registry.create_backend(agent.backend.plugin, init);
  } catch (const std::exception& e) {
    problem(agent.backend, e.what());
  }
  if (!problems.empty()) throw ConfigError(std::move(problems));
  return std::make_unique<ConfiguredAgent>(std::move(parts));
}

}  // namespace execmcp::host
