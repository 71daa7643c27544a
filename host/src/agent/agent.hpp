// The seam between the MCP/tools layer and everything behind it (filters, backend, audit).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "agent/background_shell_control.hpp"

#include "execmcp/sdk/executor_backend.hpp"
#include "execmcp/sdk/types.hpp"

namespace execmcp::host {

// Where an agent's backend is (LazyAgent), as GET /ready and /metrics report it.
enum class AgentState { kNotStarted, kStarting, kStarted, kFailed };

struct ExecuteArgs {
  std::string command;
  std::optional<std::chrono::milliseconds> timeout;  // none: the agent's default
  std::string work_dir;                              // empty: the agent's cwd
  std::string principal;  // who asked (token name, "stdio", "cli"): for the audit trail
  // The id of the MCP task this command runs for ("" for a plain call); its audit record carries
  // task_audit_reference(task), never the id.
  std::string task{};
};

// What happened to an MCP task, for the audit trail (its command's own record comes from
// execute() when it ends, with ExecuteArgs::task).
struct TaskAuditEvent {
  std::string verdict;    // "task:created", "task:cancelled"
  std::string task;       // the task's id (recorded as task_audit_reference)
  std::string principal;  // who asked
  std::string command;    // "task created": the command it will run
};

struct ExecuteOutcome {
  sdk::ExecResult result;
  // Set when a filter denied the command; then nothing was executed.
  bool blocked = false;
  std::string blocked_by;  // filter name, e.g. "sanitize"
  std::string rule;        // the rule that matched
  std::string reason;      // one sentence for the agent
  // The agent's per-stream output cap; execute_command also bounds each stream's rendered
  // (JSON-escaped) size by it.
  std::size_t output_cap = sdk::kDefaultOutputCap;
};

// What an agent offers beyond commands and files (it decides which tools it gets).
struct AgentCapabilities {
  bool background = false;  // background shells: the backend offers execmcp.background/1
};

// What the service counts an agent's calls (running or waiting) by, and how many it allows.
struct CallLimit {
  std::string key;  // the agent's id, or "<agent>/<user key>" for a per-user agent's user
  // A per-user agent's user: bounded even without --max-calls-per-agent (one user's share of the
  // workers every user shares).
  bool per_user = false;
  std::size_t max_calls = 0;  // per_user.max_calls_per_user; 0: not set (the server's default)
};

// One configured agent: its filter chain, its backend, its limits, its audit log.
// Thread-safe: the MCP layer calls it from several request threads at once. Never throws on the
// request path; failures come back inside the outcome / result.
class Agent {
 public:
  virtual ~Agent() = default;

  [[nodiscard]] virtual const std::string& id() const = 0;
  [[nodiscard]] virtual const std::string& cwd() const = 0;
  // How the service bounds this agent's calls (McpService::call_tool): by the agent; a per-user
  // agent's sandbox counts each user's own, bounded by default: no user takes another's share.
  [[nodiscard]] virtual CallLimit call_limit() const { return CallLimit{id()}; }

  // Filters, then the backend; applies the agent's default timeout and output cap; writes one
  // audit line (agent, command, verdict, exit code, duration).
  virtual ExecuteOutcome execute(const ExecuteArgs& args, sdk::OutputSink* sink,
                                 const sdk::CancelToken* cancel) = 0;

  // For commands the host builds itself (read_docstring): the backend only, no filters; audited
  // with verdict "internal".
  virtual sdk::ExecResult run_internal(const std::string& command, const sdk::CancelToken* cancel,
                                       const std::string& principal) = 0;

  // Each audited (tool, path, outcome, who asked).
  virtual sdk::FileReadResult read_file(const sdk::FileReadRequest& request,
                                        const std::string& principal) = 0;
  virtual sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request,
                                          const std::string& principal) = 0;

  [[nodiscard]] virtual sdk::BackendTraits traits() const = 0;

  // One audit record of a task's event, with the agent's (and a per-user sandbox's user's) stamp.
  virtual void audit_task(const TaskAuditEvent& /*event*/) {}

  // Known without starting the backend (tools/list asks it).
  [[nodiscard]] virtual AgentCapabilities capabilities() const { return {}; }

  // Background shells (MassGen's tools), when capabilities().background; nullptr otherwise. Like
  // sdk::ExecutorBackend::query_interface: asked per call, the answer lives as long as the agent.
  virtual BackgroundShellControl* background_shells() { return nullptr; }
};

}  // namespace execmcp::host
