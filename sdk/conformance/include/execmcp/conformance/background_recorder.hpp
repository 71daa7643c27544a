// A BackgroundObserver for tests: records what a backend tells the host about one background
// process and flags every break of the observer contract (execmcp/sdk/background_processes.hpp).
//
// The conformance kit's background cases use it; a backend's own tests may too:
//
//   execmcp::conformance::BackgroundRecorder recorder;
//   auto started = processes.start_background(request, &recorder);
//   ASSERT_TRUE(recorder.wait_exit(30s));
//   EXPECT_EQ(recorder.breach(), "");
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>

#include "execmcp/sdk/background_processes.hpp"

namespace execmcp::conformance {

class BackgroundRecorder final : public sdk::BackgroundObserver {
 public:
  // Keeps at most `bytes` of each stream's text (every byte is still counted); the default keeps
  // enough for any assertion on text while a flood cannot grow the test's memory without bound.
  explicit BackgroundRecorder(std::size_t keep_per_stream = std::size_t{1} << 20)
      : keep_per_stream_(keep_per_stream) {}

  void on_output(sdk::StreamKind stream, std::string_view bytes) noexcept override {
    enter("on_output");
    std::lock_guard lock(mutex_);  // notify included, as in on_exit()
    if (exits_ > 0) note("on_output() after on_exit()");
    bytes_ += bytes.size();
    std::string& text = stream == sdk::StreamKind::Stdout ? out_ : err_;
    if (text.size() < keep_per_stream_)
      text.append(bytes.substr(0, keep_per_stream_ - text.size()));
    leave();
    changed_.notify_all();
  }

  void on_exit(const sdk::BackgroundExit& exit) noexcept override {
    enter("on_exit");
    // Everything, the notify included, under the lock: a waiter wakes only once this call no
    // longer touches the object, so a test may destroy the recorder as soon as wait_exit()
    // returns (the contract lets the host free the observer once on_exit() has returned).
    std::lock_guard lock(mutex_);
    if (++exits_ > 1) note("on_exit() called " + std::to_string(exits_) + " times");
    exit_ = exit;
    leave();
    changed_.notify_all();
  }

  // True once on_exit() came, false when `limit` passed first.
  bool wait_exit(std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return exits_ > 0; });
  }
  // True once stdout holds `text`; false when `limit` passed or the process ended without it.
  bool wait_output(const std::string& text,
                   std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, limit,
                      [&] { return out_.find(text) != std::string::npos || exits_ > 0; });
    return out_.find(text) != std::string::npos;
  }

  int exits() {
    std::lock_guard lock(mutex_);
    return exits_;
  }
  sdk::BackgroundExit exit() {
    std::lock_guard lock(mutex_);
    return exit_;
  }
  std::string out() {
    std::lock_guard lock(mutex_);
    return out_;
  }
  std::string err() {
    std::lock_guard lock(mutex_);
    return err_;
  }
  // Every byte delivered, kept or not.
  std::size_t bytes() {
    std::lock_guard lock(mutex_);
    return bytes_;
  }
  // The first break of the observer contract seen, or "" when there was none.
  std::string breach() {
    std::lock_guard lock(mutex_);
    return breach_;
  }
  bool broken() { return !breach().empty(); }

 private:
  // Calls for one process must never overlap: two at once means two backend threads raced. A call
  // is "in" from before it takes the lock (which would serialise them) to its end.
  void enter(const char* call) {
    if (in_call_.exchange(true)) overlapped_ = call;
  }
  void leave() {  // mutex_ held
    in_call_ = false;
    if (overlapped_ != nullptr)
      note(std::string(overlapped_.load()) + "() overlapped another call");
  }
  void note(const std::string& what) {  // mutex_ held
    if (breach_.empty()) breach_ = what;
  }

  const std::size_t keep_per_stream_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::atomic<bool> in_call_{false};
  std::atomic<const char*> overlapped_{nullptr};
  int exits_ = 0;
  sdk::BackgroundExit exit_;
  std::string out_, err_;
  std::size_t bytes_ = 0;
  std::string breach_;
};

}  // namespace execmcp::conformance
