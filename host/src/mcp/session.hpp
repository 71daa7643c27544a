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
#include "mcp/json_rpc.hpp"
#include "mcp/outbox.hpp"
#include "mcp/progress_reporter.hpp"
#include "mcp/stdio_server.hpp"
#include "mcp/transport.hpp"
#include "mcp/worker_pool.hpp"
#include "tools/tool.hpp"

namespace execmcp::host::mcp {

// Protocol versions we speak, newest first.
inline constexpr const char* kSupportedProtocolVersions[] = {"2025-06-18", "2025-03-26",
                                                             "2024-11-05"};

// One thread at a time reads requests and answers ping, initialize, tools/list and cancellation
// itself. For tools/call it hands the reading over to an idle thread of the pool and runs the call
// itself, so a call starts without waiting for another thread to wake up; with no idle thread the
// call is queued instead and the reader keeps reading. At most options.max_concurrent_calls calls
// run at once: the pool has one thread more than that, and one thread is always the reader.
class Session {
 public:
  Session(Agent& agent, Transport& transport, ServerOptions options);
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
  struct Call {
    sdk::CancelToken cancel;
    std::atomic<bool> cancelled_by_client{false};
  };

  void read_messages();          // the reader's loop; returns at end of input or after a hand-off
  bool finishing_calls() const;  // at end of input: let received calls finish?
  void send(const nlohmann::json& message);           // a response: never dropped
  void send_progress(const nlohmann::json& message);  // may be dropped when the client lags
  void on_peer_gone();
  void register_handlers();
  RpcOutcome handle_initialize(const Request& request);
  RpcOutcome handle_tools_list(const Request& request);
  void handle_tools_call(Request request, Responder responder);
  void run_tool_call(const tools::Tool& tool, const Request& request,
                     const std::shared_ptr<Call>& call, const Responder& responder);
  void handle_cancelled(const Notification& notification);
  void cancel_all();

  Agent& agent_;
  Transport& transport_;
  const ServerOptions options_;
  const std::vector<tools::Tool> tools_;
  Dispatcher dispatcher_;

  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> write_failed_{false};
  std::atomic<bool> initialized_{false};

  std::mutex calls_mutex_;
  std::unordered_map<std::string, std::shared_ptr<Call>> calls_;  // key: id.dump()
  bool shutting_down_ = false;                                    // guarded by calls_mutex_

  std::mutex input_mutex_;
  std::condition_variable input_ended_cv_;
  bool input_ended_ = false;  // guarded by input_mutex_

  // One per call that may run at once. The pool has a thread more than that (the reader), and
  // after the end of input the reader's thread can take a queued call too: the slots keep the
  // limit exact then.
  std::counting_semaphore<1024> call_slots_;
  std::atomic<std::size_t> queued_calls_{0};  // waiting for a slot on the pool's queue

  // Outlives the ticker and the pool below, which post to it.
  Outbox outbox_;
  // Declared last: destroyed (stopped and joined) first, while everything above is alive.
  ProgressTicker ticker_;
  WorkerPool pool_;
};

}  // namespace execmcp::host::mcp
