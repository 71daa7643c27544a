// The background processes of one agent's container (sdk::BackgroundProcesses): what each one is
// (BackgroundProcess, whichever command path runs it) and the table of those alive.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "execmcp/sdk/background_processes.hpp"
#include "runner_client/run_call.hpp"
#include "runner_client/runner_channel.hpp"

namespace execmcp::plugins::docker_common {

// What the host's observer is told when the container's agent (execmcp-runner) ends under it.
inline constexpr const char* kAgentLost =
    "the container's agent ended; the process was killed with it";

using runner_client::exit_of;

// One background process. In agent mode it is a call on the runner's channel that keeps no
// output and has no deadline; in exec mode one exec, read by a jthread. Either way it carries its
// own EXECMCP_CALL marker, so the sweep can end it from outside.
struct BackgroundProcess {
  std::uint64_t id = 0;
  sdk::BackgroundObserver* observer = nullptr;
  std::string marker;
  std::string work_dir;
  std::weak_ptr<runner_client::RunnerChannel>
      channel;  // agent mode: dies with the runner, ending the process
  std::shared_ptr<runner_client::RunnerCall> call;
  std::atomic<long> pid{0};
  std::atomic<bool> terminating{false};
  std::mutex mutex;
  std::condition_variable cv;
  bool ended = false;       // on_exit() returned (or the start failed and none comes)
  std::string start_error;  // the runner ended the call before its shell existed
  bool via_exec = false;    // exec mode: set before its thread starts
  std::jthread thread;      // exec mode: reads the exec; last member, joined first

  // Tells the host (unless the process never started) and marks the end, exactly once.
  void finish(const sdk::BackgroundExit& exit, const std::string& never_started) noexcept;
  bool wait_ended(std::chrono::milliseconds wait);
};

// The background processes alive, by id. Thread-safe.
class BackgroundTable {
 public:
  // A new entry with the next id (finished ones are forgotten here: their on_exit() returned).
  std::shared_ptr<BackgroundProcess> add(sdk::BackgroundObserver* observer, std::string marker,
                                         std::string work_dir);
  [[nodiscard]] std::shared_ptr<BackgroundProcess> find(std::uint64_t id);
  void erase(std::uint64_t id);
  [[nodiscard]] std::vector<std::uint64_t> ids();

 private:
  std::mutex mutex_;
  std::map<std::uint64_t, std::shared_ptr<BackgroundProcess>> processes_;
  std::uint64_t next_id_ = 1;
};

}  // namespace execmcp::plugins::docker_common
