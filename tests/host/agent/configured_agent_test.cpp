// Tests of ConfiguredAgent: filter chain order, limits, guards around plugins, audit and cleanup.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "agent/configured_agent.hpp"
#include "agent/lazy_agent.hpp"
#include "config/config.hpp"
#include "execmcp/sdk/network_events.hpp"
#include "test_support.hpp"

namespace execmcp::host {
namespace {

using ::testing::HasSubstr;

struct BackendLog {
  std::mutex mutex;
  std::vector<sdk::ExecRequest> requests;
  std::atomic<int> starts{0};
  std::atomic<int> stops{0};
  std::atomic<int> cleanups{0};
};

class FakeBackend final : public sdk::ExecutorBackend {
 public:
  explicit FakeBackend(BackendLog& log, std::string start_error = {}, bool throw_on_execute = false)
      : log_(log), start_error_(std::move(start_error)), throw_(throw_on_execute) {}
  std::string start() override {
    ++log_.starts;
    return start_error_;
  }
  void stop() noexcept override { ++log_.stops; }
  void cleanup() noexcept override { ++log_.cleanups; }
  sdk::ExecResult execute(const sdk::ExecRequest& request) override {
    if (throw_) throw std::runtime_error("engine on fire");
    {
      std::lock_guard lock(log_.mutex);
      log_.requests.push_back(request);
    }
    sdk::ExecResult result;
    result.exit_code = 7;
    result.stdout_data = "ran:" + request.command;
    result.duration_seconds = 0.25;
    if (request.work_dir == "resolved") result.work_dir = "/real/resolved";
    return result;
  }
  sdk::FileReadResult read_file(const sdk::FileReadRequest&) override {
    throw std::runtime_error("disk gone");
  }
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request) override {
    return {request.data.size(), {}};
  }
  [[nodiscard]] sdk::BackendTraits traits() const override {
    sdk::BackendTraits traits;
    traits.python = "python3.11";
    return traits;
  }

 private:
  BackendLog& log_;
  std::string start_error_;
  bool throw_;
};

class FakeFilter final : public sdk::CommandFilter {
 public:
  FakeFilter(std::string needle, std::atomic<int>& calls)
      : needle_(std::move(needle)), calls_(calls) {}
  [[nodiscard]] sdk::FilterVerdict check(
      const sdk::FilterRequest& request) const noexcept override {
    ++calls_;
    if (request.command.find(needle_) != std::string_view::npos)
      return sdk::FilterVerdict::deny("has-" + needle_, "contains " + needle_);
    return sdk::FilterVerdict::allow();
  }

 private:
  std::string needle_;
  std::atomic<int>& calls_;
};

struct Harness {
  BackendLog backend_log;
  std::atomic<int> first_calls{0};
  std::atomic<int> second_calls{0};
  tests::TempDir dir;
  std::string audit_path = (dir.path() / "audit.jsonl").string();

  std::unique_ptr<ConfiguredAgent> make(std::string start_error = {}, bool throwing = false) {
    ConfiguredAgent::Parts parts;
    parts.id = "alpha";
    parts.instance_id = "123-abc";
    parts.cwd = "/ws";
    parts.backend_name = "fake";
    parts.backend = adopt_plugin_object<sdk::ExecutorBackend>(
        std::make_unique<FakeBackend>(backend_log, std::move(start_error), throwing));
    parts.filters.push_back({"first", adopt_plugin_object<sdk::CommandFilter>(
                                          std::make_unique<FakeFilter>("sudo", first_calls))});
    parts.filters.push_back({"second", adopt_plugin_object<sdk::CommandFilter>(
                                           std::make_unique<FakeFilter>("rm", second_calls))});
    parts.timeout = std::chrono::seconds(5);
    parts.max_timeout = std::chrono::seconds(20);
    parts.output_cap = 1234;
    parts.audit = std::make_shared<AuditLog>(audit_path);
    return std::make_unique<ConfiguredAgent>(std::move(parts));
  }

