// Per-user sandboxes: each user's record and the idle timers (see user_sandboxes.hpp).
#include "agent/user_sandboxes.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include <spdlog/spdlog.h>

#include "agent/lazy_agent.hpp"

namespace execmcp::host {

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

long long whole_seconds(std::chrono::milliseconds duration) {
  return std::chrono::duration_cast<std::chrono::seconds>(duration).count();
}

// A workspace directory only its owner (the server's user) may enter; the container reaches it
// through its own mount (and the backend's ACL for the image user).
std::string make_private_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    return "cannot create workspace '" + path + "': " + std::generic_category().message(errno);
  return {};
}

}  // namespace

// One user's sandbox, as the MCP layer sees it: an Agent whose calls go to the user's container,
// made, started again or claimed from the warm pool by the call that needs it.
class UserSandbox final : public AgentDecorator {
 public:
  UserSandbox(UserSandboxes& owner, std::string key)
      : owner_(owner), key_(std::move(key)), dir_(owner.config().workspace_root + "/" + key_) {}
  ~UserSandbox() override { shutdown(); }

  [[nodiscard]] const std::string& id() const override { return owner_.id(); }
  [[nodiscard]] const std::string& cwd() const override { return kUserSandboxCwd; }
  [[nodiscard]] CallLimit call_limit() const override {
    return CallLimit{owner_.id() + "/" + key_, true, owner_.config().max_calls_per_user};
  }
  [[nodiscard]] sdk::BackendTraits traits() const override { return owner_.template_.traits(); }
  [[nodiscard]] AgentCapabilities capabilities() const override {
    return owner_.template_.capabilities();
  }
  // The timers' step for this sandbox (run by the timer thread only).
  void idle_step(Clock::time_point now);
  // True when it holds no container and no call: the owner may forget it.
  [[nodiscard]] bool empty() const {
    std::lock_guard lock(mutex_);
    return state_ == State::kEmpty && active_ == 0;
  }
  // Counted by state for the gauges.
  void add_to(SandboxCounts& counts) const {
    std::lock_guard lock(mutex_);
    if (state_ == State::kRunning) ++counts.running;
    if (state_ == State::kStopped) ++counts.stopped;
  }
  // Its container removed (SIGTERM); the workspace stays. The agent object stays for calls still
  // in flight on it.
  void shutdown() noexcept {
    std::lock_guard life(life_mutex_);
    if (agent_) agent_->shutdown();
    std::lock_guard lock(mutex_);
    state_ = State::kEmpty;
    shut_down_ = true;
  }

 private:
  enum class State { kEmpty, kRunning, kStopped };
  // A call's pass (while one lives, the timers leave the sandbox alone) to the user's agent; with
  // `may_start`, the sandbox made ready (claimed, made, or started again, with a notice for the
  // call when it was stopped or removed) and its backend started.
  Pass enter(bool may_start) override;
  // enter()'s part under life_mutex_: the pass, and the sandbox's starter when it has an agent.
  Pass ready(bool may_start, LazyAgent*& lazy);
  // For a call whose result has no notices (files, a background shell's start): the next command's
  // result carries them, so the user still learns their sandbox was started again or made anew.
  void keep_notices(std::vector<std::string>& notices) override {
    if (notices.empty()) return;
    std::lock_guard lock(mutex_);
    for (auto& notice : notices) pending_notices_.push_back(std::move(notice));
    notices.clear();
    constexpr std::size_t kKept = 4;
    if (pending_notices_.size() > kKept)
      pending_notices_.erase(pending_notices_.begin(),
                             pending_notices_.end() - static_cast<std::ptrdiff_t>(kKept));
  }
  void leave() noexcept override {
    std::lock_guard lock(mutex_);
    --active_;
    last_call_ = Clock::now();
  }
  // life_mutex_ held: a container for the user (warm or new); "" or why not.
  std::string make(std::vector<std::string>& notices);
  // life_mutex_ held: the container removed and the agent dropped (no call holds it).
  void drop_agent() noexcept;

  UserSandboxes& owner_;
  const std::string key_;
  const std::string dir_;
  // Held by every transition (make, resume, stop, remove) and by enter(); the timers only try it.
  std::mutex life_mutex_;
  std::unique_ptr<ConfiguredAgent> agent_;  // changed with life_mutex_ held and no pass
  std::unique_ptr<LazyAgent> lazy_;         // over *agent_
  mutable std::mutex mutex_;                // guards the five below; held briefly
  State state_ = State::kEmpty;
  std::size_t active_ = 0;
  Clock::time_point last_call_ = Clock::now();
  Clock::time_point stopped_at_{};
  bool shut_down_ = false;
  std::vector<std::string> pending_notices_;  // keep_notices(); the last four
};

