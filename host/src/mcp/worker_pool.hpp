// A fixed set of threads that run queued tasks (MCP tool calls); owned, stopped and joined.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace execmcp::host::mcp {

class WorkerPool {
 public:
  explicit WorkerPool(std::size_t threads);
  ~WorkerPool();  // same as shutdown()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a task; it runs when a thread is free. Tasks must not throw.
  void submit(std::function<void()> task);
  // Queues the task only if a thread is idle to start it at once (more idle threads than queued
  // tasks); returns false, and does nothing, otherwise or after shutdown.
  bool submit_if_idle(std::function<void()> task);
  // Runs every task already queued, then joins the threads. Later submits run inline.
  void shutdown();

 private:
  void work();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::size_t idle_ = 0;  // threads waiting for a task
  std::vector<std::thread> threads_;
};

}  // namespace execmcp::host::mcp
