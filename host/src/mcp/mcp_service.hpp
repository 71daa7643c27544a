// What every transport shares: what the MCP methods (initialize, server/discover, tools/list,
// tools/call) do for any agent and caller, the tool-call workers and the limits on them. Which
// method a request is, and in which revision, is the router's (mcp_router.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/agent.hpp"
#include "execmcp/sdk/types.hpp"
#include "mcp/call_table.hpp"
#include "mcp/json_rpc.hpp"
#include "mcp/progress_reporter.hpp"
#include "mcp/protocol.hpp"
#include "mcp/tasks/task_service.hpp"
#include "mcp/worker_pool.hpp"
#include "tools/tool.hpp"

namespace execmcp::host::mcp {

// JSON-RPC's range for server errors: too many calls running or waiting.
inline constexpr int kServerBusy = -32000;

// Who asks, for which agent, in which protocol revision. Built by the transport for every message:
// the agent comes from the operator (stdio: serve --agent; HTTP: the URL, checked against the
// credentials), never from the message.
struct CallerContext {
  Agent* agent = nullptr;
  std::string principal;         // "stdio", or the name of the token / JWT subject
  std::string protocol_version;  // negotiated (initialize) or this request's _meta
  std::string client;            // "name version" when the client said, for logs
  // Keeps `agent` alive while the request and its call run (a per-user sandbox's record).
  std::shared_ptr<Agent> hold;
  // The agent id the request was addressed to (HTTP: the URL's; empty: agent->id()) and a
  // per-user agent's user: with the principal, who owns the tasks this caller creates.
  std::string endpoint{};
  std::string user_key{};
  // false when every caller looks alike (HTTP without authentication): tasks/list is not offered.
  bool identified = true;
  // 2026-07-28: this request's _meta declares the extension io.modelcontextprotocol/tasks.
  bool tasks_extension = false;
};

// Who owns the tasks `caller` creates, and the only one who may see them.
[[nodiscard]] tasks::TaskOwner task_owner(const CallerContext& caller);

// A per-user agent's user with no bound set (neither per_user.max_calls_per_user nor
// --max-calls-per-agent) may hold 1/kUserShareOfWorkers of the workers, running or waiting. A user
// at that bound never needs the queue and leaves three quarters of the workers to everyone else;
// it takes four users at their bound to fill the workers. serve --http's 64 workers give 16 calls
// per user: more than an agent loop runs at once.
inline constexpr std::size_t kUserShareOfWorkers = 4;

struct ServiceOptions {
  std::string server_name = "execmcp";
  std::string server_version;
  std::size_t max_concurrent_calls = 8;  // running at once, over all agents
  std::size_t max_queued_calls = 16;     // waiting for a slot, over all agents
  std::size_t max_calls_per_agent = 0;   // running or waiting per agent; 0: no own limit
  // (Each user's of a per-user agent, like per_user.max_calls_per_user: the lower applies.)
  tasks::TaskServiceOptions tasks;  // MCP tasks (2025-11-25): caps, TTLs, runner threads
};

class McpService {
 public:
  using SendProgress = std::function<void(const nlohmann::json& notification)>;

  // One tools/call handed to call_tool(). `finished` runs exactly once, just before the response
  // is sent or dropped (the transport forgets the id's cancel state then, so a later request
  // reusing the id is its own); `answered` runs exactly once, just after.
  struct ToolCall {
    CallerContext caller;
    Request request;
    Responder responder;
    std::shared_ptr<CallState> state;
    SendProgress send_progress;  // empty: progress is not sent
    // Optional: asked once a slot is free; true means the calling thread may run the call itself
    // (stdio's reader hands reading to an idle worker first). Never called for a queued call.
    std::function<bool()> run_here;
    std::function<void()> finished;
    std::function<void()> answered;
  };

  explicit McpService(ServiceOptions options,
                      std::vector<tools::Tool> tools = tools::make_builtin_tools());
  ~McpService();  // shutdown()
  McpService(const McpService&) = delete;
  McpService& operator=(const McpService&) = delete;

  // initialize (2024-11-05 .. 2025-11-25): negotiates, stores the revision in caller, answers.
  [[nodiscard]] RpcOutcome initialize(const Request& request, CallerContext& caller) const;
  // server/discover (2026-07-28, and harmless for older clients): what this server speaks.
  [[nodiscard]] RpcOutcome discover(const CallerContext& caller) const;
  [[nodiscard]] RpcOutcome tools_list(const CallerContext& caller) const;

  // `name` when it is a tool `agent` is offered, else "unknown": what metrics label a call by, so
  // a client's made-up names add no series.
  [[nodiscard]] std::string tool_label(const Agent& agent, const std::string& name) const;

  // Validates, then runs the call on a worker (or on the calling thread, see run_here), within
  // the limits: past them it is answered kServerBusy at once. Answers exactly once, whatever
  // throws. Never blocks on the call.
  void call_tool(ToolCall call);

