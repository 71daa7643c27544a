// A backend whose start() waits until the test opens its gate (a slow preinstall build, an
// ssh:// engine that is down), and that counts every call the host makes on it. For the tests of
// LazyAgent and of the shared server's routes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "agent/configured_agent.hpp"
#include "plugins/plugin_registry.hpp"

namespace execmcp::host::testing {

class StartGate {
 public:
  // Lets every start() waiting (and to come) return, with `error` ("" = started).
  void open(std::string error = {}) {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
      error_ = std::move(error);
    }
    cv_.notify_all();
  }
  // Blocks until open(); returns the error to start with.
  std::string pass() {
    std::unique_lock lock(mutex_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    --waiting_;
    return error_;
  }
  bool wait_waiting(int count, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return waiting_ >= count; });
  }

  std::atomic<int> starts{0};
  std::atomic<int> other_calls{0};  // any backend method but start, stop and cleanup

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
  int waiting_ = 0;
  std::string error_;
};

class GatedBackend final : public sdk::ExecutorBackend {
 public:
  explicit GatedBackend(std::shared_ptr<StartGate> gate) : gate_(std::move(gate)) {}
  std::string start() override {
    ++gate_->starts;
    return gate_->pass();
  }
  void stop() noexcept override {}
  void cleanup() noexcept override {}
  sdk::ExecResult execute(const sdk::ExecRequest& request) override {
    ++gate_->other_calls;
    sdk::ExecResult result;
    result.exit_code = 0;
    result.stdout_data = "ran:" + request.command;
    return result;
  }
  sdk::FileReadResult read_file(const sdk::FileReadRequest&) override {
    ++gate_->other_calls;
    return {};
  }
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request) override {
    ++gate_->other_calls;
    return {request.data.size(), {}};
  }
  [[nodiscard]] sdk::BackendTraits traits() const override {
    ++gate_->other_calls;
    return {};
  }

 private:
  std::shared_ptr<StartGate> gate_;
};

inline std::unique_ptr<ConfiguredAgent> make_gated_agent(const std::string& id,
                                                         std::shared_ptr<StartGate> gate) {
  ConfiguredAgent::Parts parts;
  parts.id = id;
  parts.instance_id = "1-test";
  parts.cwd = "/ws/" + id;
  parts.backend_name = "gated";
  parts.backend =
      adopt_plugin_object<sdk::ExecutorBackend>(std::make_unique<GatedBackend>(std::move(gate)));
  parts.audit = std::make_shared<AuditLog>();
  return std::make_unique<ConfiguredAgent>(std::move(parts));
}

}  // namespace execmcp::host::testing
