// UserSandboxes with an in-process backend that can stop, start and move its sandbox: one sandbox
// per user, max_users, idle stop and resume, removal, the warm pool and shutdown.
#include "agent/user_sandboxes.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "execmcp/sdk/network_events.hpp"
#include "execmcp/sdk/sandbox_control.hpp"
#include "test_support.hpp"

namespace execmcp::host {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// Every sandbox the fake backends made, by container name.
struct World {
  std::mutex mutex;
  std::map<std::string, std::string> state;  // "running", "stopped", "removed"
  std::atomic<int> builds{0}, starts{0}, suspends{0}, resumes{0}, relocations{0}, cleanups{0};
  std::atomic<int> call_ms{0};  // how long each execute() takes

  void set(const std::string& name, const std::string& value) {
    std::lock_guard lock(mutex);
    state[name] = value;
  }
  std::string get(const std::string& name) {
    std::lock_guard lock(mutex);
    return state.contains(name) ? state[name] : "";
  }
};

class FakeSandbox final : public sdk::ExecutorBackend,
                          public sdk::SandboxControl,
                          public sdk::NetworkEvents {
 public:
  FakeSandbox(World& world, std::string name, std::string workspace)
      : world_(world), name_(std::move(name)), workspace_(std::move(workspace)) {}

  std::string start() override {
    ++world_.starts;
    world_.set(name_, "running");
    return {};
  }
  void stop() noexcept override {}
  void cleanup() noexcept override {
    ++world_.cleanups;
    world_.set(name_, "removed");
  }
  sdk::ExecResult execute(const sdk::ExecRequest& request) override {
    sdk::ExecResult result;
    if (world_.get(name_) != "running") {
      result.error = name_ + " is " + world_.get(name_);
      return result;
    }
    if (int ms = world_.call_ms.load(); ms > 0) std::this_thread::sleep_for(ms * 1ms);
    std::lock_guard lock(mutex_);
    // "refuse HOST": its egress policy refuses a request of the command's to HOST.
    if (request.command.starts_with("refuse ") && sink_ != nullptr) {
      sdk::NetworkEvent event;
      event.host = request.command.substr(7);
      event.port = 443;
      event.method = "CONNECT";
      event.refused = true;
      event.reason = "not in this agent's egress allow list";
      sink_->on_network_event(event);
    }
    result.exit_code = 0;
    result.stdout_data = name_ + " " + workspace_ + " " + request.command;
    return result;
  }
  sdk::FileReadResult read_file(const sdk::FileReadRequest&) override { return {}; }
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request) override {
    return {request.data.size(), {}};
  }
  [[nodiscard]] sdk::BackendTraits traits() const override {
    sdk::BackendTraits traits;
    traits.isolated = true;
    return traits;
  }
  void* query_interface(std::string_view id) noexcept override {
    if (id == sdk::kNetworkEventsId) return static_cast<sdk::NetworkEvents*>(this);
    return id == sdk::kSandboxControlId ? static_cast<sdk::SandboxControl*>(this) : nullptr;
  }
  void subscribe(sdk::NetworkEventSink* sink) noexcept override {
    std::lock_guard lock(mutex_);
    sink_ = sink;
  }

  std::string suspend() noexcept override {
    ++world_.suspends;
    world_.set(name_, "stopped");
    return {};
  }
  std::string resume() noexcept override {
    ++world_.resumes;
    world_.set(name_, "running");
    return {};
  }
  std::string relocate_workspace(const std::string& host_path) noexcept override {
    ++world_.relocations;
    std::lock_guard lock(mutex_);
    workspace_ = host_path;
    return {};
  }

 private:
  World& world_;
  const std::string name_;
  std::mutex mutex_;
  std::string workspace_;
  sdk::NetworkEventSink* sink_ = nullptr;  // guarded by mutex_
};

struct Harness {
  tests::TempDir dir;
  World world;
  PerUserConfig config;

  Harness() {
    config.workspace_root = (dir.path() / "users").string();
    std::filesystem::create_directories(config.workspace_root);
    config.max_users = 10;
    config.idle_stop = 60s;
    config.idle_remove = 60s;
  }