AgentDecorator::Pass UserSandbox::enter(bool may_start) {
  LazyAgent* lazy = nullptr;
  Pass pass = ready(may_start, lazy);
  if (lazy == nullptr) return pass;
  // Started outside life_mutex_ (a start waits on the engine; LazyAgent bounds who waits for it),
  // under the pass, which keeps the timers away.
  if (may_start) pass.error = lazy->ensure_started();
  if (pass.error.empty()) pass.agent = &lazy->inner();
  return pass;
}

AgentDecorator::Pass UserSandbox::ready(bool may_start, LazyAgent*& lazy) {
  std::lock_guard life(life_mutex_);
  State state;
  {
    std::lock_guard lock(mutex_);
    ++active_;
    last_call_ = Clock::now();
    state = state_;
    if (shut_down_) {
      Pass refused(this);
      refused.error = "the server is shutting down; the sandbox was removed";
      return refused;
    }
  }
  Pass pass(this);
  if (may_start) {
    std::lock_guard lock(mutex_);
    pass.notices.swap(pending_notices_);
  }
  if (state == State::kRunning || !may_start) {
    lazy = state == State::kRunning ? lazy_.get() : nullptr;
    return pass;
  }
  if (state == State::kStopped) {
    sdk::SandboxControl* control = agent_->sandbox_control();
    const std::string error = control ? control->resume() : "the backend cannot start it again";
    if (error.empty()) {
      owner_.events_.count(&SandboxEvents::starts);
      pass.notices.push_back(
          "sandbox started again: it was stopped after " +
          std::to_string(whole_seconds(owner_.config().idle_stop)) +
          " s without a call; the files in /workspace are kept, processes and files elsewhere "
          "(/tmp, $HOME) are not");
      spdlog::info("agent '{}': user '{}': sandbox started again", owner_.id(), key_);
      std::lock_guard lock(mutex_);
      state_ = State::kRunning;
      lazy = lazy_.get();
      return pass;
    }
    spdlog::warn(
        "agent '{}': user '{}': the stopped sandbox did not start again ({}); making a "
        "new one",
        owner_.id(), key_, error.substr(0, 512));
    drop_agent();
  }
  if (std::string error = make(pass.notices); !error.empty()) {
    pass.error = std::move(error);
    return pass;
  }
  lazy = lazy_.get();
  return pass;
}

std::string UserSandbox::make(std::vector<std::string>& notices) {
  std::error_code ec;
  const bool returning = fs::exists(dir_, ec);
  std::unique_ptr<ConfiguredAgent> agent;
  if (!returning) agent = owner_.pool_.claim(dir_, key_);
  if (!agent) {
    owner_.pool_.release_surplus();
    if (std::string error = make_private_dir(dir_); !error.empty()) return error;
    try {
      agent = owner_.template_.build(dir_, SandboxTemplate::user_sandbox_name(key_));
    } catch (const std::exception& e) {
      return "agent '" + owner_.id() + "': cannot make a sandbox for this user: " + e.what();
    }
    owner_.events_.count(&SandboxEvents::creates);
  }
  // Its container was removed (idle_remove, a restart of the server): the files are not.
  if (returning)
    notices.push_back(
        "a new sandbox was made for this user: the files in /workspace are kept from before, "
        "processes and files elsewhere (/tmp, $HOME) are not");
  agent->set_user(key_);
  lazy_ = std::make_unique<LazyAgent>(*agent);
  agent_ = std::move(agent);
  std::lock_guard lock(mutex_);
  state_ = State::kRunning;
  return {};
}

void UserSandbox::drop_agent() noexcept {
  lazy_.reset();
  if (agent_) agent_->shutdown();
  agent_.reset();
  std::lock_guard lock(mutex_);
  state_ = State::kEmpty;
}

void UserSandbox::idle_step(Clock::time_point now) {
  std::unique_lock life(life_mutex_, std::try_to_lock);
  if (!life.owns_lock()) return;  // a call is making or starting it
  State state;
  {
    std::lock_guard lock(mutex_);
    if (active_ > 0 || shut_down_) return;
    state = state_;
    if (state == State::kRunning && now - last_call_ < owner_.config().idle_stop) return;
    if (state == State::kStopped && now - stopped_at_ < owner_.config().idle_remove) return;
    if (state == State::kEmpty) return;
  }
  if (state == State::kRunning) {
    // Made but never started (a failed start): nothing to keep.
    sdk::SandboxControl* control = agent_->sandbox_control();
    if (!agent_->started() || control == nullptr) {
      drop_agent();
      return;
    }
    if (std::string error = control->suspend(); !error.empty()) {
      spdlog::warn("agent '{}': user '{}': idle sandbox did not stop ({}); removing it",
                   owner_.id(), key_, error.substr(0, 512));
      drop_agent();
      owner_.events_.count(&SandboxEvents::removals);
      return;
    }
    owner_.events_.count(&SandboxEvents::stops);
    spdlog::info("agent '{}': user '{}': sandbox stopped after {} s without a call", owner_.id(),
                 key_, whole_seconds(owner_.config().idle_stop));
    std::lock_guard lock(mutex_);
    state_ = State::kStopped;
    stopped_at_ = Clock::now();
    return;
  }
  drop_agent();
  owner_.events_.count(&SandboxEvents::removals);
  spdlog::info("agent '{}': user '{}': stopped sandbox removed (its workspace is kept)",
               owner_.id(), key_);
}

