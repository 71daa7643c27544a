// The docker-swarm backend on a real 3-node swarm (swarm_fixture.hpp: the test process sits in a
// shim container's network namespace on node 1, the backend's server_container): commands, files,
// background processes, suspend and resume through the listening runner only; 20 per-user
// sandboxes spread by Swarm over the two workers; a drained node under a user, whose next call
// makes a new sandbox elsewhere with a notice naming the node where the files stayed; and nothing
// left with the test's owner id once every sandbox is cleaned up (volumes removed by the test:
// the server never removes one).
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "docker_swarm/placement_record.hpp"
#include "docker_swarm/swarm_backend.hpp"
#include "swarm_fixture.hpp"

namespace execmcp::plugins::docker_swarm {
namespace {

using namespace std::chrono_literals;
using tests::swarm::SwarmCluster;
namespace fs = std::filesystem;

class Lines final : public sdk::LogSink {
 public:
  void log(sdk::LogLevel, std::string_view line) noexcept override {
    std::lock_guard lock(mutex_);
    lines_.emplace_back(line);
  }
  std::string all() {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& l : lines_) out += l + "\n";
    return out;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

class Recorder final : public sdk::BackgroundObserver {
 public:
  void on_output(sdk::StreamKind, std::string_view bytes) noexcept override {
    std::lock_guard lock(mutex_);
    out_.append(bytes);
  }
  void on_exit(const sdk::BackgroundExit& exit) noexcept override {
    std::lock_guard lock(mutex_);
    exit_ = exit;
    ++exits_;
  }
  std::string out() {
    std::lock_guard lock(mutex_);
    return out_;
  }
  int exits() {
    std::lock_guard lock(mutex_);
    return exits_;
  }

 private:
  std::mutex mutex_;
  std::string out_;
  sdk::BackgroundExit exit_;
  int exits_ = 0;
};

class SwarmBackendLive : public ::testing::Test {
 protected:
  void SetUp() override {
    EXECMCP_REQUIRE_SWARM();
    ready_ = true;
    owner_ = "execmcp-swarm-test-" + std::to_string(::getpid());
    root_ = fs::temp_directory_path() /
            ("execmcp-swarm-backend-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "users");
  }
  void TearDown() override {
    if (!ready_) return;
    for (const auto& node : drained_)
      cluster().docker(1, {"node", "update", "--availability", "active", node});
    for (auto& b : backends_) b->cleanup();
    backends_.clear();
    // Nothing of this owner left: no service, secret, network or container on any node.
    EXPECT_EQ(cluster().wait_nothing_left(owner_, 30s), "");
    EXPECT_EQ(cluster().remove_volumes(owner_), "");
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  static const SwarmCluster& cluster() { return SwarmCluster::get(); }

  std::string settings() const {
    return std::string(R"({"image":")") + cluster().image() + R"(","docker_host":")" +
           cluster().docker_host() + R"(","server_container":")" + cluster().shim_id() +
           R"(","owner_id":")" + owner_ +
           R"(","memory":"256m","pids_limit":128,"constraints":["node.role==worker"]})";
  }
  fs::path user_dir(const std::string& user) const { return root_ / "users" / user; }
  // A per-user sandbox's backend (not started), kept for TearDown's cleanup.
  SwarmBackend& make(const std::string& user) {
    fs::create_directories(user_dir(user));
    sdk::BackendInit init;
    init.agent_id = "swarm";
    init.instance_id = "u-" + user;
    init.cwd = user_dir(user).string();
    init.paths = {{init.cwd, true}};
    init.sandbox_cwd = "/workspace";
    init.settings_json = settings();
    init.log = &log_;
    std::lock_guard lock(mutex_);
    backends_.push_back(std::make_unique<SwarmBackend>(init));
    return *backends_.back();
  }
  sdk::ExecResult run(SwarmBackend& b, const std::string& command,
                      std::chrono::milliseconds timeout = 60s) {
    sdk::ExecRequest request;
    request.command = command;
    request.timeout = timeout;
    return b.execute(request);
  }
  Placement placement_of(const std::string& user) const {
    std::string error;
    const auto p = read_placement(user_dir(user).string(), error);
    EXPECT_TRUE(p.has_value()) << error;
    return p.value_or(Placement{});
  }

  bool ready_ = false;
  std::string owner_;
  fs::path root_;
  Lines log_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<SwarmBackend>> backends_;
  std::vector<std::string> drained_;  // node ids to make active again
};

TEST_F(SwarmBackendLive, CommandsFilesBackgroundSuspendAndResumeThroughTheRunner) {
  auto& b = make("alice");
  ASSERT_EQ(b.start(), "") << log_.all();
  const auto placed = placement_of("alice");
  bool on_worker = false;
  for (const auto& w : cluster().workers()) on_worker |= w.id == placed.node_id;
  EXPECT_TRUE(on_worker) << "placed on " << placed.hostname;

  auto r = run(b, "echo out; echo err >&2; pwd; id -u; exit 3");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.stdout_data, "out\n/workspace\n1000\n");
  EXPECT_EQ(r.stderr_data, "err\n");

