// A per-user agent's users on the shared server (real UserSandboxes behind the HTTP endpoint and
// the service, with serve --http's options): one user's calls cannot take the workers and the
// queue every user shares, and past their share they are told so (429, naming the limit).
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../transport/http/fake_exchange.hpp"
#include "agent/per_user_target.hpp"
#include "agent/user_sandboxes.hpp"
#include "cli/arguments.hpp"
#include "mcp/protocol.hpp"
#include "plugins/plugin_registry.hpp"
#include "server/probes.hpp"
#include "test_support.hpp"
#include "transport/http/fake_access_check.hpp"
#include "transport/http/http_endpoint.hpp"
#include "transport/stdio/session.hpp"

namespace execmcp::host::mcp {
namespace {

using nlohmann::json;
using testing::FakeExchange;
using testing::kWait;

// Holds every "hold" command until opened (or the call is cancelled); answers anything else at
// once. No sleeps: the test decides when the long calls end.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  int holding = 0;

  void release() {
    std::lock_guard lock(mutex);
    open = true;
    cv.notify_all();
  }
  bool wait_holding(int n) {
    std::unique_lock lock(mutex);
    return cv.wait_for(lock, kWait, [&] { return holding >= n; });
  }
};

class GatedSandbox final : public sdk::ExecutorBackend {
 public:
  explicit GatedSandbox(Gate& gate) : gate_(gate) {}
  std::string start() override { return {}; }
  void stop() noexcept override {}
  void cleanup() noexcept override {}
  sdk::ExecResult execute(const sdk::ExecRequest& request) override {
    sdk::ExecResult result;
    result.exit_code = 0;
    if (request.command != "hold") {
      result.stdout_data = request.command + "\n";
      return result;
    }
    std::unique_lock lock(gate_.mutex);
    ++gate_.holding;
    gate_.cv.notify_all();
    while (!gate_.open && !(request.cancel && request.cancel->cancel_requested()))
      gate_.cv.wait_for(lock, std::chrono::milliseconds(20));
    return result;
  }
  sdk::FileReadResult read_file(const sdk::FileReadRequest&) override { return {}; }
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest&) override { return {}; }
  [[nodiscard]] sdk::BackendTraits traits() const override {
    sdk::BackendTraits traits;
    traits.isolated = true;
    return traits;
  }

 private:
  Gate& gate_;
};

json call(int id, const std::string& command) {
  return json{{"jsonrpc", "2.0"},
              {"id", id},
              {"method", "tools/call"},
              {"params",
               {{"name", "execute_command"},
                {"arguments", {{"command", command}}},
                {"_meta",
                 {{protocol::kMetaProtocolVersion, protocol::kStateless},
                  {protocol::kMetaClientCapabilities, json::object()}}}}}};
}

