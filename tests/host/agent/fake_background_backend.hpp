// A backend that offers execmcp.background/1 without running anything: the test drives each
// process's output and end through its observer.
#pragma once

#include <csignal>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "execmcp/sdk/background_processes.hpp"
#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::host::testing {

class FakeBackgroundBackend final : public sdk::ExecutorBackend, public sdk::BackgroundProcesses {
 public:
  struct Process {
    sdk::BackgroundRequest request;
    sdk::BackgroundObserver* observer = nullptr;
    bool exited = false;
  };

  // What the fake does; set before use.
  bool offer = true;               // query_interface answers
  std::string start_error;         // start_background fails with this
  bool exit_during_start = false;  // the process ends before start_background returns
  std::string resolved_dir;        // BackgroundStarted::work_dir

  // Log.
  std::mutex mutex;
  std::map<std::uint64_t, Process> processes;
  std::vector<std::pair<std::uint64_t, std::chrono::milliseconds>> terminations;
  std::vector<std::string> calls;  // "stop", "cleanup", "terminate"

  std::string start() override { return {}; }
  void stop() noexcept override { log("stop"); }
  void cleanup() noexcept override { log("cleanup"); }
  sdk::ExecResult execute(const sdk::ExecRequest&) override { return {}; }
  sdk::FileReadResult read_file(const sdk::FileReadRequest&) override { return {}; }
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest&) override { return {}; }
  [[nodiscard]] sdk::BackendTraits traits() const override { return {}; }
  [[nodiscard]] void* query_interface(std::string_view id) noexcept override {
    if (offer && id == sdk::kBackgroundProcessesId)
      return static_cast<sdk::BackgroundProcesses*>(this);
    return nullptr;
  }

  sdk::BackgroundStarted start_background(const sdk::BackgroundRequest& request,
                                          sdk::BackgroundObserver* observer) noexcept override {
    sdk::BackgroundStarted started;
    if (!start_error.empty()) {
      started.error = start_error;
      return started;
    }
    std::uint64_t id = 0;
    {
      std::lock_guard lock(mutex);
      id = next_id_++;
      processes[id] = Process{request, observer, false};
    }
    started.id = id;
    started.pid = 1000 + static_cast<long>(id);
    started.work_dir = resolved_dir;
    if (exit_during_start) finish(id, sdk::BackgroundExit{0, 0, false, {}});
    return started;
  }

  void terminate_background(std::uint64_t id, std::chrono::milliseconds grace) noexcept override {
    {
      std::lock_guard lock(mutex);
      terminations.emplace_back(id, grace);
      calls.push_back("terminate");
    }
    finish(id, sdk::BackgroundExit{-1, SIGTERM, true, {}});
  }

  // Test controls.
  void output(std::uint64_t id, sdk::StreamKind stream, std::string_view bytes) {
    sdk::BackgroundObserver* observer = nullptr;
    {
      std::lock_guard lock(mutex);
      observer = processes.at(id).observer;
    }
    observer->on_output(stream, bytes);
  }
  void finish(std::uint64_t id, const sdk::BackgroundExit& exit) {
    sdk::BackgroundObserver* observer = nullptr;
    {
      std::lock_guard lock(mutex);
      auto& process = processes.at(id);
      if (process.exited) return;
      process.exited = true;
      observer = process.observer;
    }
    observer->on_exit(exit);
  }
  std::uint64_t last_id() {
    std::lock_guard lock(mutex);
    return next_id_ - 1;
  }

 private:
  void log(const char* what) {
    std::lock_guard lock(mutex);
    calls.push_back(what);
  }
  std::uint64_t next_id_ = 1;
};

}  // namespace execmcp::host::testing
