// The runner's site in a swarm sandbox (swarm_runner_site.hpp).
#include "docker_swarm/swarm_runner_site.hpp"

#include <thread>

#include "runner_client/runner_transport.hpp"

namespace execmcp::plugins::docker_swarm {
namespace {

using docker_common::SiteError;
using runner_client::TransportError;

constexpr auto kHelloTimeout = std::chrono::seconds(15);

constexpr const char* kEspHint =
    "; with encrypted: true, the nodes' kernels may lack IPsec ESP (CONFIG_INET_ESP): an "
    "encrypted overlay is made there but carries nothing";

}  // namespace

SwarmRunnerSite::SwarmRunnerSite(ServiceLifecycle& lifecycle,
                                 std::chrono::milliseconds connect_timeout)
    : lifecycle_(lifecycle), connect_timeout_(connect_timeout) {}

void SwarmRunnerSite::add_notices(std::vector<std::string> notices) {
  std::lock_guard lock(notices_mutex_);
  for (auto& n : notices) pending_notices_.push_back(std::move(n));
}

std::shared_ptr<runner_client::RunnerChannel> SwarmRunnerSite::open(
    std::vector<std::string>& notices, SiteError& error) {
  error = {};
  {
    std::lock_guard lock(notices_mutex_);
    notices.insert(notices.end(), pending_notices_.begin(), pending_notices_.end());
    pending_notices_.clear();
  }
  bool recovered = false;
  for (;;) {
    const std::string address = lifecycle_.address();
    const auto key = lifecycle_.key();
    if (address.empty() || !key) {
      if (recovered) {
        error = {SiteError::Kind::kPlace, "the sandbox " + name() + " has no running task"};
        return nullptr;
      }
      recovered = true;
      if (auto why = recover(notices); !why.empty()) {
        error = {SiteError::Kind::kPlace, why};
        return nullptr;
      }
      continue;
    }
    runner_client::RunnerAddress at;
    at.host = address;
    at.port = static_cast<std::uint16_t>(kRunnerPort);
    at.peer = "execmcp-runner of sandbox " + name() + " at " + address + ":" +
              std::to_string(kRunnerPort);
    TransportError failed;
    auto ends = runner_client::connect_runner(at, *key, connect_timeout_, failed);
    if (ends) {
      auto channel = std::make_shared<runner_client::RunnerChannel>(
          std::move(*ends), [this](sdk::LogLevel level, const std::string& line) {
            lifecycle_.log(level, "execmcp-runner in " + name() + ": " + line);
          });
      if (auto why = channel->wait_ready(kHelloTimeout); !why.empty()) {
        error = {SiteError::Kind::kRunner, at.peer + " did not say hello: " + why};
        return nullptr;
      }
      lifecycle_.log(sdk::LogLevel::Info,
                     "execmcp-runner is ready in sandbox " + name() + " at " + address);
      return channel;
    }
    // Not reachable: the task may have ended or its node been lost; brought back once.
    if (failed.kind == TransportError::Kind::kUnreachable && !recovered) {
      NodeInfo node;
      if (lifecycle_.state(node) != SandboxState::kRunning) {
        recovered = true;
        if (auto why = recover(notices); !why.empty()) {
          error = {SiteError::Kind::kPlace, why};
          return nullptr;
        }
        continue;
      }
    }
    std::string why = "cannot reach " + at.peer + ": " + failed.message;
    if (failed.kind == TransportError::Kind::kUnreachable && lifecycle_.config().encrypted)
      why += kEspHint;
    error = {failed.kind == TransportError::Kind::kUnreachable ? SiteError::Kind::kPlace
                                                               : SiteError::Kind::kRunner,
             why};
    return nullptr;
  }
}

std::string SwarmRunnerSite::recover(std::vector<std::string>& notices) {
  return lifecycle_.recover(notices);
}

bool SwarmRunnerSite::manager_lost() {
  NodeInfo node;
  return lifecycle_.state(node) == SandboxState::kUnknown;
}

void SwarmRunnerSite::wait_stopped(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    NodeInfo node;
    if (lifecycle_.state(node) != SandboxState::kRunning) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

sdk::ExecResult SwarmProbe::run(const std::string& /*script*/, std::chrono::milliseconds,
                                const std::string& name, const std::vector<std::string>&) {
  sdk::ExecResult r;
  r.error = name + ": no exec into a swarm sandbox (" + lifecycle_.name() + ")";
  return r;
}

void SwarmProbe::kill_marked(const std::string& marker) {
  lifecycle_.log(
      sdk::LogLevel::Debug,
      "the processes of call " + marker + " end with the runner's channel in " + lifecycle_.name());
}

}  // namespace execmcp::plugins::docker_swarm
