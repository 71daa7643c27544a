// The `local` executor backend: an agent's commands as subprocesses of this machine, on the host
// (`isolation: none`) or in an OS sandbox (`isolation: sandbox`). This class is the plugin's face
// (settings, traits, capabilities); how commands run is a LocalExecution (local_execution.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "execmcp/sdk/background_processes.hpp"
#include "execmcp/sdk/executor_backend.hpp"
#include "local_execution.hpp"
#include "local_settings.hpp"

namespace execmcp::plugins::local {

class LocalBackend final : public sdk::ExecutorBackend, public sdk::BackgroundProcesses {
 public:
  // Throws std::invalid_argument on bad settings.
  explicit LocalBackend(const sdk::BackendInit& init);
  ~LocalBackend() override;

  std::string start() override { return execution_->start(); }
  void stop() noexcept override { execution_->stop(); }
  void cleanup() noexcept override { execution_->cleanup(); }

  sdk::ExecResult execute(const sdk::ExecRequest& request) override {
    return execution_->execute(request);
  }
  sdk::FileReadResult read_file(const sdk::FileReadRequest& request) override {
    return execution_->read_file(request);
  }
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request) override {
    return execution_->write_file(request);
  }

  [[nodiscard]] sdk::BackendTraits traits() const override;
  [[nodiscard]] void* query_interface(std::string_view id) noexcept override;

  sdk::BackgroundStarted start_background(const sdk::BackgroundRequest& request,
                                          sdk::BackgroundObserver* observer) noexcept override {
    return execution_->start_background(request, observer);
  }
  void terminate_background(std::uint64_t id, std::chrono::milliseconds grace) noexcept override {
    execution_->terminate_background(id, grace);
  }

 private:
  LocalBackend(const sdk::BackendInit& init, LocalSettings settings);

  const std::string tools_dir_;
  const bool isolated_;
  std::unique_ptr<LocalExecution> execution_;
};

}  // namespace execmcp::plugins::local
