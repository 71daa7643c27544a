// A feature of the agent's container as a part that hooks into its lifecycle at fixed points
// (ContainerLifecycle), instead of one more field and a branch in each of its steps: attach mode,
// protected paths, workspace access, credentials, egress, preinstall, the runner's delivery and
// the kill explanation are parts. The core makes, starts, recovers, stops and removes the
// container; a part adds what its feature needs at each point.
//
// When and where the hooks run:
// - The lifecycle steps (on_start .. on_remove, on_relocate) run on the thread that drives the
//   step, one step at a time: start() and remove_container() run before the first and after the
//   last command (the host's start and cleanup), and recover(), stop_container() and
//   relocate_workspace() hold the lifecycle's recovery lock. So a part needs no lock for what
//   only these hooks touch.
// - add_call_env(), begin_call() and decorate_result() run on a command's thread, several at
//   once and beside a recovery: a part guards what they share with the lifecycle steps.
// - The parts are asked in the order they were added (ContainerLifecycle::add_part()); a step's
//   first error stops the step (the later parts and the core's own work do not run) and is the
//   step's error, said to the user as it is written ("" is no error).
// - No hook throws: the lifecycle's callers turn an exception into the step's error, but a part
//   reports its failures as text.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "docker_common/lifecycle/container_spec.hpp"
#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::plugins::docker_common {

class ContainerProbe;  // container_probe.hpp

// A hook's answer in a step that a part may end early, as in a filter chain: go on (the next part,
// then the core's own work), or stop the step here with `error` ("": the step is done).
struct PartStep {
  bool stop = false;
  std::string error;
  static PartStep next() { return {}; }
  static PartStep done() { return {true, {}}; }
  static PartStep fail(std::string why) { return {true, std::move(why)}; }
};

// The network a helper container that serves the agent joins (a preinstall build), and what it
// exports for its programs to reach out (the egress proxy's variables).
struct NetworkRoute {
  std::string network;
  std::vector<std::string> env;  // NAME=value
};

class ContainerPart {
 public:
  virtual ~ContainerPart() = default;

  // start(), once the engine answered: a part may do the whole start itself (attach mode checks a
  // container it did not make, then stops the step). A managed start goes on to check the image
  // and the runtime.
  virtual PartStep on_start() { return PartStep::next(); }
  // start() succeeded (the backend's start, after the lifecycle's): a part may look inside the
  // container through `probe`, as the commands' user (attach mode asks whether that is root).
  // "" or why the agent must not start (then the host refuses every call).
  virtual std::string after_start(ContainerProbe& /*probe*/) { return {}; }
  // start() of a managed container, before anything is made or removed: prepare what the
  // container will need (the workspace's ACLs, the credentials). "" or why it must not start.
  virtual std::string prepare_start() { return {}; }
  // start() of a managed container, right before it is created (orphans and a stale one gone):
  // bring up what it depends on (the egress proxy, the preinstall image). "" or why not.
  virtual std::string before_create() { return {}; }
  // start() failed after before_create(): undo what it brought up. Never throws.
  virtual void on_start_failed() noexcept {}
  // recover(), before the container is looked at: bring back what it depends on (a suspended
  // agent's proxy); attach mode stops the step (it only looks). `level`: how to log a recovery.
  virtual PartStep before_recover(sdk::LogLevel /*level*/) { return PartStep::next(); }
  // Every create and restart (start() and recover()): change the spec (the preinstall image, the
  // runner's mount) or refuse it (a protected path that moved): "" or why the container must not
  // start.
  virtual std::string prepare_spec(ContainerSpec& /*spec*/) { return {}; }
  // The engine created the container (every create: start() and a recover() that makes it anew)
  // and has not started it: its anonymous volumes exist, empty, and the engine's archive calls
  // reach them and the image's files (the trust part copies its CA bundle in here, so that no
  // command ever sees the container without it). "" or why it must not start: the lifecycle then
  // removes it.
  virtual std::string after_create() { return {}; }
  // The engine is about to start the container: a new one (`created`: its volumes are empty) or a
  // stopped one again. Either way its memory cgroup is new.
  virtual void on_container_start(bool /*created*/) {}
  // The engine could not create from `image`, which it does not have: a part that made the image
  // makes it again and says true ("" in `error`), or says true with why not; false: not its image.
  virtual bool remake_image(const std::string& /*image*/, std::string& /*error*/) { return false; }
  // stop_container() stopped the container: stop what served it (the proxy). "" or why not.
  virtual std::string on_stop(std::chrono::seconds /*timeout*/) { return {}; }
  // The backend stops taking calls (sdk::ExecutorBackend::stop()): end what reports to the host
  // from a thread of its own. Never throws.
  virtual void on_backend_stop() noexcept {}
  // remove_container(), once the container is removed (or was left to its owner). Never throws.
  virtual void on_remove() noexcept {}
  // relocate_workspace(): the workspace moved from `from` to `to` on the host.
  virtual void on_relocate(const std::string& /*from*/, const std::string& /*to*/) {}
  // Where a helper container of the agent goes out (route starts as the `network` setting).
  virtual void route(NetworkRoute& /*route*/) const {}

