// The outbound side of a session: a bounded queue of serialised messages and the one thread that
// writes them, so no caller (reader, tool call, progress) ever waits on the peer.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "transport/stdio/transport.hpp"

namespace execmcp::host::mcp {

// Posting never blocks. Responses are never dropped: while the session lives every response is
// queued and written in order. A peer that lets more than max_bytes pile up (one response alone
// may be larger: it is accepted when nothing else waits) is treated like one
// that closed its end (on_failure runs, the session ends and cancels its calls): keeping the
// session alive would mean either dropping a response, which the client would wait for forever,
// or growing without bound. Progress notifications are advisory and are dropped instead, once
// more than max_droppable_bytes wait; every later notification still carries the total byte count.
class Outbox {
 public:
  static constexpr std::size_t kDefaultMaxBytes = 64 * 1024 * 1024;
  static constexpr std::size_t kDefaultMaxDroppableBytes = 1024 * 1024;

  struct Limits {
    std::size_t max_bytes = kDefaultMaxBytes;
    std::size_t max_droppable_bytes = kDefaultMaxDroppableBytes;
  };
  // Runs once, on the writer thread or on a posting thread, when the peer is gone (a failed
  // write) or too far behind (max_bytes). Must not block.
  using OnFailure = std::function<void()>;

  Outbox(Transport& transport, Limits limits, OnFailure on_failure);
  ~Outbox();  // stop(0)
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Queues one message line (without its newline). Thread safe; after failure or stop() the line
  // is discarded (nobody can receive it).
  void post_response(std::string line);
  // Queues a message that may be dropped; false if it was.
  bool post_droppable(std::string line);

  // Waits up to `grace` for everything queued to be written, then interrupts a write the peer is
  // not reading (Transport::abort_writes), discards the rest and joins the writer. Idempotent.
  void stop(std::chrono::milliseconds grace);

  [[nodiscard]] std::size_t dropped() const;

 private:
  void run();
  // Writes a short line on the posting thread when that cannot block: no wake-up of the writer.
  bool write_now_locked(std::string_view line);
  // Marks the peer gone, discards the queue and runs on_failure (without the lock held).
  void fail_locked(std::unique_lock<std::mutex>& lock, const std::string& why);

  Transport& transport_;
  const Limits limits_;
  const OnFailure on_failure_;

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;     // the writer waits for lines or stop
  std::condition_variable drained_cv_;  // stop() waits for an empty queue
  std::deque<std::string> queue_;
  std::size_t queued_bytes_ = 0;  // includes the line being written
  bool writing_ = false;
  bool failed_ = false;
  bool stopping_ = false;
  std::size_t dropped_ = 0;
  std::thread writer_;  // last: started once everything above exists
};

}  // namespace execmcp::host::mcp
