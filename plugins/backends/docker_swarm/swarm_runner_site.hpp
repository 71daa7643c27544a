// The runner's site in a swarm sandbox: execmcp-runner listening in the service's task, reached
// by a TCP connection to the task's address on the sandbox's own overlay and the key handshake
// (runner_client/runner_transport.hpp). No exec anywhere: a runner that cannot be reached is the
// call's error, with the reason. Its place is the service's (ServiceLifecycle): brought back in
// place when its task ended, elsewhere when its node was lost. See runner_site.hpp.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "docker_common/commands/container_probe.hpp"
#include "docker_common/commands/runner_site.hpp"
#include "docker_swarm/service_lifecycle.hpp"

namespace execmcp::plugins::docker_swarm {

class SwarmRunnerSite final : public docker_common::RunnerSite {
 public:
  // `lifecycle` outlives this object.
  explicit SwarmRunnerSite(ServiceLifecycle& lifecycle,
                           std::chrono::milliseconds connect_timeout = std::chrono::seconds(10));

  [[nodiscard]] const std::string& name() const override { return lifecycle_.name(); }
  void log(sdk::LogLevel level, const std::string& message) const override {
    lifecycle_.log(level, message);
  }
  // Connects to the task's runner (bringing the sandbox back once when no task runs). A runner
  // that cannot be reached (not up, its node gone) is kPlace: the next call tries again; one that
  // refused the key or is not an execmcp runner is kRunner.
  std::shared_ptr<runner_client::RunnerChannel> open(std::vector<std::string>& notices,
                                                     docker_common::SiteError& error) override;
  std::string recover(std::vector<std::string>& notices) override;
  [[nodiscard]] std::uint64_t incarnation() const override { return lifecycle_.incarnation(); }
  // The channel is the task's TCP connection: it ends with the task (or, on a lost node, by its
  // keepalive), so no look at the manager is needed while a call runs.
  std::function<bool()> stop_watch() override {
    return [] { return false; };
  }
  bool manager_lost() override;
  void wait_stopped(std::chrono::milliseconds timeout) override;

  // Notices for the next call (the start's: a sandbox moved off a lost node).
  void add_notices(std::vector<std::string> notices);

 private:
  ServiceLifecycle& lifecycle_;
  std::chrono::milliseconds connect_timeout_;
  std::mutex notices_mutex_;
  std::vector<std::string> pending_notices_;
};

// The probe of a sandbox without exec: no short scripts, and no kill sweep from outside, which the
// listening runner makes unneeded: when a channel ends, the runner kills every call of it
// (programs/runner, listen mode), and the command path drops the channel right after asking.
class SwarmProbe final : public docker_common::ContainerProbe {
 public:
  explicit SwarmProbe(ServiceLifecycle& lifecycle) : lifecycle_(lifecycle) {}
  sdk::ExecResult run(const std::string& script, std::chrono::milliseconds timeout,
                      const std::string& name, const std::vector<std::string>& args) override;
  void kill_marked(const std::string& marker) override;

 private:
  ServiceLifecycle& lifecycle_;
};

}  // namespace execmcp::plugins::docker_swarm