  std::vector<nlohmann::json> audit_lines() const {
    std::vector<nlohmann::json> lines;
    std::istringstream in(tests::read_text(audit_path));
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    return lines;
  }
};

TEST(ConfiguredAgent, AllowedCommandRunsWithAgentLimitsAndIsAudited) {
  Harness h;
  auto agent = h.make();
  agent->start();
  sdk::CancelToken cancel;
  const auto outcome = agent->execute({"echo hi", std::nullopt, "sub", "ci-bot"}, nullptr, &cancel);
  EXPECT_FALSE(outcome.blocked);
  EXPECT_EQ(outcome.result.exit_code, 7);
  EXPECT_EQ(outcome.result.stdout_data, "ran:echo hi");
  // The fake backend does not say where it ran: the host joins the agent's cwd and work_dir.
  EXPECT_EQ(outcome.result.work_dir, "/ws/sub");
  EXPECT_EQ(
      agent->execute({"x", std::nullopt, "resolved", "ci-bot"}, nullptr, &cancel).result.work_dir,
      "/real/resolved");
  ASSERT_EQ(h.backend_log.requests.size(), 2u);
  const auto& request = h.backend_log.requests[0];
  EXPECT_EQ(request.timeout, std::chrono::seconds(5));
  EXPECT_EQ(request.output_cap, 1234u);
  EXPECT_EQ(request.work_dir, "sub");
  EXPECT_EQ(request.cancel, &cancel);
  EXPECT_EQ(h.first_calls, 2);
  EXPECT_EQ(h.second_calls, 2);

  const auto lines = h.audit_lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["agent"], "alpha");
  EXPECT_EQ(lines[0]["instance"], "123-abc");
  EXPECT_EQ(lines[0]["verdict"], "allowed");
  EXPECT_EQ(lines[0]["tool"], "execute_command");
  EXPECT_EQ(lines[0]["principal"], "ci-bot");
  EXPECT_EQ(lines[0]["command"], "echo hi");
  EXPECT_EQ(lines[0]["work_dir"], "sub");
  EXPECT_EQ(lines[0]["exit_code"], 7);
  EXPECT_DOUBLE_EQ(lines[0]["duration_seconds"].get<double>(), 0.25);
}

TEST(ConfiguredAgent, FirstDenyStopsTheChainAndNothingRuns) {
  Harness h;
  auto agent = h.make();
  agent->start();
  const auto outcome =
      agent->execute({"sudo rm -rf /tmp/x", std::nullopt, "", "test"}, nullptr, nullptr);
  EXPECT_TRUE(outcome.blocked);
  EXPECT_EQ(outcome.blocked_by, "first");
  EXPECT_EQ(outcome.rule, "has-sudo");
  EXPECT_EQ(outcome.reason, "contains sudo");
  EXPECT_THAT(outcome.result.error, HasSubstr("blocked by the 'first' filter"));
  EXPECT_EQ(outcome.result.work_dir, "/ws");  // not run: where it would have run
  EXPECT_EQ(h.first_calls, 1);
  EXPECT_EQ(h.second_calls, 0);  // the chain stopped at the first deny
  EXPECT_TRUE(h.backend_log.requests.empty());

  const auto second = agent->execute({"rm x", std::nullopt, "", "test"}, nullptr, nullptr);
  EXPECT_EQ(second.blocked_by, "second");
  EXPECT_TRUE(h.backend_log.requests.empty());

  const auto lines = h.audit_lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["verdict"], "blocked:first/has-sudo");
  EXPECT_EQ(lines[0]["reason"], "contains sudo");
  EXPECT_EQ(lines[1]["verdict"], "blocked:second/has-rm");
}

TEST(ConfiguredAgent, TimeoutIsClampedToMaxWithANotice) {
  Harness h;
  auto agent = h.make();
  agent->start();
  auto outcome = agent->execute({"a", std::chrono::seconds(3), "", "test"}, nullptr, nullptr);
  EXPECT_TRUE(outcome.result.notices.empty());
  outcome = agent->execute({"b", std::chrono::seconds(3600), "", "test"}, nullptr, nullptr);
  ASSERT_EQ(h.backend_log.requests.size(), 2u);
  EXPECT_EQ(h.backend_log.requests[0].timeout, std::chrono::seconds(3));
  EXPECT_EQ(h.backend_log.requests[1].timeout, std::chrono::seconds(20));
  ASSERT_EQ(outcome.result.notices.size(), 1u);
  EXPECT_THAT(outcome.result.notices[0], HasSubstr("max_timeout"));
}