// serve --http with the per-user agent "py" and each user's token, as http_serve.cpp builds it.
class PerUserCallsTest : public ::testing::Test {
 protected:
  // `arguments`: more of serve's command line; `max_calls_per_user`: per_user's (0: not set).
  void serve(std::vector<std::string> arguments = {}, std::size_t max_calls_per_user = 0) {
    std::vector<std::string> argv{"serve", "--config", "c.yaml", "--http", "127.0.0.1:0"};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    auto parsed = cli::parse_arguments(argv);
    ASSERT_TRUE(parsed.error.empty()) << parsed.error;
    const server::ServeOptions& serve = parsed.arguments.serve;
    // What serve --http hands the service (http_serve.cpp).
    ServiceOptions options = mcp::service_options(serve.session);
    options.max_calls_per_agent = serve.max_calls_per_agent;
    service_ = std::make_unique<McpService>(options);

    PerUserConfig config;
    config.workspace_root = (dir_.path() / "users").string();
    std::filesystem::create_directories(config.workspace_root);
    config.max_users = 10;
    config.max_calls_per_user = max_calls_per_user;
    SandboxBuilder build = [this](const std::string&, const std::string& name) {
      ConfiguredAgent::Parts parts;
      parts.id = "py";
      parts.instance_id = "1-test-" + name;
      parts.cwd = kUserSandboxCwd;
      parts.backend_name = "gated";
      parts.backend =
          adopt_plugin_object<sdk::ExecutorBackend>(std::make_unique<GatedSandbox>(gate_));
      parts.audit = AuditLog::shared((dir_.path() / "audit.jsonl").string());
      return std::make_unique<ConfiguredAgent>(std::move(parts));
    };
    sdk::BackendTraits traits;
    traits.isolated = true;
    // As the registry builds it: a template (never started) and the users' sandboxes.
    auto shape = build("", "template");
    auto sandboxes = std::make_unique<UserSandboxes>("py", config, std::move(build),
                                                     AgentCapabilities{}, traits);
    target_ = std::make_unique<PerUserTarget>(std::move(shape), std::move(sandboxes));
    const AgentTargets agents{{"py", target_.get()}};
    access_ = std::make_unique<testing::FakeAccessCheck>(
        [](const http::HttpRequest& request, const std::string&) {
          AccessDecision access;
          const std::string* token = request.header("authorization");
          if (token != nullptr && (*token == "Bearer alice" || *token == "Bearer bob")) {
            access.allowed = true;
            access.principal = token->substr(7);
            access.user_key = access.principal;
            access.agents = {"py"};
          } else {
            access.body = R"({"error":"invalid_token"})";
          }
          return access;
        });
    endpoint_ = std::make_unique<HttpEndpoint>(*service_, agents, access_.get(), metrics_);
    probes_ = std::make_unique<server::Probes>(agents, access_.get(), metrics_);
    routes_ =
        std::make_unique<http::RouteTable>(server::server_routes(*endpoint_, *probes_, metrics_));
  }
  ~PerUserCallsTest() override {
    gate_.release();
    for (auto& exchange : held_) exchange->wait();
    routes_.reset();
    endpoint_.reset();
    if (service_) service_->shutdown();
    if (target_) target_->stop();
  }

  std::shared_ptr<FakeExchange> post(const std::string& user, const json& body) {
    http::HttpRequest request;
    request.method = "POST";
    request.target = "/mcp/py";
    request.headers = {{"authorization", "Bearer " + user},
                       {"mcp-protocol-version", protocol::kStateless},
                       {"mcp-method", "tools/call"},
                       {"mcp-name", "execute_command"},
                       {"accept", "application/json, text/event-stream"},
                       {"content-type", "application/json"}};
    request.body = body.dump();
    auto exchange = std::make_shared<FakeExchange>();
    routes_->handle(std::move(request), exchange);
    return exchange;
  }
  // The user's sandbox made by a first call, so that their long calls all reach its backend.
  void make_sandbox(const std::string& user) {
    auto first = post(user, call(1, "ready"));
    ASSERT_TRUE(first->wait());
    ASSERT_EQ(first->status(), 200) << first->raw_body();
    // A call frees its slot just after its answer went out: seen in CI, the next call of the
    // user came first and counted it. So wait until the service has no call in flight.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (service_->calls_in_flight() != 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(service_->calls_in_flight(), 0u);
  }
  // `count` long calls of `user`; those answered at once (refused) are returned, the others kept
  // until the test ends.
  std::vector<std::shared_ptr<FakeExchange>> hold(const std::string& user, int count) {
    std::vector<std::shared_ptr<FakeExchange>> refused;
    for (int i = 0; i < count; ++i) {
      auto exchange = post(user, call(100 + i, "hold"));
      if (exchange->wait(std::chrono::milliseconds(0)))
        refused.push_back(exchange);
      else
        held_.push_back(exchange);
    }
    return refused;
  }
  std::size_t held() const { return held_.size(); }
  // One call of `user` answers "<word>\n" at once.
  void expect_served(const std::string& user, const std::string& word) {
    auto exchange = post(user, call(2, word));
    ASSERT_TRUE(exchange->wait());
    EXPECT_EQ(exchange->status(), 200) << exchange->raw_body();
    EXPECT_EQ(exchange->body()["result"]["structuredContent"]["stdout"], word + "\n")
        << exchange->raw_body();
  }
  // A 429 naming `setting` and the bound `calls`.
  static void expect_past_share(FakeExchange& refused, const std::string& setting,
                                std::size_t calls) {
    EXPECT_EQ(refused.status(), 429) << refused.raw_body();
    EXPECT_EQ(refused.header("retry-after"), "1");
    const json error = refused.body()["error"];
    EXPECT_EQ(error["code"], kServerBusy);
    EXPECT_EQ(error["data"]["limit"], "user") << error.dump();
    const std::string message = error["message"];
    EXPECT_NE(message.find(setting), std::string::npos) << message;
    EXPECT_NE(message.find(" " + std::to_string(calls) + " calls"), std::string::npos) << message;
  }

