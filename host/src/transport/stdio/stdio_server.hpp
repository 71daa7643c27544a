// Entry point: serve MCP over stdin/stdout for one agent until EOF or SIGINT/SIGTERM.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "agent/agent.hpp"
#include "mcp/json_rpc.hpp"
#include "transport/stdio/outbox.hpp"

namespace execmcp::host::mcp {

struct ServerOptions {
  std::string server_name = "execmcp";
  std::string server_version;
  std::size_t max_concurrent_calls = 8;
  // At end of input, let the calls already received run to completion and answer them, instead of
  // cancelling them (MCP's shutdown). SIGINT/SIGTERM still cancel everything.
  bool finish_calls_on_eof = false;
  // What one incoming message may cost (serve --max-message-bytes, --max-message-values).
  MessageLimits limits;
  // Tool calls that may wait for a free slot; one more is answered "server busy" at once, so a
  // client cannot park unbounded requests (each up to limits.max_bytes) in memory.
  std::size_t max_queued_calls = 16;  // serve --max-queued-calls
  // Outbound messages not yet read by the client (serve --max-outbound-bytes): past it, progress is
  // dropped (Outbox::kDefaultMaxDroppableBytes) and then the session ends (see Outbox).
  std::size_t max_outbound_bytes = Outbox::kDefaultMaxBytes;
  // How long shutdown waits for the client to read the last responses before it exits anyway.
  std::chrono::milliseconds shutdown_grace{2000};
  // MCP tasks (2025-11-25): live tasks one principal may hold (serve --max-tasks-per-principal),
  // the longest a task is kept (--max-task-ttl; also the default TTL), tasks running at once
  // (--max-running-tasks).
  std::size_t max_tasks_per_principal = 32;
  std::chrono::milliseconds max_task_ttl = std::chrono::hours(6);
  std::size_t max_running_tasks = 8;
  // 2026-07-28's tasks extension: a command still running after this long becomes a task; one
  // that ends sooner is answered directly (serve --task-after; 0: always a task).
  std::chrono::milliseconds task_after{1000};
};

// Serves MCP on stdin/stdout for `agent` until EOF on stdin or SIGINT/SIGTERM; then cancels the
// running commands (at EOF with finish_calls_on_eof: lets them finish), answers them if the client
// reads them within options.shutdown_grace, joins every thread and returns the process exit code
// (0). SIGPIPE does not kill the process (a write error ends serving).
int serve_stdio(Agent& agent, const ServerOptions& options);

}  // namespace execmcp::host::mcp