  // An interface the part offers the host through the backend's query_interface() (the egress
  // part's sdk::NetworkEvents), or null.
  virtual void* query_interface(std::string_view /*id*/) noexcept { return nullptr; }

  // A command's environment (NAME=value, appended in part order, before the call's own).
  virtual void add_call_env(std::vector<std::string>& /*env*/) const {}
  // An agent's command starts: what decorate_result() compares with at its end.
  virtual std::uint64_t begin_call() { return 0; }
  // The command ended: notices for its result (what the proxy refused meanwhile, a preinstall
  // that failed, who killed it), or its exit code read as the runtime means it.
  virtual void decorate_result(std::uint64_t /*mark*/, sdk::ExecResult& /*result*/) {}
};

// The parts of one container, asked as one part: each hook asks every part in order, and a step's
// first error (or a part's PartStep that stops) ends it there. on_start_failed(), on_stop()'s
// later parts, on_backend_stop(), on_remove() and on_relocate() ask every part; begin_call() and
// decorate_result() go through begin_calls() and decorate_results(), one mark a part.
class PartChain final : public ContainerPart {
 public:
  // A part made elsewhere (a command path's), asked after the ones before it; added before the
  // container starts, and outlives every call into the chain.
  void add(ContainerPart& part) { parts_.push_back(&part); }
  // A part the chain owns.
  void adopt(std::unique_ptr<ContainerPart> part) {
    parts_.push_back(part.get());
    owned_.push_back(std::move(part));
  }

  PartStep on_start() override;
  std::string after_start(ContainerProbe& probe) override;
  std::string prepare_start() override;
  std::string before_create() override;
  void on_start_failed() noexcept override;
  PartStep before_recover(sdk::LogLevel level) override;
  std::string prepare_spec(ContainerSpec& spec) override;
  std::string after_create() override;
  void on_container_start(bool created) override;
  bool remake_image(const std::string& image, std::string& error) override;
  std::string on_stop(std::chrono::seconds timeout) override;
  void on_backend_stop() noexcept override;
  void on_remove() noexcept override;
  void on_relocate(const std::string& from, const std::string& to) override;
  void route(NetworkRoute& route) const override;
  void* query_interface(std::string_view id) noexcept override;
  void add_call_env(std::vector<std::string>& env) const override;

  // What each part said at a command's start, in part order.
  using CallMarks = std::vector<std::uint64_t>;
  CallMarks begin_calls();
  void decorate_results(const CallMarks& marks, sdk::ExecResult& result);

 private:
  std::vector<std::unique_ptr<ContainerPart>> owned_;
  std::vector<ContainerPart*> parts_;  // in the order they are asked
};

}  // namespace execmcp::plugins::docker_common