  // A tools/call that becomes a task: 2025-11-25's with params.task, or (2026-07-28) one whose
  // _meta declares the tasks extension. Validated as call_tool() validates, then made a
  // task whose work runs on the task runner; answered at once with CreateTaskResult (or the
  // error). `notify` (may be empty) carries the task's status and progress notifications.
  // 2026-07-28's --task-after window: the transport's record of the request while it is still a
  // call (its cancel: notifications/cancelled, or a closed stream), and its callbacks, run once
  // around the answer as for a call. Empty: nothing to watch (2025-11-25, or no window).
  struct WindowCall {
    std::shared_ptr<CallState> state;
    std::function<void()> finished;
    std::function<void()> answered;
  };
  void call_tool_as_task(const Request& request, const Responder& responder,
                         const CallerContext& caller, const SendProgress& notify,
                         WindowCall window = {});

  // tasks/result of the task `id` (its owner checked): from now on the task's status and
  // progress notifications go to `stream`, that request's own answer (HTTP: its event stream),
  // instead of where the creating request said (stdio: the session; HTTP: nowhere). A stream
  // that has answered drops them.
  void stream_task_to(const std::string& id, SendProgress stream);

  [[nodiscard]] tasks::TaskService& tasks() { return tasks_; }
  // The tool `name` as `agent` is offered it; nullptr when it has none by that name.
  [[nodiscard]] const tools::Tool* find_tool(const Agent& agent, const std::string& name) const;

  // A 2026-07-28 result carries resultType and the server's info in _meta; a list that clients
  // may cache (server/discover, tools/list) also says for how long. Others are left as they are.
  [[nodiscard]] nlohmann::json finish_result(nlohmann::json result, const CallerContext& caller,
                                             bool cacheable) const;

  // Runs work on the pool (the stdio reader loop uses it). Tasks must not throw.
  void submit(std::function<void()> task) { pool_.submit(std::move(task)); }
  bool submit_if_idle(std::function<void()> task) { return pool_.submit_if_idle(std::move(task)); }

  // Cancels the tasks and joins their threads; runs every queued call, joins the workers, stops
  // the progress ticker. Calls still running are not cancelled here: each transport cancels its
  // own.
  void shutdown();

  [[nodiscard]] std::size_t call_limit() const { return call_limit_; }
  // How many calls `limit`'s key may have running or waiting (0: no bound of its own), and which
  // setting says so.
  struct KeyBound {
    std::size_t calls = 0;
    std::string set_by;
  };
  [[nodiscard]] KeyBound bound_for(const CallLimit& limit) const;
  [[nodiscard]] const ServiceOptions& options() const { return options_; }
  [[nodiscard]] std::size_t calls_in_flight() const { return in_flight_.load(); }

 private:
  class Admission;  // a slot and the per-agent count, released by its destructor
  [[nodiscard]] nlohmann::json server_info() const;
  void run_call(ToolCall& call, const tools::Tool& tool) noexcept;
  // 2026-07-28: answers the task `id`'s call as a plain result if it ends within the
  // --task-after window, else with CreateTaskResult when the window ends.
  void answer_in_window(const std::string& id, const Responder& responder,
                        const CallerContext& caller, const nlohmann::json& params,
                        WindowCall window);
  // Every 50 ms until the window ends: a call its client cancelled cancels its task.
  void watch_window(const std::string& id, const tasks::TaskOwner& owner,
                    std::shared_ptr<CallState> state, std::shared_ptr<std::atomic<bool>> answered,
                    std::chrono::steady_clock::time_point until, int checks_left);
  // The name and arguments are a tools/call's (else the error to answer with); `tool` set.
  [[nodiscard]] std::optional<RpcError> check_call(const Request& request, const Agent& agent,
                                                   const tools::Tool*& tool) const;
  // Runs `tool` with the request's arguments: its CallToolResult, or the JSON-RPC error.
  // `task`: the id of the MCP task it runs for ("" for a plain call), for the audit trail.
  [[nodiscard]] RpcOutcome invoke(const tools::Tool& tool, const CallerContext& caller,
                                  const nlohmann::json& params, sdk::OutputSink* sink,
                                  const sdk::CancelToken* cancel,
                                  const std::string& task = {}) const;
  // finished, then the response (or nothing, for a call the client cancelled), then answered.
  static void complete(ToolCall& call, RpcOutcome outcome) noexcept;
  // Counts a call for `key` unless it already has `bound` (0: no bound).
  [[nodiscard]] bool admit_agent(const std::string& key, std::size_t bound);
  void release_agent(const std::string& agent_id);

  const ServiceOptions options_;
  const std::size_t call_limit_;
  const std::vector<tools::Tool> tools_;

  std::counting_semaphore<1024> call_slots_;
  std::atomic<std::size_t> queued_calls_{0};
  std::atomic<std::size_t> in_flight_{0};  // admitted and not finished (running or queued)
  std::mutex agents_mutex_;
  std::unordered_map<std::string, std::size_t> per_agent_;  // admitted calls per agent

  // Where each task's notifications go (stream_task_to): one relay per task, kept alive by the
  // task's work and status listener; the map holds it weakly, by task id.
  class TaskNotifier;
  std::mutex notifiers_mutex_;
  std::unordered_map<std::string, std::weak_ptr<TaskNotifier>> notifiers_;

  // Declared last: destroyed (stopped and joined) first, while everything above is alive.
  ProgressTicker ticker_;
  WorkerPool pool_;
  tasks::TaskService tasks_;  // its runner calls invoke(): stopped before the rest
};

}  // namespace execmcp::host::mcp
