// The conformance kit's shared test fixture (private to the kit): a fresh workspace, context and
// outside directory per test, a started backend, and helpers to tell whether a process tree died.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "execmcp/conformance/backend_conformance.hpp"

namespace execmcp::conformance::detail {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Every registered backend, in the order register_backend() saw them.
inline std::vector<BackendUnderTest>& registry() {
  static std::vector<BackendUnderTest> backends;
  return backends;
}

inline std::string read_host_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_host_file(const fs::path& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

inline std::uintmax_t file_size_or_zero(const fs::path& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The cases that look at the workspace from the host (files written or read there, pid files,
// symlinks and FIFOs made there, paths compared with the host's) or need a context path: skipped,
// saying why and before a backend is made, where the workspace is the sandbox's own
// (BackendUnderTest::sandbox_workspace). The kill cases read their heartbeat files through the
// backend instead (workspace_file_size()), so they run everywhere.
inline bool needs_host_workspace(std::string_view test_name) {
  static constexpr std::string_view kCases[] = {
      "WorkDirDefaultsToCwdAndResolvesInside",
      "WorkDirOutsideAllowedPathsIsRefused",
      "FileWriteReadRoundTripKeepsEveryByte",
      "FileToolsRefuseOutsideAndReadOnlyPaths",
      "FileToolsRefuseAFifoWithoutBlocking",
      "FileRequestsHonourTheirCancelToken",
      "StartAgainWhileCallsRunIsSafe",
      "StreamsOutputAndReportsTheExitOnce",
      "WorkDirIsConfinedAndARefusalRunsNothing",
      "TerminateEndsTheWholeTreeAndReportsKilled",
      "CleanupEndsEveryProcessAndReportsEachOnce",
  };
  const std::string_view name = test_name.substr(0, test_name.find('/'));
  return std::find(std::begin(kCases), std::end(kCases), name) != std::end(kCases);
}

// The base of every case: SetUp() makes the directories and starts a backend made for them.
class BackendFixture : public ::testing::TestWithParam<BackendUnderTest> {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    const auto& param = GetParam();
    if (!param.sandbox_workspace.empty() &&
        needs_host_workspace(::testing::UnitTest::GetInstance()->current_test_info()->name()))
      GTEST_SKIP() << "the workspace of '" << param.name << "' is the sandbox's own ("
                   << param.sandbox_workspace
                   << "), which the host cannot see: this case looks at it from the host";
    fs::path base = param.temp_root.empty() ? fs::temp_directory_path() : fs::path(param.temp_root);
    std::string pattern = (base / "execmcp-conformance-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << "cannot create a temp dir under " << base;
    root_ = fs::canonical(pattern);
    workspace_ = root_ / "workspace";
    context_ = root_ / "context";
    outside_ = root_ / "outside";
    for (const auto& dir : {workspace_, context_, outside_, root_ / "logs"})
      fs::create_directories(dir);
    // Sandboxes often run commands as another user: let it reach the directories (mkdtemp made
    // this one 0700) and write the workspace.
    fs::permissions(root_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    fs::permissions(workspace_, fs::perms::all);
    write_host_file(context_ / "readme.txt", "context file\n");
    write_host_file(outside_ / "secret.txt", "secret\n");

    init_.agent_id = "conformance-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
    init_.instance_id = "conformance-" + std::to_string(::getpid());
    init_.cwd = workspace_.string();
    init_.paths = {{workspace_.string(), true}, {context_.string(), false}};
    if (!param.sandbox_workspace.empty()) {  // the sandbox's own workspace: no host path shared
      init_.paths.pop_back();
      init_.sandbox_cwd = param.sandbox_workspace;
    }
    init_.log_dir = (root_ / "logs").string();
    init_.settings_json = param.settings_json;
    init_.log = &log_;
    try {
      backend_ = param.factory(init_);
    } catch (const std::exception& e) {
      FAIL() << "the factory of '" << param.name << "' threw: " << e.what();
    }
    ASSERT_NE(backend_, nullptr) << "the factory of '" << param.name << "' returned null";
    ASSERT_EQ(backend_->start(), "");
  }

  void TearDown() override {
    if (backend_) {
      backend_->cleanup();
      backend_.reset();
    }
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }

  sdk::ExecResult run(const std::string& command, std::chrono::milliseconds timeout = 60s,
                      const std::string& work_dir = "") {
    sdk::ExecRequest request;
    request.command = command;
    request.timeout = timeout;
    request.work_dir = work_dir;
    return backend_->execute(request);
  }

  // Where `name` in the workspace is, as commands see it.
  std::string workspace_path(const std::string& name) const {
    return GetParam().sandbox_workspace.empty() ? (workspace_ / name).string()
                                                : GetParam().sandbox_workspace + "/" + name;
  }
  // The size of `name` in the workspace (0: none yet): from the host, or, where the workspace is
  // the sandbox's own, through the backend's read_file (a file call beside the case's command).
  std::uintmax_t workspace_file_size(const std::string& name) const {
    if (GetParam().sandbox_workspace.empty()) return file_size_or_zero(workspace_ / name);
    const auto read = backend_->read_file({workspace_path(name), std::size_t{1} << 20});
    return read.error.empty() ? read.data.size() : 0;
  }

  // The bytes of `name` in the workspace, seen as workspace_file_size() sees them.
  std::string workspace_file(const std::string& name) const {
    if (GetParam().sandbox_workspace.empty()) return read_host_file(workspace_ / name);
    const auto read = backend_->read_file({workspace_path(name), std::size_t{1} << 20});
    return read.error.empty() ? read.data : std::string();
  }

  // A background loop that appends to `name` in the workspace every 0.1 s.
  std::string heartbeat(const std::string& name) const {
    return "while :; do echo x >> '" + workspace_path(name) + "'; sleep 0.1; done";
  }

  void wait_for_heartbeat(const std::string& name) const {
    auto until = Clock::now() + slack();
    while (workspace_file_size(name) == 0 && Clock::now() < until)
      std::this_thread::sleep_for(20ms);
    ASSERT_GT(workspace_file_size(name), 0u) << "the heartbeat loop never started";
  }

  // The loop is dead when the file stops growing (checked over a second, twelve beats' worth).
  void expect_heartbeat_dead(const std::string& name) const {
    expect_heartbeats_dead({name},
                           "a process of the command's tree is still running after "
                           "execute() returned");
  }
  // The same for several loops at once, over one shared second.
  void expect_heartbeats_dead(const std::vector<std::string>& names, const std::string& why) const {
    for (const auto& name : names)
      ASSERT_GT(workspace_file_size(name), 0u) << "the heartbeat loop never ran: " << name;
    std::this_thread::sleep_for(200ms);
    std::vector<std::uintmax_t> before;
    for (const auto& name : names) before.push_back(workspace_file_size(name));
    std::this_thread::sleep_for(1200ms);
    for (std::size_t i = 0; i < names.size(); ++i)
      EXPECT_EQ(workspace_file_size(names[i]), before[i]) << why << " (" << names[i] << ")";
  }

  std::chrono::seconds slack() const { return GetParam().slack; }

  class NullLog final : public sdk::LogSink {
   public:
    void log(sdk::LogLevel, std::string_view) noexcept override {}
  };

  NullLog log_;
  fs::path root_, workspace_, context_, outside_;
  sdk::BackendInit init_;
  std::unique_ptr<sdk::ExecutorBackend> backend_;
};

// The test-name suffix: the backend's name with anything but letters and digits as '_'.
inline std::string test_name(const ::testing::TestParamInfo<BackendUnderTest>& info) {
  std::string name;
  for (char c : info.param.name)
    name.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  if (name.empty()) name = "backend" + std::to_string(info.index);
  return name;
}

// Defined in background_conformance_tests.cpp; register_backend() calls it so that the linker takes
// that file's cases out of the static library too.
void link_background_cases() noexcept;

}  // namespace execmcp::conformance::detail