TEST(ConfiguredAgent, EmptyCommandIsRefusedWithoutRunning) {
  Harness h;
  auto agent = h.make();
  const auto outcome = agent->execute({"  \n", std::nullopt, "", "test"}, nullptr, nullptr);
  EXPECT_EQ(outcome.result.error, "empty command");
  EXPECT_TRUE(h.backend_log.requests.empty());
  EXPECT_EQ(h.first_calls, 0);
}

TEST(ConfiguredAgent, ThrowingBackendBecomesAnErrorResult) {
  Harness h;
  auto agent = h.make({}, true);
  const auto outcome = agent->execute({"ls", std::nullopt, "", "test"}, nullptr, nullptr);
  EXPECT_FALSE(outcome.blocked);
  EXPECT_EQ(outcome.result.exit_code, -1);
  EXPECT_THAT(outcome.result.error, HasSubstr("backend 'fake' failed: engine on fire"));
  const auto read = agent->read_file({"x", 10}, "test");
  EXPECT_THAT(read.error, HasSubstr("disk gone"));
  EXPECT_EQ(h.audit_lines().at(0)["error"], outcome.result.error);
}

TEST(ConfiguredAgent, RunInternalSkipsFiltersAndIsAuditedAsInternal) {
  Harness h;
  auto agent = h.make();
  const auto result = agent->run_internal("sudo python3 -c 'print(1)'", nullptr, "test");
  EXPECT_EQ(result.stdout_data, "ran:sudo python3 -c 'print(1)'");
  EXPECT_EQ(h.first_calls, 0);
  EXPECT_EQ(h.audit_lines().at(0)["verdict"], "internal");
}

TEST(ConfiguredAgent, StartFailureIsAClearError) {
  Harness h;
  auto agent = h.make("no engine");
  try {
    agent->start();
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "agent 'alpha': backend 'fake' failed to start: no engine");
  }
}

TEST(ConfiguredAgent, ShutdownRunsStopAndCleanupExactlyOnce) {
  Harness h;
  {
    auto agent = h.make();
    agent->start();
    agent->shutdown();
    agent->shutdown();
    EXPECT_EQ(h.backend_log.stops, 1);
    EXPECT_EQ(h.backend_log.cleanups, 1);
    const auto outcome = agent->execute({"ls", std::nullopt, "", "test"}, nullptr, nullptr);
    EXPECT_THAT(outcome.result.error, HasSubstr("shutting down"));
  }  // the destructor must not clean up again
  EXPECT_EQ(h.backend_log.cleanups, 1);

  Harness never_started;
  { auto agent = never_started.make(); }
  EXPECT_EQ(never_started.backend_log.cleanups, 0);

  Harness destructor_only;
  {
    auto agent = destructor_only.make();
    agent->start();
  }
  EXPECT_EQ(destructor_only.backend_log.stops, 1);
  EXPECT_EQ(destructor_only.backend_log.cleanups, 1);
}

// Review finding: read_file was only logged at debug level and write_file never reached the JSON
// audit file, and two agents naming one audit file each opened their own writer.
TEST(ConfiguredAgent, FileToolsAreAuditedWithWhoAskedInTheOneSharedWriter) {
  Harness h;
  auto agent = h.make();
  (void)agent->write_file({"f", "abc"}, "ci-bot");
  (void)agent->read_file({"missing", 10}, "jwt:alice");
  const auto lines = h.audit_lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["tool"], "write_file");
  EXPECT_EQ(lines[0]["principal"], "ci-bot");
  EXPECT_EQ(lines[0]["path"], "f");
  EXPECT_EQ(lines[0]["bytes"], 3);
  EXPECT_EQ(lines[1]["tool"], "read_file");
  EXPECT_EQ(lines[1]["principal"], "jwt:alice");
  EXPECT_EQ(lines[1]["path"], "missing");

  const auto first = AuditLog::shared(h.audit_path);
  const auto second = AuditLog::shared(h.audit_path);
  EXPECT_EQ(first.get(), second.get()) << "one writer per audit file";
  EXPECT_NE(AuditLog::shared("").get(), AuditLog::shared("").get());
}

