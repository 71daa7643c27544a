// Short looks into the agent's container that the backend and both command paths need, in one
// place so neither path calls the other for them: a short script (an attached container's user),
// the kill sweep, and who killed a command (the container's state and its memory cgroup's OOM
// count). ContainerProbe is the interface: ExecProbe does each look with one exec and works
// whatever runs in the container; a probe through execmcp-runner can implement it later.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "docker_common/commands/container_events.hpp"
#include "docker_common/lifecycle/container_part.hpp"
#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::plugins::docker_common {

class ContainerLifecycle;

// Thread-safe; no method throws past its caller's guard.
class ContainerProbe {
 public:
  virtual ~ContainerProbe() = default;
  // `/bin/sh -c script` ($0 `name`, then `args`) from "/" as the commands' user, output capped at
  // 4 KiB, ended after `timeout`. Never brings a stopped container back (a probe must not).
  virtual sdk::ExecResult run(const std::string& script, std::chrono::milliseconds timeout,
                              const std::string& name = "execmcp-probe",
                              const std::vector<std::string>& args = {}) = 0;
  // Kills every process marked with `marker` (the kill sweep), retrying while a fork bomb holds
  // every pid; logs when it could not confirm it.
  virtual void kill_marked(const std::string& marker) = 0;
};

// Each look as one exec into the container.
class ExecProbe final : public ContainerProbe {
 public:
  explicit ExecProbe(ContainerLifecycle& lifecycle) : lifecycle_(lifecycle) {}

  sdk::ExecResult run(const std::string& script, std::chrono::milliseconds timeout,
                      const std::string& name = "execmcp-probe",
                      const std::vector<std::string>& args = {}) override;
  void kill_marked(const std::string& marker) override;

 private:
  ContainerLifecycle& lifecycle_;
};

// Who killed a command, as a part: an agent's command that ended from outside (a signal, or its
// sandbox's end: RuntimeProfile::ended_from_outside()) gets a notice naming the OOM killer or the
// container's PID 1 dying; under a runtime where exit 128 is the sandbox's end, that code becomes
// -1. A new container (or one started again) counts OOM kills from zero.
class KillExplainer final : public ContainerPart {
 public:
  // `events`: the engine's events of the container where they are followed (null: none), so a
  // kill's cause is known without waiting for the engine's OOM flag.
  KillExplainer(ContainerLifecycle& lifecycle, ContainerProbe& probe,
                const ContainerEvents* events = nullptr)
      : lifecycle_(lifecycle), probe_(probe), events_(events) {}

  void on_container_start(bool /*created*/) override { oom_kills_seen_ = 0; }
  void decorate_result(std::uint64_t mark, sdk::ExecResult& result) override;

  // Adds the notice saying who killed the command that ended with `result`.
  void explain(sdk::ExecResult& result);

 private:
  ContainerLifecycle& lifecycle_;
  ContainerProbe& probe_;
  const ContainerEvents* events_;
  // The memory cgroup's oom_kill count at the last look.
  std::atomic<long> oom_kills_seen_{0};
};

}  // namespace execmcp::plugins::docker_common