  // A timeout kills the whole tree (a background child included).
  r = run(b, "(sleep 300; echo survived > /workspace/late) & sleep 300", 1s);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(run(b, "sleep 2; cat /workspace/late 2>/dev/null || echo none").stdout_data, "none\n");

  // Files through the runner, seen by commands.
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  ASSERT_EQ(b.write_file({"dir/data.bin", bytes}).error, "");
  EXPECT_EQ(b.read_file({"dir/data.bin"}).data, bytes);
  EXPECT_EQ(b.read_file({"/workspace/dir/data.bin"}).data, bytes);
  EXPECT_EQ(run(b, "wc -c < dir/data.bin | tr -d ' '").stdout_data, "256\n");
  EXPECT_NE(b.read_file({"/etc/../no/such"}).error, "");

  // A background process: output, then terminate.
  Recorder rec;
  sdk::BackgroundRequest bg;
  bg.command = "echo started; sleep 600";
  const auto started = b.start_background(bg, &rec);
  ASSERT_EQ(started.error, "");
  for (int i = 0; i < 100 && rec.out().empty(); ++i) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(rec.out(), "started\n");
  b.terminate_background(started.id, 1s);
  EXPECT_EQ(rec.exits(), 1);

  // Suspend (Replicas 0) and resume on the same node: the files stay.
  ASSERT_EQ(b.suspend(), "");
  ASSERT_EQ(b.resume(), "");
  EXPECT_EQ(placement_of("alice").node_id, placed.node_id);
  r = run(b, "wc -c < dir/data.bin | tr -d ' '");
  EXPECT_EQ(r.stdout_data, "256\n") << r.error;
}

TEST_F(SwarmBackendLive, TwentyUsersSpreadOverTheTwoWorkers) {
  constexpr int kUsers = 20;
  std::vector<SwarmBackend*> users;
  for (int i = 0; i < kUsers; ++i) users.push_back(&make("user" + std::to_string(i)));
  // Five at a time, as users arrive.
  for (int first = 0; first < kUsers; first += 5) {
    std::vector<std::future<std::string>> starts;
    for (int i = first; i < first + 5; ++i)
      starts.push_back(std::async(std::launch::async, [&, i] { return users[i]->start(); }));
    for (auto& s : starts) ASSERT_EQ(s.get(), "");
  }
  std::map<std::string, int> per_node;
  for (int i = 0; i < kUsers; ++i) {
    ++per_node[placement_of("user" + std::to_string(i)).hostname];
    const auto r = run(*users[i], "echo user" + std::to_string(i));
    EXPECT_EQ(r.stdout_data, "user" + std::to_string(i) + "\n") << r.error;
  }
  const auto workers = cluster().workers();
  ASSERT_EQ(workers.size(), 2u);
  std::string spread;
  for (const auto& [node, n] : per_node) spread += node + ": " + std::to_string(n) + "; ";
  for (const auto& w : workers) EXPECT_GE(per_node[w.name], 5) << spread;
  EXPECT_EQ(per_node[cluster().node(1).name], 0) << spread;  // constraints: workers only
}

TEST_F(SwarmBackendLive, DrainedNodeMakesANewSandboxElsewhereAndSaysWhereTheFilesStayed) {
  auto& b = make("bob");
  ASSERT_EQ(b.start(), "") << log_.all();
  ASSERT_EQ(b.write_file({"notes.txt", "kept on the first node\n"}).error, "");
  const auto first = placement_of("bob");
  const auto drained =
      cluster().docker(1, {"node", "update", "--availability", "drain", first.node_id});
  ASSERT_TRUE(drained.ok()) << drained.describe();
  drained_.push_back(first.node_id);

  // Swarm shuts the task down (no new one: restart policy none); the next call, once it is gone,
  // finds its node drained.
  int node_number = 0;
  for (const auto& n : cluster().nodes())
    if (n.id == first.node_id) node_number = n.number;
  ASSERT_NE(node_number, 0);
  bool gone = false;
  for (const auto end = std::chrono::steady_clock::now() + 30s;
       !gone && std::chrono::steady_clock::now() < end;) {
    const auto ps = cluster().docker(
        node_number, {"ps", "-q", "--filter", "label=execmcp.owner.host=" + owner_});
    gone = ps.ok() && ps.out.find_first_not_of(" \n") == std::string::npos;
    if (!gone) std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(gone) << "the drained node's task did not stop within 30 s";
  sdk::ExecResult r;
  for (int attempt = 0; attempt < 3; ++attempt) {
    r = run(b, "cat notes.txt 2>/dev/null || echo absent");
    if (r.error.empty()) break;
    std::this_thread::sleep_for(2s);
  }
  ASSERT_EQ(r.error, "") << log_.all();
  EXPECT_EQ(r.stdout_data, "absent\n");
  std::string notices;
  for (const auto& n : r.notices) notices += n + "\n";
  EXPECT_NE(notices.find("node " + first.hostname + " is drained"), std::string::npos) << notices;
  EXPECT_NE(notices.find("Your files stayed on " + first.hostname + " in volume " + first.volume),
            std::string::npos)
      << notices;
  const auto now = placement_of("bob");
  EXPECT_NE(now.node_id, first.node_id);
  EXPECT_NE(now.volume, first.volume);
}

}  // namespace
}  // namespace execmcp::plugins::docker_swarm