  tests::TempDir dir_;
  Gate gate_;
  Metrics metrics_;
  std::unique_ptr<McpService> service_;
  std::unique_ptr<PerUserTarget> target_;
  std::unique_ptr<testing::FakeAccessCheck> access_;
  std::unique_ptr<HttpEndpoint> endpoint_;
  std::unique_ptr<server::Probes> probes_;
  std::unique_ptr<http::RouteTable> routes_;
  std::vector<std::shared_ptr<FakeExchange>> held_;
};

// Issue 28, finding 2: with serve --http's defaults (64 workers, 64 waiting, no
// --max-calls-per-agent) one user's long calls filled the workers and the queue, and every other
// user got 503 for as long as that user liked.
TEST_F(PerUserCallsTest, WithTheDefaultOptionsOneUsersLongCallsLeaveTheServerToOthers) {
  serve();
  make_sandbox("alice");
  const auto& options = service_->options();
  const int flood = static_cast<int>(options.max_concurrent_calls + options.max_queued_calls) + 1;
  const auto refused = hold("alice", flood);
  ASSERT_GT(held(), 0u);
  EXPECT_LT(held(), options.max_concurrent_calls) << "one user took every worker";
  ASSERT_TRUE(gate_.wait_holding(
      static_cast<int>(std::min<std::size_t>(held(), options.max_concurrent_calls))));

  // Another user is served at once, whatever alice holds.
  expect_served("bob", "bob");

  // alice past her share: 429 naming the limit, not the server's 503.
  ASSERT_FALSE(refused.empty());
  expect_past_share(*refused[0], "per_user.max_calls_per_user", held());
  // The default share: a quarter of the workers (64 with serve --http's defaults).
  EXPECT_EQ(held(), options.max_concurrent_calls / kUserShareOfWorkers);
}

TEST_F(PerUserCallsTest, AUsersShareIsPerUserMaxCallsPerUser) {
  serve({}, 3);
  make_sandbox("alice");
  const auto refused = hold("alice", 5);
  EXPECT_EQ(held(), 3u);
  ASSERT_EQ(refused.size(), 2u);
  expect_past_share(*refused[0], "per_user.max_calls_per_user", 3);
  expect_served("bob", "bob");
}

// --max-calls-per-agent still counts each user's calls apart, and replaces the default share.
TEST_F(PerUserCallsTest, MaxCallsPerAgentBoundsEachUser) {
  serve({"--max-calls-per-agent", "2"});
  make_sandbox("alice");
  const auto refused = hold("alice", 4);
  EXPECT_EQ(held(), 2u);
  ASSERT_EQ(refused.size(), 2u);
  expect_past_share(*refused[0], "--max-calls-per-agent", 2);
  expect_served("bob", "bob");
}

// Which bound a key gets: whatever is set applies (the lower of the two); the default share only
// for a per-user agent's user with nothing set; an ordinary agent has none of its own by default.
TEST(McpServiceBounds, AUsersBoundIsTheLowerOfWhatIsSetElseAQuarterOfTheWorkers) {
  auto bound = [](std::size_t per_agent, CallLimit limit) {
    ServiceOptions options;
    options.max_concurrent_calls = 64;
    options.max_calls_per_agent = per_agent;
    return McpService(options).bound_for(limit).calls;
  };
  EXPECT_EQ(bound(0, {"a"}), 0u);
  EXPECT_EQ(bound(5, {"a"}), 5u);
  EXPECT_EQ(bound(0, {"py/alice", true, 0}), 16u);
  EXPECT_EQ(bound(0, {"py/alice", true, 40}), 40u);
  EXPECT_EQ(bound(8, {"py/alice", true, 0}), 8u);
  EXPECT_EQ(bound(8, {"py/alice", true, 3}), 3u);
  EXPECT_EQ(bound(3, {"py/alice", true, 8}), 3u);
  ServiceOptions one_worker;
  one_worker.max_concurrent_calls = 1;
  EXPECT_EQ(McpService(one_worker).bound_for({"py/alice", true, 0}).calls, 1u);
}

}  // namespace
}  // namespace execmcp::host::mcp