  // Names the builder refuses to make (as an engine that is down would).
  std::function<bool(const std::string& name)> refuse = [](const std::string&) { return false; };
  // Runs before each build (a test may hold a build up here).
  std::function<void(const std::string& name)> before_build = [](const std::string&) {};

  std::unique_ptr<UserSandboxes> make(std::chrono::milliseconds tick = 20ms) {
    SandboxBuilder build = [this](const std::string& workspace, const std::string& name) {
      if (refuse(name)) throw std::runtime_error("engine down for " + name);
      before_build(name);
      ++world.builds;
      ConfiguredAgent::Parts parts;
      parts.id = "py";
      parts.instance_id = "1-test-" + name;
      parts.cwd = "/workspace";
      parts.backend_name = "fake";
      parts.backend = adopt_plugin_object<sdk::ExecutorBackend>(
          std::make_unique<FakeSandbox>(world, name, workspace));
      parts.audit = AuditLog::shared((dir.path() / "audit.jsonl").string());
      return std::make_unique<ConfiguredAgent>(std::move(parts));
    };
    sdk::BackendTraits traits;
    traits.isolated = true;
    return std::make_unique<UserSandboxes>("py", config, std::move(build), AgentCapabilities{},
                                           traits, tick);
  }

  static ExecuteOutcome run(Agent& agent, const std::string& command) {
    return agent.execute({command, std::nullopt, "", "t"}, nullptr, nullptr);
  }
};

// Polls `done` until it holds or 5 s passed.
bool eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

