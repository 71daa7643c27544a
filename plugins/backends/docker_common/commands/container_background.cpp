// The background processes' shared parts: their end, exactly once, and the table of those alive.
#include "docker_common/commands/container_background.hpp"

namespace execmcp::plugins::docker_common {

void BackgroundProcess::finish(const sdk::BackgroundExit& exit,
                               const std::string& never_started) noexcept {
  if (pid.load() != 0 || via_exec) observer->on_exit(exit);
  std::lock_guard lock(mutex);
  if (pid.load() == 0 && !via_exec) start_error = never_started;
  ended = true;
  cv.notify_all();
}

bool BackgroundProcess::wait_ended(std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex);
  return cv.wait_for(lock, wait, [&] { return ended; });
}

std::shared_ptr<BackgroundProcess> BackgroundTable::add(sdk::BackgroundObserver* observer,
                                                        std::string marker, std::string work_dir) {
  auto bg = std::make_shared<BackgroundProcess>();
  bg->observer = observer;
  bg->marker = std::move(marker);
  bg->work_dir = std::move(work_dir);
  std::lock_guard lock(mutex_);
  bg->id = next_id_++;
  std::erase_if(processes_, [](const auto& entry) {
    std::lock_guard l(entry.second->mutex);
    return entry.second->ended;
  });
  processes_.emplace(bg->id, bg);
  return bg;
}

std::shared_ptr<BackgroundProcess> BackgroundTable::find(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  const auto it = processes_.find(id);
  return it == processes_.end() ? nullptr : it->second;
}

void BackgroundTable::erase(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  processes_.erase(id);
}

std::vector<std::uint64_t> BackgroundTable::ids() {
  std::lock_guard lock(mutex_);
  std::vector<std::uint64_t> out;
  for (const auto& [id, bg] : processes_) out.push_back(id);
  return out;
}

}  // namespace execmcp::plugins::docker_common