TEST(ConfiguredAgent, ATasksEventsAndItsCommandNameItByItsReferenceNeverItsId) {
  Harness h;
  auto agent = h.make();
  agent->start();
  const std::string id = "0123456789abcdef0123456789abcdef";
  agent->audit_task({"task:created", id, "ci-bot", "echo hi"});
  ExecuteArgs args{"echo hi", std::nullopt, "", "ci-bot"};
  args.task = id;
  (void)agent->execute(args, nullptr, nullptr);
  agent->audit_task({"task:cancelled", id, "jwt:alice", ""});
  (void)agent->execute({"echo plain", std::nullopt, "", "ci-bot"}, nullptr, nullptr);

  const std::string reference = task_audit_reference(id);
  EXPECT_THAT(reference, ::testing::MatchesRegex("t-[0-9a-f]{16}"));
  EXPECT_EQ(reference, "t-" + digest_hex(sha256_digest(id)).substr(0, 16));
  EXPECT_THAT(tests::read_text(h.audit_path), ::testing::Not(::testing::HasSubstr(id)));
  const auto lines = h.audit_lines();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0]["verdict"], "task:created");
  EXPECT_EQ(lines[0]["principal"], "ci-bot");
  EXPECT_EQ(lines[0]["command"], "echo hi");
  EXPECT_EQ(lines[1]["verdict"], "allowed");
  EXPECT_EQ(lines[1]["principal"], "ci-bot");
  EXPECT_EQ(lines[2]["verdict"], "task:cancelled");
  EXPECT_EQ(lines[2]["principal"], "jwt:alice");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(lines[static_cast<std::size_t>(i)]["task"], reference) << i;
    EXPECT_EQ(lines[static_cast<std::size_t>(i)]["agent"], "alpha") << i;
    EXPECT_EQ(lines[static_cast<std::size_t>(i)]["tool"], "execute_command") << i;
  }
  EXPECT_FALSE(lines[3].contains("task")) << "a plain call names no task";
}

TEST(ConfiguredAgent, ForwardsTraitsAndFileWrites) {
  Harness h;
  auto agent = h.make();
  EXPECT_EQ(agent->traits().python, "python3.11");
  EXPECT_EQ(agent->write_file({"f", "abc"}, "test").bytes_written, 3u);
  EXPECT_EQ(agent->id(), "alpha");
  EXPECT_EQ(agent->cwd(), "/ws");
  EXPECT_EQ(agent->filter_names(), (std::vector<std::string>{"first", "second"}));
}

TEST(ConfiguredAgent, ConcurrentCallsAreAllAuditedAsWholeLines) {
  Harness h;
  auto agent = h.make();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&agent, t] {
      for (int i = 0; i < 25; ++i)
        agent->execute(
            {"cmd " + std::to_string(t) + " " + std::to_string(i), std::nullopt, "", "test"},
            nullptr, nullptr);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(h.audit_lines().size(), 100u);  // each line parses as JSON
  EXPECT_EQ(h.backend_log.requests.size(), 100u);
}

// build_agent: config entry -> real plugins from the registry, with settings errors on their line.
// A backend whose network policy refuses requests: it hands events to whoever subscribed.
class NetworkBackend final : public sdk::ExecutorBackend, public sdk::NetworkEvents {
 public:
  std::string start() override {
    emit("during.start", 80, 0);  // a request refused while the sandbox comes up
    return {};
  }
  void stop() noexcept override {}
  void cleanup() noexcept override {}
  sdk::ExecResult execute(const sdk::ExecRequest&) override { return {}; }
  sdk::FileReadResult read_file(const sdk::FileReadRequest&) override { return {}; }
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest&) override { return {}; }
  [[nodiscard]] sdk::BackendTraits traits() const override { return {}; }
  void* query_interface(std::string_view id) noexcept override {
    return id == sdk::kNetworkEventsId ? static_cast<sdk::NetworkEvents*>(this) : nullptr;
  }
  void subscribe(sdk::NetworkEventSink* sink) noexcept override {
    std::lock_guard lock(mutex_);
    sink_ = sink;
    ++subscriptions;
  }
  // What the backend's thread does for each refusal it reads.
  void emit(const std::string& host, std::uint16_t port, std::uint64_t dropped) {
    sdk::NetworkEvent event;
    event.host = host;
    event.port = port;
    event.method = "GET";
    event.refused = true;
    event.reason = "not in this agent's egress allow list";
    event.dropped_before = dropped;
    std::lock_guard lock(mutex_);
    if (sink_ != nullptr) sink_->on_network_event(event);
  }
  [[nodiscard]] bool subscribed() {
    std::lock_guard lock(mutex_);
    return sink_ != nullptr;
  }
  int subscriptions = 0;

 private:
  std::mutex mutex_;
  sdk::NetworkEventSink* sink_ = nullptr;
};

