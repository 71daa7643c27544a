// Worker threads for tool calls (see worker_pool.hpp).
#include "mcp/worker_pool.hpp"

#include <algorithm>

namespace execmcp::host::mcp {

WorkerPool::WorkerPool(std::size_t threads) {
  threads = std::max<std::size_t>(threads, 1);
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() {
  shutdown();
}

void WorkerPool::submit(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      queue_.push_back(std::move(task));
      cv_.notify_one();
      return;
    }
  }
  task();  // after shutdown nobody would run it; running it here keeps "every call is answered"
}

bool WorkerPool::submit_if_idle(std::function<void()> task) {
  std::lock_guard lock(mutex_);
  if (stopping_ || idle_ <= queue_.size()) return false;
  queue_.push_back(std::move(task));
  cv_.notify_one();
  return true;
}

void WorkerPool::shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

void WorkerPool::work() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      ++idle_;
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      --idle_;
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace execmcp::host::mcp
