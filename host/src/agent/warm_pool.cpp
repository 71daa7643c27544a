// A per-user agent's warm pool (see warm_pool.hpp).
#include "agent/warm_pool.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <spdlog/spdlog.h>

namespace execmcp::host {

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

}  // namespace

WarmPool::WarmPool(const SandboxTemplate& shape, const std::atomic<std::size_t>& users,
                   SandboxEventCounter& events, std::chrono::milliseconds tick)
    : template_(shape), users_(users), events_(events), tick_(tick) {}

WarmPool::~WarmPool() {
  stop();
}

void WarmPool::start() {
  std::lock_guard lock(mutex_);
  if (refill_.joinable() || stopping_) return;
  refill_ = std::thread([this] { refill_loop(); });
}

std::unique_ptr<ConfiguredAgent> WarmPool::claim(const std::string& dir,
                                                 const std::string& user_key) {
  Warm warm;
  {
    std::lock_guard lock(mutex_);
    if (warm_.empty()) return nullptr;
    warm = std::move(warm_.front());
    warm_.pop_front();
    wake_.notify_all();
  }
  std::error_code ec;
  fs::rename(warm.dir, dir, ec);
  std::string error = ec ? "renaming " + warm.dir + ": " + ec.message() : "";
  if (error.empty()) {
    sdk::SandboxControl* control = warm.agent->sandbox_control();
    error = control ? control->relocate_workspace(dir) : "the backend cannot move its workspace";
  }
  if (!error.empty()) {
    spdlog::warn("agent '{}': user '{}': could not claim a warm sandbox ({}); making one",
                 template_.id(), user_key, error.substr(0, 512));
    warm.agent->shutdown();
    fs::remove(warm.dir, ec);
    return nullptr;
  }
  events_.count(&SandboxEvents::claims);
  // Its container keeps the name it was made with: the log ties the two.
  spdlog::info("agent '{}': user '{}' claimed the warm sandbox {} (its container keeps that name)",
               template_.id(), user_key, warm.name);
  return std::move(warm.agent);
}

void WarmPool::release_surplus() {
  std::lock_guard lock(mutex_);
  if (warm_.empty() || users_.load() + warm_.size() <= template_.config().max_users) return;
  surplus_.push_back(std::move(warm_.back()));
  warm_.pop_back();
  wake_.notify_all();
}

std::size_t WarmPool::ready() const {
  std::lock_guard lock(mutex_);
  return warm_.size();
}

bool WarmPool::refill_needed_locked() const {
  const std::size_t pool = warm_.size() + making_;
  const PerUserConfig& config = template_.config();
  return !stopping_ && pool < config.warm && users_.load() + pool < config.max_users;
}

bool WarmPool::make_one() {
  std::string dir;
  std::string name;
  {
    std::lock_guard lock(mutex_);
    const std::uint64_t n = ++serial_;
    name = SandboxTemplate::warm_sandbox_name(n);
    dir = template_.config().workspace_root + "/.warm-" + std::to_string(::getpid()) + "-" +
          std::to_string(n);
  }
  std::error_code ec;
  try {
    // Only the server's user may enter it (the container reaches it through its own mount).
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      throw std::runtime_error("cannot create workspace '" + dir +
                               "': " + std::generic_category().message(errno));
    auto agent = template_.build(dir, name);
    agent->start();
    // Ready for calls now (the runner's channel open), not at the user's first call: resume()
    // of a running sandbox only makes it ready.
    sdk::SandboxControl* control = agent->sandbox_control();
    if (std::string error = control ? control->resume() : "the backend cannot make it ready";
        !error.empty())
      throw std::runtime_error(error);
    std::lock_guard lock(mutex_);
    // Users came while it was made: past max_users it is not wanted any more.
    if (stopping_ || users_.load() + warm_.size() >= template_.config().max_users) {
      agent->shutdown();
      fs::remove_all(dir, ec);
      return true;
    }
    warm_.push_back({std::move(agent), dir, name});
    return true;
  } catch (const std::exception& e) {
    spdlog::warn("agent '{}': could not make a warm sandbox: {}", template_.id(),
                 std::string(e.what()).substr(0, 1024));
    fs::remove_all(dir, ec);
    return false;
  }
}

void WarmPool::refill_loop() {
  std::unique_lock lock(mutex_);
  auto retry_at = Clock::now();
  // A failing engine is asked again after 5 s, then 10, 20, 40, 60 (and its log stays short).
  std::chrono::seconds backoff{5};
  while (!stopping_) {
    if (!surplus_.empty()) {
      Warm surplus = std::move(surplus_.front());
      surplus_.pop_front();
      lock.unlock();
      surplus.agent->shutdown();
      std::error_code ec;
      fs::remove_all(surplus.dir, ec);
      lock.lock();
      continue;
    }
    if (!refill_needed_locked() || Clock::now() < retry_at) {
      wake_.wait_for(lock, tick_);
      continue;
    }
    ++making_;
    lock.unlock();
    const bool made = make_one();
    lock.lock();
    --making_;
    if (made) {
      backoff = std::chrono::seconds(5);
    } else {
      retry_at = Clock::now() + backoff;
      backoff = std::min<std::chrono::seconds>(backoff * 2, std::chrono::seconds(60));
    }
  }
}

void WarmPool::stop() noexcept {
  std::deque<Warm> warm;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
  }
  if (refill_.joinable()) refill_.join();
  {
    std::lock_guard lock(mutex_);
    warm.swap(warm_);
    for (Warm& slot : surplus_) warm.push_back(std::move(slot));
    surplus_.clear();
  }
  std::error_code ec;
  for (Warm& slot : warm) {
    slot.agent->shutdown();
    fs::remove_all(slot.dir, ec);
  }
}

}  // namespace execmcp::host
