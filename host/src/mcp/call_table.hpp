// The tools/call requests in progress on one transport (or one of its sessions): what a client's
// cancel, a session's end and the server's shutdown reach. One type for every transport.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "execmcp/sdk/types.hpp"

namespace execmcp::host::mcp {

// One tools/call in progress: what a cancel reaches. Shared by every table the call is in.
struct CallState {
  sdk::CancelToken cancel;
  std::atomic<bool> cancelled_by_client{false};

  // The client gave up on the call (notifications/cancelled, or closed the stream): it is
  // stopped and, as MCP says, answered with nothing.
  void cancel_by_client() {
    cancelled_by_client.store(true);
    cancel.request_cancel();
  }
};

// Calls keyed by the client's request id (JSON-RPC id.dump()), so one client's ids never reach
// another client's calls; a table that only needs shutdown keys them by anything unique. A call
// is in the table from add() until done(); its key may name another call from release() on
// (the transport releases it just before the response goes out, so a client that reuses the id
// at once is not refused). Thread safe.
class CallTable {
 public:
  CallTable() = default;
  CallTable(const CallTable&) = delete;
  CallTable& operator=(const CallTable&) = delete;

  // Adds `state` under `key`; false (nothing added) when `key` names a call not released yet.
  // After cancel_all() the call is cancelled as it is added.
  bool add(const std::string& key, const std::shared_ptr<CallState>& state);
  // `key` no longer names this call (a later call may use it); a no-op when it names another.
  void release(const std::string& key, const CallState& state);
  // The call is over (answered, or dropped): wait_idle() no longer waits for it. Releases too.
  void done(const std::string& key, const CallState& state);

  // The client's notifications/cancelled for `key`; false when no such call is running.
  bool cancel(const std::string& key);
  // Cancels every call, now and as they are added (session end, shutdown).
  void cancel_all();
  [[nodiscard]] bool stopping() const;

  // No call added and not done.
  [[nodiscard]] bool empty() const;
  // Until empty(), or `timeout` passed (none: no limit); true when empty.
  bool wait_idle(std::optional<std::chrono::milliseconds> timeout = std::nullopt);

 private:
  // release() with mutex_ held.
  void release_locked(const std::string& key, const CallState& state);

  mutable std::mutex mutex_;
  std::condition_variable idle_cv_;
  std::unordered_map<std::string, std::shared_ptr<CallState>> by_key_;
  std::unordered_map<const CallState*, std::shared_ptr<CallState>> open_;
  bool stopping_ = false;
};

}  // namespace execmcp::host::mcp