TEST(ConfiguredAgent, EachRefusedRequestOfTheSandboxIsOneAuditRecord) {
  Harness h;
  auto owned = std::make_unique<NetworkBackend>();
  auto* backend = owned.get();
  ConfiguredAgent::Parts parts;
  parts.id = "alpha";
  parts.instance_id = "123-abc";
  parts.cwd = "/ws";
  parts.backend_name = "fake";
  parts.backend = adopt_plugin_object<sdk::ExecutorBackend>(std::move(owned));
  parts.audit = std::make_shared<AuditLog>(h.audit_path);
  auto agent = std::make_unique<ConfiguredAgent>(std::move(parts));
  EXPECT_FALSE(backend->subscribed());  // not before the start
  agent->set_user("alice");
  agent->start();
  EXPECT_TRUE(backend->subscribed());
  backend->emit("denied.test", 443, 0);
  // The host is the sandbox's to name: whatever bytes it sent stay on one escaped line.
  backend->emit("evil\n\x1b[2J.test", 80, 7);
  agent->shutdown();
  EXPECT_FALSE(backend->subscribed());  // the sink goes with the agent
  backend->emit("after.test", 80, 0);

  const auto lines = h.audit_lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["host"], "during.start");
  const auto& record = lines[1];
  EXPECT_EQ(record["tool"], "egress");
  EXPECT_EQ(record["agent"], "alpha");
  EXPECT_EQ(record["instance"], "123-abc");
  EXPECT_EQ(record["user"], "alice");
  EXPECT_EQ(record["principal"], "sandbox");
  EXPECT_EQ(record["verdict"], "refused");
  EXPECT_EQ(record["host"], "denied.test");
  EXPECT_EQ(record["port"], 443);
  EXPECT_EQ(record["method"], "GET");
  EXPECT_EQ(record["reason"], "not in this agent's egress allow list");
  const auto hostile = lines[2]["host"].get<std::string>();
  EXPECT_EQ(hostile.find('\n'), std::string::npos);
  EXPECT_EQ(hostile.find('\x1b'), std::string::npos);
  EXPECT_THAT(hostile, HasSubstr("\\x0a\\x1b[2J"));
  EXPECT_THAT(lines[2]["reason"].get<std::string>(),
              HasSubstr("7 earlier requests were refused but not reported"));
  EXPECT_EQ(backend->subscriptions, 2);  // the agent's sink, then none
}

// A backend whose proxy holds secrets: it reports what it did with each placeholder.
class SecretBackend final : public sdk::ExecutorBackend, public sdk::SecretEvents {
 public:
  std::string start() override { return {}; }
  void stop() noexcept override {}
  void cleanup() noexcept override {}
  sdk::ExecResult execute(const sdk::ExecRequest&) override { return {}; }
  sdk::FileReadResult read_file(const sdk::FileReadRequest&) override { return {}; }
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest&) override { return {}; }
  [[nodiscard]] sdk::BackendTraits traits() const override { return {}; }
  void* query_interface(std::string_view id) noexcept override {
    return id == sdk::kSecretEventsId ? static_cast<sdk::SecretEvents*>(this) : nullptr;
  }
  void subscribe(sdk::SecretEventSink* sink) noexcept override {
    std::lock_guard lock(mutex_);
    sink_ = sink;
  }
  void emit(sdk::SecretEvent::Kind kind, const std::string& path, std::uint64_t dropped) {
    sdk::SecretEvent event;
    event.kind = kind;
    event.secret = "GITHUB_TOKEN";
    event.host = "api.github.com";
    event.method = "POST";
    event.path = path;
    event.detail = kind == sdk::SecretEvent::Kind::kWithheld ? "path" : "";
    event.dropped_before = dropped;
    std::lock_guard lock(mutex_);
    if (sink_ != nullptr) sink_->on_secret_event(event);
  }

 private:
  std::mutex mutex_;
  sdk::SecretEventSink* sink_ = nullptr;
};