// --- UserSandboxes -------------------------------------------------------------------------

namespace {

// The timers act within a quarter of the shorter idle time (and at least once per `tick`).
std::chrono::milliseconds timer_tick(const PerUserConfig& config, std::chrono::milliseconds tick) {
  return std::min(tick, std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::min(config.idle_stop, config.idle_remove) / 4 +
                            std::chrono::milliseconds(50)));
}

}  // namespace

UserSandboxes::UserSandboxes(std::string agent_id, PerUserConfig config, SandboxBuilder build,
                             AgentCapabilities capabilities, sdk::BackendTraits traits,
                             std::chrono::milliseconds tick)
    : template_(std::move(agent_id), std::move(config), std::move(build), capabilities,
                std::move(traits)),
      tick_(timer_tick(template_.config(), tick)),
      pool_(template_, user_count_, events_, tick_) {}

UserSandboxes::~UserSandboxes() {
  stop_all();
}

void UserSandboxes::start() {
  // A killed server's unclaimed warm directories: empty, and named for it.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(config().workspace_root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".warm-") && entry.is_directory(ec) && fs::is_empty(entry.path(), ec))
      fs::remove(entry.path(), ec);
  }
  {
    std::lock_guard lock(mutex_);
    if (timer_.joinable() || stopping_) return;
    timer_ = std::thread([this] { timer_loop(); });
  }
  pool_.start();
}

Resolution UserSandboxes::sandbox_for(const std::string& user_key) {
  Resolution out;
  if (!SandboxTemplate::valid_user_key(user_key)) {
    out.refusal =
        "agent '" + id() + "' is per-user and this user's key cannot name a workspace directory";
    return out;
  }
  const PerUserConfig& config = template_.config();
  std::lock_guard lock(mutex_);
  if (stopping_) {
    out.refusal = "the server is shutting down; retry shortly";
    return out;
  }
  if (auto it = users_.find(user_key); it != users_.end()) {
    out.agent = it->second;
    return out;
  }
  if (users_.size() >= config.max_users) {
    events_.count(&SandboxEvents::refusals);
    out.at_limit = true;
    out.refusal = "agent '" + id() + "' has reached its limit of " +
                  std::to_string(config.max_users) +
                  " user sandboxes (per_user.max_users); a sandbox is freed when its user has "
                  "been idle for idle_stop + idle_remove; retry later or ask the operator to "
                  "raise the limit";
    return out;
  }
  auto sandbox = std::make_shared<UserSandbox>(*this, user_key);
  users_.emplace(user_key, sandbox);
  user_count_.store(users_.size());
  pool_.wake();  // the pool may have to give up a slot it would refill
  out.agent = std::move(sandbox);
  return out;
}

SandboxCounts UserSandboxes::counts() const {
  std::vector<std::shared_ptr<UserSandbox>> users;
  SandboxCounts counts;
  counts.warm = pool_.ready();
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, sandbox] : users_) users.push_back(sandbox);
  }
  for (const auto& sandbox : users) sandbox->add_to(counts);
  return counts;
}

void UserSandboxes::sweep() {
  std::vector<std::shared_ptr<UserSandbox>> users;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, sandbox] : users_) users.push_back(sandbox);
  }
  const auto now = Clock::now();
  for (const auto& sandbox : users) sandbox->idle_step(now);
  users.clear();
  // Destroyed after the lock is let go: a record's destructor takes its own locks, which a call
  // holds while it takes the pool's (claim).
  std::vector<std::shared_ptr<UserSandbox>> forgotten;
  std::lock_guard lock(mutex_);
  for (auto it = users_.begin(); it != users_.end();) {
    // Held only here (no request has it) and holding nothing: no longer counts toward max_users.
    if (it->second.use_count() == 1 && it->second->empty()) {
      forgotten.push_back(std::move(it->second));
      it = users_.erase(it);
    } else {
      ++it;
    }
  }
  user_count_.store(users_.size());
  if (!forgotten.empty()) pool_.wake();
}

void UserSandboxes::timer_loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, tick_);
    if (stopping_) break;
    lock.unlock();
    sweep();
    lock.lock();
  }
}

void UserSandboxes::stop_all() noexcept {
  std::vector<std::shared_ptr<UserSandbox>> users;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
  }
  if (timer_.joinable()) timer_.join();
  pool_.stop();
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, sandbox] : users_) users.push_back(sandbox);
  }
  for (const auto& sandbox : users) sandbox->shutdown();
}

}  // namespace execmcp::host
