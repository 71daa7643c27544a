// A test helper for the local backend's race tests: a thread that swaps two names until stopped.
#pragma once

#include <fcntl.h>
#include <stdio.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <utility>

namespace execmcp::test {

// Swaps two names (RENAME_EXCHANGE, atomic) as fast as it can on its own thread until stopped:
// a directory and a symlink out, for the race tests.
class SwapWhileAlive {
 public:
  SwapWhileAlive(std::filesystem::path a, std::filesystem::path b)
      : a_(std::move(a)), b_(std::move(b)), thread_([this] {
          while (!done_.load())
            ::renameat2(AT_FDCWD, a_.c_str(), AT_FDCWD, b_.c_str(), RENAME_EXCHANGE);
        }) {}
  ~SwapWhileAlive() { stop(); }
  void stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::filesystem::path a_, b_;
  std::atomic<bool> done_{false};
  std::thread thread_;  // last: starts once the paths and the flag exist
};

}  // namespace execmcp::test