TEST(ConfiguredAgent, EachSecretDecisionOfTheProxyIsOneAuditRecordNamingTheSecret) {
  Harness h;
  auto owned = std::make_unique<SecretBackend>();
  auto* backend = owned.get();
  ConfiguredAgent::Parts parts;
  parts.id = "alpha";
  parts.backend_name = "fake";
  parts.backend = adopt_plugin_object<sdk::ExecutorBackend>(std::move(owned));
  parts.audit = std::make_shared<AuditLog>(h.audit_path);
  auto agent = std::make_unique<ConfiguredAgent>(std::move(parts));
  agent->set_user("alice");
  agent->start();
  backend->emit(sdk::SecretEvent::Kind::kWithheld, "/gists", 0);
  backend->emit(sdk::SecretEvent::Kind::kInjected, "/repos/\n\x1b", 3);
  agent->shutdown();
  backend->emit(sdk::SecretEvent::Kind::kInjected, "/after", 0);

  const auto lines = h.audit_lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["tool"], "egress");
  EXPECT_EQ(lines[0]["principal"], "sandbox");
  EXPECT_EQ(lines[0]["user"], "alice");
  EXPECT_EQ(lines[0]["verdict"], "secret withheld");
  EXPECT_EQ(lines[0]["secret"], "GITHUB_TOKEN");
  EXPECT_EQ(lines[0]["host"], "api.github.com");
  EXPECT_EQ(lines[0]["method"], "POST");
  EXPECT_EQ(lines[0]["path"], "/gists");
  EXPECT_EQ(lines[0]["reason"], "path");
  EXPECT_EQ(lines[1]["verdict"], "secret injected");
  EXPECT_THAT(lines[1]["reason"].get<std::string>(),
              HasSubstr("3 earlier secret events were not reported"));
}

TEST(BuildAgent, CreatesFiltersAndBackendFromConfigThroughPlugins) {
  tests::TempDir dir;
  const std::string config_path = (dir.path() / "agents.yaml").string();
  const auto config = load_config_text(R"(execmcp: 1
agents:
  - id: alpha
    cwd: ws
    backend:
      plugin: fixture-echo
      settings: {exit_code: 3}
    filters:
      - plugin: fixture-word
        settings: {word: forbidden}
    context_paths:
      - path: /data
)",
                                       config_path);
  PluginRegistry registry;
  registry.scan({EXECMCP_FIXTURE_PLUGIN_DIR});
  AgentBuildOptions options;
  options.audit_file = (dir.path() / "audit.jsonl").string();
  auto agent = build_agent(*config, config->agents[0], registry, options);
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "ws"));  // workspace created
  agent->start();
  EXPECT_EQ(agent->instance_id().rfind(std::to_string(::getpid()) + "-", 0), 0u);

  const auto ok = agent->execute({"echo fine", std::nullopt, "", "test"}, nullptr, nullptr);
  EXPECT_EQ(ok.result.exit_code, 3);
  EXPECT_EQ(ok.result.stdout_data, "echo:echo fine\n");
  EXPECT_EQ(ok.result.stderr_data, "cwd:" + dir.str() + "/ws\n");

  const auto blocked =
      agent->execute({"say forbidden things", std::nullopt, "", "test"}, nullptr, nullptr);
  EXPECT_TRUE(blocked.blocked);
  EXPECT_EQ(blocked.blocked_by, "fixture-word");
  EXPECT_EQ(blocked.rule, "word-forbidden");
  EXPECT_THAT(tests::read_text(dir.path() / "audit.jsonl"),
              HasSubstr("\"verdict\":\"blocked:fixture-word/word-forbidden\""));
}

