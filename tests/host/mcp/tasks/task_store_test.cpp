// TaskStore (owner binding, ids, caps, TTL with a fake clock, cancel, waiters) and TaskService
// (work on threads of its own, cancel reaching the work, shutdown).
#include "mcp/tasks/task_store.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <regex>
#include <set>
#include <thread>

#include "mcp/tasks/task_service.hpp"
#include "mcp/tasks/task_wire.hpp"

namespace execmcp::host::mcp::tasks {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

struct FakeClock {
  SystemClock::time_point now = SystemClock::time_point(std::chrono::hours(24 * 365 * 56));
  TaskStore::Clock fn() {
    return [this] { return now; };
  }
};

const TaskOwner kAlice{"agent", "alice", ""};
const TaskOwner kBob{"agent", "bob", ""};

std::string id_of(const std::variant<CreatedTask, TaskError>& created) {
  EXPECT_TRUE(std::holds_alternative<CreatedTask>(created));
  return std::get<CreatedTask>(created).task.id;
}

RpcOutcome ok_result() {
  return json{{"content", json::array()}, {"isError", false}};
}

TEST(TaskStoreTest, IdsAre128RandomBitsInHex) {
  const std::regex hex("^[0-9a-f]{32}$");
  std::set<std::string> seen;
  for (int i = 0; i < 10000; ++i) {
    const std::string id = random_task_id();
    ASSERT_TRUE(std::regex_match(id, hex)) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 10000u);
}

TEST(TaskStoreTest, AnotherOwnerSeesNothing) {
  FakeClock clock;
  TaskStore store({}, clock.fn());
  const std::string id = id_of(store.create(kAlice, std::nullopt));
  EXPECT_TRUE(std::holds_alternative<TaskSnapshot>(store.get(kAlice, id)));
  // Another principal, another user of a per-user agent, another agent's endpoint: not found,
  // exactly as an id that never existed.
  for (const TaskOwner& other :
       {kBob, TaskOwner{"agent", "alice", "user-2"}, TaskOwner{"other-agent", "alice", ""}}) {
    EXPECT_EQ(std::get<TaskError>(store.get(other, id)), TaskError::kNotFound);
    EXPECT_EQ(std::get<TaskError>(store.cancel(other, id, "x")), TaskError::kNotFound);
    EXPECT_EQ(store.wait_result(other, id, [](const auto&, const auto&) { FAIL(); }),
              TaskError::kNotFound);
    EXPECT_TRUE(store.list(other, "")->tasks.empty());
  }
  EXPECT_EQ(std::get<TaskError>(store.get(kAlice, std::string(32, '0'))), TaskError::kNotFound);
  EXPECT_EQ(std::get<TaskSnapshot>(store.get(kAlice, id)).status, TaskStatus::kWorking);
}

TEST(TaskStoreTest, CapsPerOwnerAndServer) {
  FakeClock clock;
  TaskStoreOptions options;
  options.max_live_per_owner = 2;
  options.max_live = 3;
  TaskStore store(options, clock.fn());
  const std::string a = id_of(store.create(kAlice, std::nullopt));
  const std::string b = id_of(store.create(kAlice, std::nullopt));
  // Only working tasks hold their place: refused while both run.
  EXPECT_EQ(std::get<TaskError>(store.create(kAlice, std::nullopt)), TaskError::kOwnerCap);
  const std::string c = id_of(store.create(kBob, std::nullopt));
  EXPECT_EQ(std::get<TaskError>(store.create(kBob, std::nullopt)), TaskError::kServerCap);
  // An ended task makes room at a cap, its owner's oldest first, as if its TTL had passed.
  store.finish(a, ok_result(), TaskStatus::kCompleted, "done");
  id_of(store.create(kAlice, std::nullopt));
  EXPECT_EQ(std::get<TaskError>(store.get(kAlice, a)), TaskError::kExpired);
  // Bob's own cap is not reached, the server's is: the oldest ended task anywhere makes room.
  clock.now += 1s;
  store.finish(b, ok_result(), TaskStatus::kCompleted, "done");
  id_of(store.create(kBob, std::nullopt));
  EXPECT_EQ(std::get<TaskError>(store.get(kAlice, b)), TaskError::kExpired);
  EXPECT_TRUE(std::holds_alternative<TaskSnapshot>(store.get(kBob, c)));
  EXPECT_EQ(store.live(), 3u);
  const RpcError error = task_error(TaskError::kOwnerCap, "create", options, "agent");
  EXPECT_EQ(error.code, -32000);
  EXPECT_EQ(error.data["limit"], "tasks");
  EXPECT_NE(error.message.find("--max-tasks-per-principal"), std::string::npos);
}

TEST(TaskStoreTest, TtlIsClampedAndFreesTheResultAfterTheTaskEnds) {
  FakeClock clock;
  TaskStoreOptions options;
  options.max_ttl = 10min;
  options.keep_after_end = 60s;
  TaskStore store(options, clock.fn());
  auto created = std::get<CreatedTask>(store.create(kAlice, Millis(std::chrono::hours(24))));
  EXPECT_EQ(created.task.ttl, Millis(10min));
  const std::string short_id = id_of(store.create(kAlice, Millis(1000)));
  // Working tasks are never freed, whatever their TTL.
  clock.now += 20min;
  EXPECT_TRUE(std::holds_alternative<TaskSnapshot>(store.get(kAlice, short_id)));
  store.finish(short_id, ok_result(), TaskStatus::kCompleted, "done");
  const auto ended = std::get<TaskSnapshot>(store.get(kAlice, short_id));
  EXPECT_EQ(ended.ttl, Millis(20min + 60s)) << "the TTL said is when it is really freed";
  clock.now += 59s;
  EXPECT_TRUE(std::holds_alternative<TaskSnapshot>(store.get(kAlice, short_id)));
  clock.now += 2s;
  EXPECT_EQ(store.sweep(), 1u);
  EXPECT_EQ(std::get<TaskError>(store.get(kAlice, short_id)), TaskError::kExpired);
  EXPECT_EQ(std::get<TaskError>(store.get(kBob, short_id)), TaskError::kNotFound);
  // The tombstone fades too.
  clock.now += options.tombstone_life + 1s;
  EXPECT_EQ(std::get<TaskError>(store.get(kAlice, short_id)), TaskError::kNotFound);
  EXPECT_EQ(store.live(), 1u);
}

TEST(TaskStoreTest, CancelIsStickyAndKeepsTheLateOutcome) {
  FakeClock clock;
  TaskStore store({}, clock.fn());
  std::vector<std::string> notes;
  auto created =
      std::get<CreatedTask>(store.create(kAlice, std::nullopt, [&](const TaskSnapshot& t) {
        notes.emplace_back(to_string(t.status));
      }));
  const std::string id = created.task.id;
  std::optional<RpcOutcome> got;
  ASSERT_FALSE(store.wait_result(kAlice, id, [&](const auto&, const RpcOutcome& o) { got = o; }));
  EXPECT_FALSE(got) << "no outcome yet: the waiter waits";
  const auto cancelled =
      std::get<TaskSnapshot>(store.cancel(kAlice, id, "cancelled by tasks/cancel"));
  EXPECT_EQ(cancelled.status, TaskStatus::kCancelled);
  EXPECT_TRUE(created.cancel->cancel_requested());
  EXPECT_EQ(std::get<TaskError>(store.cancel(kAlice, id, "again")), TaskError::kTerminal);
  store.finish(id, ok_result(), TaskStatus::kCompleted, "done");
  EXPECT_EQ(std::get<TaskSnapshot>(store.get(kAlice, id)).status, TaskStatus::kCancelled);
  ASSERT_TRUE(got);
  EXPECT_TRUE(std::holds_alternative<json>(*got));
  EXPECT_EQ(notes, std::vector<std::string>{"cancelled"});
}

TEST(TaskStoreTest, ListIsTheOwnersInPages) {
  FakeClock clock;
  TaskStore store({}, clock.fn());
  std::vector<std::string> mine;
  for (int i = 0; i < 5; ++i) {
    mine.push_back(id_of(store.create(kAlice, std::nullopt)));
    id_of(store.create(kBob, std::nullopt));
  }
  std::vector<std::string> seen;
  std::string cursor;
  int pages = 0;
  do {
    auto page = store.list(kAlice, cursor, 2);
    ASSERT_TRUE(page);
    for (const auto& task : page->tasks) seen.push_back(task.id);
    cursor = page->next_cursor;
    ++pages;
  } while (!cursor.empty());
  EXPECT_EQ(seen, mine);
  EXPECT_EQ(pages, 3);
  EXPECT_FALSE(store.list(kAlice, "not-a-cursor"));
  EXPECT_FALSE(store.list(kAlice, "999999"));
}

// Many threads at once on one store: creation, reads, lists, cancels, waiters, finishes and
// expiry. Run under TSan in CI (scripts/sanitize.sh); here it checks every waiter hears once.
TEST(TaskStoreTest, ConcurrentUseIsSafeAndEveryWaiterHearsOnce) {
  TaskStoreOptions options;
  options.max_live_per_owner = 100000;
  options.max_live = 100000;
  options.keep_after_end = Millis(0);
  options.default_ttl = Millis(1);
  TaskStore store(options);
  std::atomic<int> waited{0};
  std::atomic<int> heard{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const TaskOwner owner{"agent", "p" + std::to_string(t % 2), ""};
      for (int i = 0; i < 200; ++i) {
        const auto created = store.create(owner, std::nullopt);
        if (!std::holds_alternative<CreatedTask>(created)) continue;
        const std::string id = std::get<CreatedTask>(created).task.id;
        if (!store.wait_result(owner, id, [&](const auto&, const auto&) { ++heard; })) ++waited;
        (void)store.get(owner, id);
        (void)store.list(owner, "", 10);
        if (i % 3 == 0) (void)store.cancel(owner, id, "x");
        store.finish(id, ok_result(), TaskStatus::kCompleted, "done");
        store.sweep();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(heard.load(), waited.load());
  EXPECT_EQ(waited.load(), 800);
}

TEST(TaskWireTest, TaskShape) {
  TaskSnapshot task{std::string(32, 'a'),
                    TaskStatus::kWorking,
                    "running 1 s",
                    SystemClock::time_point(std::chrono::milliseconds(1764363370123)),
                    SystemClock::time_point(std::chrono::milliseconds(1764363371000)),
                    Millis(60000),
                    Millis(250)};
  const json wire = task_json(task);
  EXPECT_EQ(wire["taskId"], task.id);
  EXPECT_EQ(wire["status"], "working");
  EXPECT_EQ(wire["createdAt"], "2025-11-28T20:56:10.123Z");
  EXPECT_EQ(wire["lastUpdatedAt"], "2025-11-28T20:56:11.000Z");
  EXPECT_EQ(wire["ttl"], 60000);
  EXPECT_EQ(wire["pollInterval"], 250);
  EXPECT_EQ(wire["statusMessage"], "running 1 s");
  EXPECT_EQ(capabilities_json(false).contains("list"), false);
  EXPECT_EQ(capabilities_json(true)["requests"]["tools"]["call"], json::object());
  EXPECT_EQ(task_error(TaskError::kNotFound, "retrieve", {}, "a").message,
            "Failed to retrieve task: Task not found");
  EXPECT_EQ(task_error(TaskError::kExpired, "retrieve", {}, "a").code, -32602);
}

TEST(TaskWireTest, ExtensionShapes) {
  TaskSnapshot task{std::string(32, 'b'),
                    TaskStatus::kFailed,
                    "the tool reported an error",
                    SystemClock::time_point(std::chrono::milliseconds(1764363370123)),
                    SystemClock::time_point(std::chrono::milliseconds(1764363371000)),
                    Millis(60000),
                    Millis(250)};
  // A tool result with isError: failed in 2025-11-25, completed (result inlined) in the extension.
  const RpcOutcome is_error = json{{"content", json::array()},
                                   {"isError", true},
                                   {"resultType", "complete"},
                                   {"_meta", {{"io.modelcontextprotocol/serverInfo", "x"}}}};
  json detailed = extension_detailed_task(task, &is_error);
  EXPECT_EQ(detailed["status"], "completed");
  EXPECT_EQ(detailed["ttlMs"], 60000);
  EXPECT_EQ(detailed["pollIntervalMs"], 250);
  EXPECT_FALSE(detailed.contains("ttl"));
  EXPECT_FALSE(detailed.contains("pollInterval"));
  EXPECT_EQ(detailed["result"]["isError"], true);
  EXPECT_FALSE(detailed["result"].contains("_meta")) << "no envelope on an inlined result";
  EXPECT_FALSE(detailed["result"].contains("resultType"));
  EXPECT_FALSE(detailed.contains("error"));
  // A JSON-RPC error: failed, with the error inlined.
  const RpcOutcome error = RpcError{-32603, "Internal error: boom"};
  detailed = extension_detailed_task(task, &error);
  EXPECT_EQ(detailed["status"], "failed");
  EXPECT_EQ(detailed["error"]["code"], -32603);
  EXPECT_FALSE(detailed.contains("result"));
  // Working: neither.
  task.status = TaskStatus::kWorking;
  detailed = extension_detailed_task(task, nullptr);
  EXPECT_EQ(detailed["status"], "working");
  EXPECT_FALSE(detailed.contains("result") || detailed.contains("error"));
  const RpcError missing = missing_extension_error("tasks/get");
  EXPECT_EQ(missing.code, -32021);
  EXPECT_EQ(missing.data["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
            json::object());
}

TEST(TaskServiceTest, WorkRunsOnItsOwnThreadsAndCancelReachesIt) {
  TaskServiceOptions options;
  options.max_running = 2;
  TaskService service(options);
  std::promise<std::thread::id> ran_on;
  auto started = service.start(kAlice, std::nullopt,
                               [&](const std::string&, const sdk::CancelToken& cancel,
                                   TaskOutputMeter& meter) -> RpcOutcome {
                                 meter.on_output(sdk::StreamKind::Stdout, "12345");
                                 ran_on.set_value(std::this_thread::get_id());
                                 while (!cancel.cancel_requested())
                                   std::this_thread::sleep_for(1ms);
                                 return json{{"content", json::array()}, {"isError", false}};
                               });
  const std::string id = std::get<TaskSnapshot>(started).id;
  EXPECT_NE(ran_on.get_future().get(), std::this_thread::get_id());
  const auto working = std::get<TaskSnapshot>(service.store().get(kAlice, id));
  EXPECT_EQ(working.status, TaskStatus::kWorking);
  EXPECT_NE(working.status_message.find("stdout 5 B"), std::string::npos) << working.status_message;
  EXPECT_EQ(service.running(), 1u);
  ASSERT_TRUE(std::holds_alternative<TaskSnapshot>(service.store().cancel(kAlice, id, "by test")));
  EXPECT_TRUE(service.wait_idle(5s));
  EXPECT_EQ(std::get<TaskSnapshot>(service.store().get(kAlice, id)).status, TaskStatus::kCancelled);
}

TEST(TaskServiceTest, OutcomeSettlesTheStatusAsIn2025) {
  TaskService service;
  auto run = [&](RpcOutcome outcome) {
    auto started = service.start(kAlice, std::nullopt,
                                 [outcome](const std::string&, const sdk::CancelToken&,
                                           TaskOutputMeter&) { return outcome; });
    const std::string id = std::get<TaskSnapshot>(started).id;
    EXPECT_TRUE(service.wait_idle(5s));
    return std::get<TaskSnapshot>(service.store().get(kAlice, id));
  };
  EXPECT_EQ(run(json{{"isError", false}, {"structuredContent", {{"exit_code", 3}}}}).status,
            TaskStatus::kCompleted);
  EXPECT_EQ(run(json{{"isError", true}}).status, TaskStatus::kFailed);
  const auto failed = run(RpcError{-32603, "Internal error: boom"});
  EXPECT_EQ(failed.status, TaskStatus::kFailed);
  EXPECT_EQ(failed.status_message, "Internal error: boom");
}

TEST(TaskServiceTest, ShutdownCancelsWorkStillRunningAndQueued) {
  TaskServiceOptions options;
  options.max_running = 1;
  auto service = std::make_unique<TaskService>(options);
  std::atomic<int> cancelled{0};
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto started = service->start(
        kAlice, std::nullopt,
        [&](const std::string&, const sdk::CancelToken& cancel, TaskOutputMeter&) -> RpcOutcome {
          while (!cancel.cancel_requested()) std::this_thread::sleep_for(1ms);
          ++cancelled;
          return json{{"isError", true}};
        });
    ids.push_back(std::get<TaskSnapshot>(started).id);
  }
  const auto waiting = std::get<TaskSnapshot>(service->store().get(kAlice, ids[2]));
  EXPECT_EQ(waiting.status_message, "waiting for a free task thread");
  service->shutdown();
  EXPECT_EQ(cancelled.load(), 3);
  for (const auto& id : ids) {
    EXPECT_EQ(std::get<TaskSnapshot>(service->store().get(kAlice, id)).status,
              TaskStatus::kCancelled);
  }
}

}  // namespace
}  // namespace execmcp::host::mcp::tasks
