// One MCP session: lifecycle (initialize, ping), tools/list and tools/call over a Transport.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/agent.hpp"
#include "mcp/call_table.hpp"
#include "mcp/json_rpc.hpp"
#include "mcp/mcp_router.hpp"
#include "mcp/mcp_service.hpp"
#include "mcp/progress_reporter.hpp"
#include "mcp/worker_pool.hpp"
#include "tools/tool.hpp"
#include "transport/stdio/outbox.hpp"
#include "transport/stdio/stdio_server.hpp"
#include "transport/stdio/transport.hpp"

namespace execmcp::host::mcp {

// The stdio service's limits, from the serve options.
[[nodiscard]] ServiceOptions service_options(const ServerOptions& options);

// One client on one newline-delimited stream (stdio), for one agent: framing, the revision its
// initialize negotiated, its calls; the methods are the router's. One thread at a time reads
// requests and answers every method but tools/call itself (through the router). For
// tools/call it hands the reading over to an idle thread of the service's pool and runs the call
// itself, so a call starts without waiting for another thread to wake up; with no idle thread the
// call is queued instead and the reader keeps reading. The service's limits apply (its pool has
// one thread more than its call limit: one thread is always the reader).
//
// Each request is served in the revision it names: a 2026-07-28 request carries it in _meta and
// needs no initialize; other requests use the revision initialize negotiated.
class Session {
 public:
  // With its own McpService built from `options`.
  Session(Agent& agent, Transport& transport, ServerOptions options);
  // On a shared service (which must outlive the session). The session's end cancels the
  // service's tasks and waits for them (a stdio client's tasks end with it).
  Session(Agent& agent, Transport& transport, ServerOptions options, McpService& service);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Serves until end of input, a write failure (or a client too far behind) or request_stop();
  // then cancels every running call (unless the input ended and options.finish_calls_on_eof asks
  // to let them finish), waits for all of them, gives the client options.shutdown_grace to read
  // their responses and returns the exit code. Never waits longer on a client that does not read.
  int run();

  // Thread safe (the signal thread calls it): cancels every call and ends run() as soon as they
  // are done.
  void request_stop();

 private:
  Session(Agent& agent, Transport& transport, ServerOptions options, McpService* shared,
          std::unique_ptr<McpService> owned);

  void read_messages();          // the reader's loop; returns at end of input or after a hand-off
  bool finishing_calls() const;  // at end of input: let received calls finish?
  void send(const nlohmann::json& message);           // a response: never dropped
  void send_progress(const nlohmann::json& message);  // may be dropped when the client lags
  void on_peer_gone();
  void register_handlers();
  // Hands one request to the router with what this session knows: its agent and revision.
  void route(Request request, Responder responder);
  // tools/call: the call joins calls_; it hands reading over when it can run on this thread.
  std::optional<CallHooks> start_call(const Request& request);

  Agent& agent_;
  Transport& transport_;
  const ServerOptions options_;
  std::unique_ptr<McpService> owned_service_;
  McpService* service_;
  McpRouter router_;
  Dispatcher dispatcher_;

  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> write_failed_{false};
  std::atomic<bool> warned_no_initialize_{false};

  std::mutex caller_mutex_;
  CallerContext caller_;  // guarded by caller_mutex_; protocol_version set by initialize

  // Calls handed to the service and not answered yet, by id (what notifications/cancelled
  // reaches); shutdown cancels them all and waits for their answers.
  CallTable calls_;

  std::mutex input_mutex_;
  std::condition_variable input_ended_cv_;
  bool input_ended_ = false;         // guarded by input_mutex_
  std::size_t threads_reading_ = 0;  // threads inside read_messages(); guarded by input_mutex_

  // Outlives the calls, which post to it (the destructor waits for them first).
  Outbox outbox_;

  // What tasks notify through (their status, their progress). A task may outlive the session
  // when the service is shared: the gate is closed first thing in the destructor, and a closed
  // gate drops what it gets.
  struct NotifyGate {
    std::mutex mutex;
    Session* session = nullptr;  // guarded by mutex; nullptr once closed
  };
  std::shared_ptr<NotifyGate> notify_gate_ = std::make_shared<NotifyGate>();
};

}  // namespace execmcp::host::mcp