TEST(BuildAgent, PluginSettingsErrorsNameTheConfigLine) {
  const auto config = load_config_text(R"(execmcp: 1
agents:
  - id: alpha
    cwd: /tmp/execmcp-never-created
    backend:
      plugin: fixture-echo
      settings:
        colour: red
    filters:
      - plugin: fixture-word
        settings: {words: [a]}
      - plugin: no-such-filter
)",
                                       "cfg/agents.yaml");
  PluginRegistry registry;
  registry.scan({EXECMCP_FIXTURE_PLUGIN_DIR});
  AgentBuildOptions options;
  options.touch_filesystem = false;
  try {
    build_agent(*config, config->agents[0], registry, options);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.problems().size(), 3u);
    EXPECT_THAT(e.problems()[0], HasSubstr("agents.yaml:11: agents[0].filters[0].settings: plugin "
                                           "'fixture-word'"));
    EXPECT_THAT(e.problems()[0], HasSubstr("unknown setting 'words'"));
    EXPECT_THAT(e.problems()[1], HasSubstr("agents.yaml:12: agents[0].filters[1].plugin: no "
                                           "filter plugin named 'no-such-filter'"));
    EXPECT_THAT(e.problems()[2], HasSubstr("agents.yaml:8: agents[0].backend.settings: plugin "
                                           "'fixture-echo'"));
    EXPECT_THAT(e.problems()[2], HasSubstr("unknown setting 'colour'"));
  }
  EXPECT_FALSE(std::filesystem::exists("/tmp/execmcp-never-created"));
}

TEST(BuildAgent, RefusesAMassGenAgentWithoutMcpCommandLine) {
  const auto config =
      load_config_text("agent:\n  id: a\n  backend:\n    type: openai\n", "/c/mg.yaml");
  PluginRegistry registry;
  try {
    build_agent(*config, config->agents[0], registry);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("enable_mcp_command_line: true"));
  }
}

}  // namespace
}  // namespace execmcp::host

namespace execmcp::host {
namespace {

// The shared server starts each agent on first use: one agent that cannot start fails only its
// own calls, says why, and is tried again after a pause rather than on every call.
TEST(LazyAgent, StartsOnFirstUseAndAFailedStartFailsOnlyItsCallsUntilRetried) {
  Harness good_harness;
  Harness bad_harness;
  auto good = good_harness.make();
  auto bad = bad_harness.make("engine unreachable at unix:///nowhere");
  LazyAgent lazy_good(*good);
  LazyAgent lazy_bad(*bad, std::chrono::milliseconds(1000));
  EXPECT_EQ(good_harness.backend_log.starts, 0) << "nothing starts before a call";

  const auto ok = lazy_good.execute({"echo hi", std::nullopt, "", "t"}, nullptr, nullptr);
  EXPECT_EQ(ok.result.exit_code, 7);
  EXPECT_TRUE(lazy_good.started());
  (void)lazy_good.execute({"echo again", std::nullopt, "", "t"}, nullptr, nullptr);
  EXPECT_EQ(good_harness.backend_log.starts, 1) << "started once";

  const auto failed = lazy_bad.execute({"echo hi", std::nullopt, "", "t"}, nullptr, nullptr);
  EXPECT_THAT(failed.result.error, HasSubstr("engine unreachable at unix:///nowhere"));
  EXPECT_FALSE(lazy_bad.started());
  const auto read = lazy_bad.read_file({"f", 10}, "t");
  EXPECT_THAT(read.error, HasSubstr("failed to start"));
  EXPECT_EQ(bad_harness.backend_log.starts, 1) << "not retried within the pause";
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_FALSE(lazy_bad.ensure_started().empty());
  EXPECT_EQ(bad_harness.backend_log.starts, 2) << "retried after the pause";
}

// Found by the load test: with serve --start-all the agent was started before LazyAgent wrapped
// it, and its first call started it again (the Docker backend then replaced its new container).
TEST(LazyAgent, AnAgentStartedBeforehandIsNotStartedAgain) {
  Harness harness;
  auto agent = harness.make();
  agent->start();
  LazyAgent lazy(*agent);
  EXPECT_TRUE(lazy.started());
  EXPECT_EQ(lazy.ensure_started(), "");
  (void)lazy.execute({"echo hi", std::nullopt, "", "t"}, nullptr, nullptr);
  EXPECT_EQ(harness.backend_log.starts, 1);
}

}  // namespace
}  // namespace execmcp::host
