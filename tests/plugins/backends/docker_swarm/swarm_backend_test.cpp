// SwarmBackend over a scripted engine, with no runner listening at the task's address: the start
// fails with the reason (there is no exec to fall back to) and leaves nothing; encrypted overlays
// get their IPsec hint; grants a swarm sandbox cannot serve and an engine that is no manager are
// refused before anything is made.
#include "docker_swarm/swarm_backend.hpp"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "fake_swarm_transport.hpp"

namespace execmcp::plugins::docker_swarm {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Records what the backend logs.
class Lines final : public sdk::LogSink {
 public:
  void log(sdk::LogLevel, std::string_view line) noexcept override { lines.emplace_back(line); }
  std::vector<std::string> lines;
};

class SwarmBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("execmcp-swarm-be-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    init.agent_id = "a";
    init.instance_id = "i";
    init.cwd = dir.string();
    init.paths = {{dir.string(), true}};
    init.log = &log;
  }
  void TearDown() override { fs::remove_all(dir); }

  // An engine whose sandbox task runs at 127.0.0.1 (where no runner listens).
  FakeSwarmTransport* engine(bool manager = true) {
    auto fake = std::make_unique<FakeSwarmTransport>();
    fake->answer(
        "GET", "/v1.41/info", 200,
        json{{"Swarm", {{"LocalNodeState", "active"}, {"ControlAvailable", manager}}}}.dump());
    fake->answer("GET", "/v1.41/services?", 200, "[]");
    fake->answer("GET", "/v1.41/secrets?", 200, "[]");
    fake->answer("GET", "/v1.41/networks?", 200, "[]");
    fake->answer("POST", "/v1.41/secrets/create", 201, R"({"ID":"sec1"})");
    fake->answer("POST", "/v1.41/networks/create", 201, R"({"Id":"net1"})");
    fake->answer("POST", "/v1.41/services/create", 201, R"({"ID":"svc1"})");
    // The task runs for the creation's wait and one look after; then (removed) there is none.
    for (int i = 0; i < 2; ++i) fake->answer_once("GET", "/v1.41/tasks", 200, running_task());
    fake->answer("GET", "/v1.41/tasks", 200, "[]");
    fake_ = fake.get();
    owned_ = std::move(fake);
    script_rest(*fake_);
    return fake_;
  }
  static std::string running_task() {
    return json::array({{{"ID", "t1"},
                         {"NodeID", "n2"},
                         {"DesiredState", "running"},
                         {"Status", {{"State", "running"}}},
                         {"NetworksAttachments",
                          json::array({{{"Network", {{"ID", "net1"}}},
                                        {"Addresses", json::array({"127.0.0.1/8"})}}})}}})
        .dump();
  }
  static void script_rest(FakeSwarmTransport& fake) {
    fake.answer("GET", "/v1.41/services/svc1", 200,
                R"({"ID":"svc1","Version":{"Index":2},"Spec":{"Name":"s","TaskTemplate":{}}})");
    fake.answer("POST", "/v1.41/services/svc1/update", 200, "{}");
    fake.answer("POST", "/v1.41/networks/net1/connect", 200, "");
    fake.answer("GET", "/v1.41/nodes/n2", 200,
                R"({"ID":"n2","Description":{"Hostname":"worker-2"},"Status":{"State":"ready"},
                     "Spec":{"Availability":"active"}})");
    fake.answer("DELETE", "/v1.41/", 200, "");
    fake.answer("POST", "/v1.41/networks/net1/disconnect", 200, "");
  }
  std::unique_ptr<SwarmBackend> backend(const std::string& settings) {
    init.settings_json = settings;
    return std::make_unique<SwarmBackend>(init, std::move(owned_));
  }
  bool requested(const std::string& method, const std::string& prefix) const {
    for (const auto& r : fake_->requests)
      if (r.method == method && r.path.rfind(prefix, 0) == 0) return true;
    return false;
  }

  fs::path dir;
  sdk::BackendInit init;
  Lines log;
  FakeSwarmTransport* fake_ = nullptr;
  std::unique_ptr<FakeSwarmTransport> owned_;
};

TEST_F(SwarmBackendTest, UnreachableRunnerFailsTheStartWithTheReasonAndLeavesNothing) {
  engine();
  auto b = backend(R"({"server_container":"srv","encrypted":true})");
  const auto why = b->start();
  EXPECT_NE(why.find("cannot reach execmcp-runner of sandbox execmcp-a-i at 127.0.0.1:7077"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("IPsec ESP"), std::string::npos) << why;
  EXPECT_EQ(why.find("docker exec"), std::string::npos) << why;
  EXPECT_TRUE(requested("DELETE", "/v1.41/services/svc1"));
  EXPECT_TRUE(requested("DELETE", "/v1.41/secrets/sec1"));
  EXPECT_TRUE(requested("DELETE", "/v1.41/networks/net1"));
  // A call now makes the sandbox again and fails the same way, not with an exec.
  for (int i = 0; i < 2; ++i)
    fake_->answers.insert(fake_->answers.begin(),
                          {"GET", "/v1.41/tasks", {200, running_task(), {}}, true});
  sdk::ExecRequest request;
  request.command = "true";
  const auto r = b->execute(request);
  EXPECT_NE(r.error.find("cannot reach execmcp-runner"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find("docker exec"), std::string::npos) << r.error;
  b->cleanup();
}

TEST_F(SwarmBackendTest, NotAManagerIsRefusedBeforeAnythingIsMade) {
  engine(false);
  auto b = backend(R"({"server_container":"srv","docker_host":"unix:///m.sock"})");
  ASSERT_NE(b, nullptr);
  const auto why = b->start();
  EXPECT_NE(why.find("the engine at unix:///m.sock is not a swarm manager"), std::string::npos)
      << why;
  EXPECT_FALSE(requested("POST", "/v1.41/services/create"));
}

TEST_F(SwarmBackendTest, ContextAndProtectedPathsAreRefusedSayingWhy) {
  engine();
  init.paths.push_back({"/srv/context", false});
  auto first = backend(R"({"server_container":"srv"})");
  auto why = first->start();
  EXPECT_NE(why.find("context paths (/srv/context) are host paths no swarm node has"),
            std::string::npos)
      << why;
  engine();
  init.paths = {{dir.string(), true, {dir.string() + "/.git"}}};
  auto second = backend(R"({"server_container":"srv"})");
  why = second->start();
  EXPECT_NE(why.find("protected paths"), std::string::npos) << why;
  EXPECT_NE(why.find("1.45"), std::string::npos) << why;
  EXPECT_FALSE(requested("POST", "/v1.41/services/create"));
}

TEST_F(SwarmBackendTest, WorkDirOutsideTheWorkspaceIsRefused) {
  engine();
  auto b = backend(R"({"server_container":"srv"})");
  sdk::ExecRequest request;
  request.command = "true";
  request.work_dir = "/etc";
  EXPECT_NE(b->execute(request).error.find("outside the workspace (/workspace)"),
            std::string::npos);
  request.work_dir = "../..";
  EXPECT_NE(b->execute(request).error.find("outside the workspace"), std::string::npos);
}

TEST_F(SwarmBackendTest, BadSettingsThrowNamingTheSetting) {
  engine();
  EXPECT_THROW(backend(R"({"exec_mode":"exec"})"), docker_common::SettingError);
}

}  // namespace
}  // namespace execmcp::plugins::docker_swarm