TEST(UserSandboxes, EachUserGetsASandboxOfTheirOwnInTheirOwnWorkspace) {
  Harness h;
  auto sandboxes = h.make();
  auto alice = sandboxes->sandbox_for("alice");
  auto bob = sandboxes->sandbox_for("bob");
  ASSERT_TRUE(alice.agent && bob.agent);
  EXPECT_NE(alice.agent.get(), bob.agent.get());
  EXPECT_EQ(sandboxes->sandbox_for("alice").agent.get(), alice.agent.get());
  EXPECT_EQ(alice.agent->cwd(), "/workspace");

  const auto a = Harness::run(*alice.agent, "pwd");
  const auto b = Harness::run(*bob.agent, "pwd");
  ASSERT_TRUE(a.result.error.empty()) << a.result.error;
  EXPECT_EQ(a.result.stdout_data, "u-alice " + h.config.workspace_root + "/alice pwd");
  EXPECT_EQ(b.result.stdout_data, "u-bob " + h.config.workspace_root + "/bob pwd");
  struct stat st {};
  ASSERT_EQ(::stat((h.config.workspace_root + "/alice").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);  // no other user of this host may enter it
  EXPECT_EQ(sandboxes->events().creates, 2u);
  EXPECT_EQ(sandboxes->counts().running, 2u);
  EXPECT_NE(alice.agent->call_limit().key, bob.agent->call_limit().key);
  EXPECT_TRUE(alice.agent->call_limit().per_user);
  // Each audit record names the user whose sandbox ran the call.
  const std::string audit = tests::read_text(h.dir.path() / "audit.jsonl");
  EXPECT_THAT(audit, HasSubstr(R"("tool":"execute_command","user":"alice")"));
  EXPECT_THAT(audit, HasSubstr(R"("tool":"execute_command","user":"bob")"));
}

TEST(UserSandboxes, ARequestASandboxsPolicyRefusedIsAuditedWithItsUser) {
  Harness h;
  auto sandboxes = h.make();
  auto alice = sandboxes->sandbox_for("alice");
  auto bob = sandboxes->sandbox_for("bob");
  ASSERT_TRUE(alice.agent && bob.agent);
  Harness::run(*alice.agent, "refuse denied.test");
  Harness::run(*bob.agent, "true");
  std::vector<nlohmann::json> egress;
  std::istringstream in(tests::read_text(h.dir.path() / "audit.jsonl"));
  for (std::string line; std::getline(in, line);) {
    auto record = nlohmann::json::parse(line);
    if (record["tool"] == "egress") egress.push_back(std::move(record));
  }
  ASSERT_EQ(egress.size(), 1u);
  EXPECT_EQ(egress[0]["user"], "alice");
  EXPECT_EQ(egress[0]["agent"], "py");
  EXPECT_EQ(egress[0]["host"], "denied.test");
  EXPECT_EQ(egress[0]["port"], 443);
  EXPECT_EQ(egress[0]["verdict"], "refused");
}

TEST(UserSandboxes, AKeyThatCannotNameADirectoryIsRefused) {
  Harness h;
  auto sandboxes = h.make();
  for (const std::string& key :
       std::vector<std::string>{"", "..", ".warm-1-1", "a/b", "-x", std::string(64, 'a')}) {
    const auto found = sandboxes->sandbox_for(key);
    EXPECT_EQ(found.agent, nullptr) << key;
    EXPECT_FALSE(found.at_limit);
    EXPECT_THAT(found.refusal, HasSubstr("cannot name a workspace directory"));
  }
  EXPECT_TRUE(SandboxTemplate::valid_user_key("jwt-0123456789abcdef0123456789abcdef"));
}

// Issue 28, finding 1: a token named "warm-1" took warm sandbox 1's container name, one named
// "alice-egress" alice's proxy's, and keys cut at 128 characters shared one.
TEST(UserSandboxes, NoUserKeyNamesAnotherUsersWarmOrProxyObject) {
  const std::vector<std::string> keys = {"alice",
                                         "warm-1",
                                         "alice-egress",
                                         "w-1",
                                         "u-alice",
                                         "alice_degress",
                                         "alice.egress",
                                         "a_d",
                                         "a-",
                                         "a_",
                                         "a.",
                                         "A",
                                         "a",
                                         "x-egress-net",
                                         "1",
                                         "w_1"};
  std::set<std::string> names;
  for (const auto& key : keys) {
    ASSERT_TRUE(SandboxTemplate::valid_user_key(key)) << key;
    const std::string name = SandboxTemplate::user_sandbox_name(key);
    EXPECT_TRUE(names.insert(name).second) << key << " -> " << name << " twice";
    EXPECT_TRUE(name.starts_with("u-")) << name;
    // No '-' after the role: no user's name ends in a suffix another object of a sandbox has.
    EXPECT_EQ(name.find('-', 2), std::string::npos) << name;
    for (std::uint64_t n : {1u, 2u, 10u}) EXPECT_NE(name, SandboxTemplate::warm_sandbox_name(n));
  }
  // Long keys that share all but their last character stay apart, and none is cut.
  const std::string stem(62, 'k');
  EXPECT_NE(SandboxTemplate::user_sandbox_name(stem + "a"),
            SandboxTemplate::user_sandbox_name(stem + "b"));
  EXPECT_EQ(SandboxTemplate::longest_sandbox_name().size(), 2 + 2 * SandboxTemplate::kMaxUserKey);
  for (const auto& key : keys)
    EXPECT_LE(SandboxTemplate::user_sandbox_name(key).size(),
              SandboxTemplate::longest_sandbox_name().size());
}

TEST(UserSandboxes, MaxUsersRefusesANewUserAndNoExistingUserNotices) {
  Harness h;
  h.config.max_users = 2;
  auto sandboxes = h.make();
  auto alice = sandboxes->sandbox_for("alice");
  auto bob = sandboxes->sandbox_for("bob");
  const auto carol = sandboxes->sandbox_for("carol");
  EXPECT_EQ(carol.agent, nullptr);
  EXPECT_TRUE(carol.at_limit);
  EXPECT_THAT(carol.refusal, HasSubstr("limit of 2 user sandboxes (per_user.max_users)"));
  EXPECT_EQ(sandboxes->events().refusals, 1u);
  EXPECT_EQ(sandboxes->sandbox_for("alice").agent.get(), alice.agent.get());
  EXPECT_TRUE(Harness::run(*bob.agent, "true").result.error.empty());
  EXPECT_FALSE(std::filesystem::exists(h.config.workspace_root + "/carol"));
}

TEST(UserSandboxes, AnIdleSandboxIsStoppedAndItsNextCallStartsItAgainWithANotice) {
  Harness h;
  h.config.idle_stop = 200ms;
  auto sandboxes = h.make();
  sandboxes->start();
  auto alice = sandboxes->sandbox_for("alice");
  ASSERT_TRUE(Harness::run(*alice.agent, "one").result.error.empty());
  ASSERT_TRUE(eventually([&] { return sandboxes->counts().stopped == 1; }));
  EXPECT_EQ(h.world.get("u-alice"), "stopped");
  EXPECT_EQ(sandboxes->events().stops, 1u);

  const auto again = Harness::run(*alice.agent, "two");
  ASSERT_TRUE(again.result.error.empty()) << again.result.error;
  EXPECT_EQ(again.result.stdout_data, "u-alice " + h.config.workspace_root + "/alice two");
  ASSERT_FALSE(again.result.notices.empty());
  EXPECT_THAT(again.result.notices.front(), HasSubstr("sandbox started again"));
  EXPECT_EQ(h.world.resumes.load(), 1);
  EXPECT_EQ(h.world.builds.load(), 1);  // the same sandbox, not a new one
  EXPECT_EQ(sandboxes->events().starts, 1u);
}

TEST(UserSandboxes, AFileCallThatStartsTheSandboxLeavesItsNoticeForTheNextCommand) {
  Harness h;
  h.config.idle_stop = 300ms;
  auto sandboxes = h.make();
  sandboxes->start();
  auto alice = sandboxes->sandbox_for("alice");
  ASSERT_TRUE(Harness::run(*alice.agent, "one").result.error.empty());
  ASSERT_TRUE(eventually([&] { return sandboxes->counts().stopped == 1; }));
  sdk::FileWriteRequest write;
  write.path = "x";
  write.data = "y";
  EXPECT_TRUE(alice.agent->write_file(write, "t").error.empty());
  EXPECT_EQ(h.world.resumes.load(), 1);
  const auto next = Harness::run(*alice.agent, "two");
  ASSERT_EQ(next.result.notices.size(), 1u);
  EXPECT_THAT(next.result.notices.front(), HasSubstr("sandbox started again"));
  EXPECT_TRUE(Harness::run(*alice.agent, "three").result.notices.empty());  // said once
}

TEST(UserSandboxes, ACallInFlightIsNeverStoppedUnderIt) {
  Harness h;
  h.config.idle_stop = 100ms;
  auto sandboxes = h.make();
  sandboxes->start();
  auto alice = sandboxes->sandbox_for("alice");
  h.world.call_ms = 600;
  const auto outcome = Harness::run(*alice.agent, "slow");
  EXPECT_TRUE(outcome.result.error.empty()) << outcome.result.error;
  EXPECT_EQ(h.world.suspends.load(), 0);
  h.world.call_ms = 0;
  // Idle is counted from the end of the last call.
  EXPECT_TRUE(eventually([&] { return h.world.suspends.load() == 1; }));
}

TEST(UserSandboxes, AStoppedSandboxIsRemovedThenMadeAnewWithTheWorkspaceKept) {
  Harness h;
  h.config.idle_stop = 100ms;
  h.config.idle_remove = 200ms;
  auto sandboxes = h.make();
  sandboxes->start();
  {
    auto alice = sandboxes->sandbox_for("alice");
    ASSERT_TRUE(Harness::run(*alice.agent, "one").result.error.empty());
    tests::write_text(h.config.workspace_root + "/alice/kept.txt", "x");
  }
  ASSERT_TRUE(eventually([&] { return h.world.get("u-alice") == "removed"; }));
  // Forgotten once it holds nothing: it no longer counts toward max_users.
  ASSERT_TRUE(eventually([&] {
    const auto counts = sandboxes->counts();
    return counts.running + counts.stopped == 0;
  }));
  EXPECT_EQ(sandboxes->events().removals, 1u);
  EXPECT_TRUE(std::filesystem::exists(h.config.workspace_root + "/alice/kept.txt"));

  auto alice = sandboxes->sandbox_for("alice");
  const auto again = Harness::run(*alice.agent, "two");
  ASSERT_TRUE(again.result.error.empty()) << again.result.error;
  ASSERT_FALSE(again.result.notices.empty());
  EXPECT_THAT(again.result.notices.front(), HasSubstr("a new sandbox was made for this user"));
  EXPECT_EQ(h.world.builds.load(), 2);
}

TEST(UserSandboxes, ANewUserClaimsAWarmSandboxAndThePoolRefills) {
  Harness h;
  h.config.warm = 1;
  auto sandboxes = h.make();
  sandboxes->start();
  ASSERT_TRUE(eventually([&] { return sandboxes->counts().warm == 1; }));
  EXPECT_EQ(h.world.get("w-1"), "running");  // started before any user called

  auto alice = sandboxes->sandbox_for("alice");
  const auto outcome = Harness::run(*alice.agent, "pwd");
  ASSERT_TRUE(outcome.result.error.empty()) << outcome.result.error;
  // The warm container, its workspace renamed to the user's.
  EXPECT_EQ(outcome.result.stdout_data, "w-1 " + h.config.workspace_root + "/alice pwd");
  EXPECT_TRUE(std::filesystem::is_directory(h.config.workspace_root + "/alice"));
  EXPECT_EQ(sandboxes->events().claims, 1u);
  EXPECT_EQ(h.world.relocations.load(), 1);
  ASSERT_TRUE(eventually([&] { return sandboxes->counts().warm == 1; }));
  EXPECT_EQ(h.world.get("w-2"), "running");

  // A returning user (a workspace from before) gets a container made for that workspace.
  std::filesystem::create_directories(h.config.workspace_root + "/bob");
  auto bob = sandboxes->sandbox_for("bob");
  EXPECT_EQ(Harness::run(*bob.agent, "pwd").result.stdout_data,
            "u-bob " + h.config.workspace_root + "/bob pwd");
  EXPECT_EQ(sandboxes->events().claims, 1u);
  EXPECT_EQ(sandboxes->events().creates, 1u);
}

TEST(UserSandboxes, TheWarmPoolNeverMakesTheEngineHoldMoreThanMaxUsers) {
  Harness h;
  h.config.max_users = 2;
  h.config.warm = 2;
  auto sandboxes = h.make();
  sandboxes->start();
  ASSERT_TRUE(eventually([&] { return sandboxes->counts().warm == 2; }));
  auto alice = sandboxes->sandbox_for("alice");
  ASSERT_TRUE(Harness::run(*alice.agent, "x").result.error.empty());
  auto bob = sandboxes->sandbox_for("bob");
  ASSERT_TRUE(Harness::run(*bob.agent, "x").result.error.empty());
  std::this_thread::sleep_for(200ms);  // ten ticks: a refill would have happened
  EXPECT_EQ(sandboxes->counts().warm, 0u);
  EXPECT_EQ(h.world.builds.load(), 2);
}

TEST(UserSandboxes, ASandboxThatCannotBeMadeFailsOnlyItsUsersCallsWithTheReason) {
  Harness h;
  h.config.warm = 1;
  h.refuse = [](const std::string& name) { return name != "u-bob"; };
  auto sandboxes = h.make();
  sandboxes->start();
  auto alice = sandboxes->sandbox_for("alice");
  const auto failed = Harness::run(*alice.agent, "x");
  EXPECT_THAT(
      failed.result.error,
      HasSubstr("agent 'py': cannot make a sandbox for this user: engine down for u-alice"));
  auto bob = sandboxes->sandbox_for("bob");
  EXPECT_TRUE(Harness::run(*bob.agent, "x").result.error.empty());
  EXPECT_EQ(sandboxes->counts().warm, 0u);  // the pool kept failing; no user waited on it
  // No directory is left by the warm pool's failed attempts (the last one ends with stop_all()).
  sandboxes->stop_all();
  for (const auto& entry : std::filesystem::directory_iterator(h.config.workspace_root))
    EXPECT_FALSE(entry.path().filename().string().starts_with(".warm-")) << entry.path();
}

TEST(UserSandboxes, AReturningUserTakesTheRoomOfAWarmContainerPastMaxUsers) {
  Harness h;
  h.config.max_users = 2;
  h.config.warm = 1;
  auto sandboxes = h.make();
  sandboxes->start();
  ASSERT_TRUE(eventually([&] { return sandboxes->counts().warm == 1; }));
  // Two returning users: the first fits beside the warm container, the second takes its room.
  for (const std::string& name : std::vector<std::string>{"alice", "bob"}) {
    std::filesystem::create_directories(h.config.workspace_root + "/" + name);
    auto user = sandboxes->sandbox_for(name);
    ASSERT_TRUE(Harness::run(*user.agent, "x").result.error.empty());
  }
  const std::string warm_dir =
      h.config.workspace_root + "/.warm-" + std::to_string(::getpid()) + "-1";
  ASSERT_TRUE(eventually(
      [&] { return h.world.get("w-1") == "removed" && !std::filesystem::exists(warm_dir); }));
  const auto counts = sandboxes->counts();
  EXPECT_EQ(counts.warm, 0u);
  EXPECT_EQ(counts.running, 2u);
}

TEST(UserSandboxes, AWarmContainerFinishedAfterUsersFilledMaxUsersIsNotKept) {
  Harness h;
  h.config.max_users = 1;
  h.config.warm = 1;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> warm_building{false};
  h.before_build = [&](const std::string& name) {
    if (!name.starts_with("w-")) return;
    warm_building = true;
    released.wait();
  };
  auto sandboxes = h.make();
  sandboxes->start();
  ASSERT_TRUE(eventually([&] { return warm_building.load(); }));
  auto alice = sandboxes->sandbox_for("alice");  // no warm one is ready: made for her
  ASSERT_TRUE(Harness::run(*alice.agent, "x").result.error.empty());
  release.set_value();
  ASSERT_TRUE(eventually([&] { return h.world.get("w-1") == "removed"; }));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(sandboxes->counts().warm, 0u);
  EXPECT_EQ(h.world.get("u-alice"), "running");
}

TEST(UserSandboxes, StopAllRemovesEveryContainerAndNoWorkspace) {
  Harness h;
  h.config.warm = 1;
  auto sandboxes = h.make();
  sandboxes->start();
  ASSERT_TRUE(eventually([&] { return sandboxes->counts().warm == 1; }));
  std::filesystem::create_directories(h.config.workspace_root + "/bob");
  auto bob = sandboxes->sandbox_for("bob");
  ASSERT_TRUE(Harness::run(*bob.agent, "x").result.error.empty());
  sandboxes->stop_all();
  EXPECT_EQ(h.world.get("u-bob"), "removed");
  EXPECT_EQ(h.world.get("w-1"), "removed");
  EXPECT_TRUE(std::filesystem::is_directory(h.config.workspace_root + "/bob"));
  std::set<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(h.config.workspace_root))
    left.insert(entry.path().filename().string());
  EXPECT_EQ(left, std::set<std::string>{"bob"});  // the warm directory went with its container
  const auto after = Harness::run(*bob.agent, "x");
  EXPECT_THAT(after.result.error, HasSubstr("shutting down"));
  EXPECT_EQ(sandboxes->sandbox_for("carol").agent, nullptr);
}

TEST(UserSandboxes, StartRemovesTheEmptyWarmDirectoriesAKilledServerLeft) {
  Harness h;
  std::filesystem::create_directories(h.config.workspace_root + "/.warm-999-1");
  std::filesystem::create_directories(h.config.workspace_root + "/alice");
  auto sandboxes = h.make();
  sandboxes->start();
  EXPECT_FALSE(std::filesystem::exists(h.config.workspace_root + "/.warm-999-1"));
  EXPECT_TRUE(std::filesystem::exists(h.config.workspace_root + "/alice"));
}

}  // namespace
}  // namespace execmcp::host
