// Background processes over a command path (background_calls.hpp).
#include "docker_common/commands/background_calls.hpp"

#include "docker_common/lifecycle/container_lifecycle.hpp"

namespace execmcp::plugins::docker_common {

sdk::BackgroundStarted start_background_on(BackgroundTable& table, CommandPath& commands,
                                           sdk::BackgroundObserver* observer,
                                           const std::string& work_dir, const std::string& shell,
                                           const std::string& command,
                                           const std::vector<std::string>& env) {
  sdk::BackgroundStarted started;
  started.work_dir = work_dir;
  if (observer == nullptr) {
    started.error = "no observer for the background process";
    return started;
  }
  auto bg = table.add(observer, random_marker(), work_dir);
  long pid = 0;
  if (auto err = commands.start_background(bg, shell, command, env, pid); !err.empty()) {
    table.erase(bg->id);
    started.error = std::move(err);
    return started;
  }
  started.id = bg->id;
  started.pid = pid;
  return started;
}

void terminate_background_on(BackgroundTable& table, CommandPath& commands, std::uint64_t id,
                             std::chrono::milliseconds grace) noexcept {
  try {
    const auto bg = table.find(id);
    if (!bg) return;
    if (grace.count() < 0) grace = std::chrono::milliseconds(0);
    if (!bg->wait_ended(std::chrono::milliseconds(0))) {
      bg->terminating = true;
      commands.terminate_background(*bg, grace);
      // The end is on its way (the channel's loss or the exec's end): wait for its on_exit().
      bg->wait_ended(std::chrono::minutes(2));
    }
    table.erase(id);
  } catch (...) {
    // never throws
  }
}

void end_all_background_on(BackgroundTable& table, CommandPath& commands,
                           std::chrono::milliseconds grace) noexcept {
  // One at a time: each terminate is a kill frame (agent mode) or a sweep exec (exec mode).
  try {
    for (auto id : table.ids()) terminate_background_on(table, commands, id, grace);
  } catch (...) {
    // never throws
  }
}

}  // namespace execmcp::plugins::docker_common
