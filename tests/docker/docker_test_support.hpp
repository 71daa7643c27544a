// Shared plumbing of the Docker integration tests: the host-side shell, temp dirs, the engine gate
// and loading the Docker backend plugin the way the host does (Boost.DLL): the backend, exec_mode
// and extra settings that test_backend.hpp's variables name.
#pragma once

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <boost/dll/shared_library.hpp>

#include "execmcp/sdk/plugin.hpp"

#include "test_backend.hpp"

namespace execmcp::docker_test {

namespace fs = std::filesystem;
using execmcp::sdk::BackendInit;
using execmcp::sdk::ExecRequest;
using execmcp::sdk::ExecResult;
using execmcp::sdk::ExecutorBackend;

inline constexpr const char* kImage = "execmcp/runtime:latest";

// Runs a shell command on the host (the docker CLI, for "outside" actions); returns stdout.
inline std::string sh(const std::string& command, int* status = nullptr) {
  std::string out;
  FILE* p = ::popen((command + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return out;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int st = ::pclose(p);
  if (status != nullptr) *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

inline std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

inline std::string read_host_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline bool container_exists(const std::string& name) {
  int status = 0;
  sh(outside_cli() + " inspect --type container " + name, &status);
  return status == 0;
}

// Keeps the plugin library loaded for the whole run; backends are destroyed before it unloads.
inline boost::dll::shared_library& plugin() {
  static boost::dll::shared_library lib(test_plugin_path(), boost::dll::load_mode::rtld_now);
  return lib;
}

struct Collector : execmcp::sdk::LogSink {
  void log(execmcp::sdk::LogLevel, std::string_view message) noexcept override {
    std::fprintf(stderr, "  [plugin] %.*s\n", static_cast<int>(message.size()), message.data());
  }
};
inline Collector g_log;

class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    std::string tmpl = "/tmp/execmcp-dockertest-" + tag + "-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
    ::chmod(path_.c_str(), 0755);
    // gVisor does not honour the ACL a root-owned workspace gets for the container user (the
    // backend refuses it): under EXECMCP_TEST_RUNTIME the image user owns the test's dirs.
    if (!test_runtime().empty() && ::geteuid() == 0) {
      if (::chown(path_.c_str(), 1000, 1000) != 0) std::perror("chown");
    }
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] const std::string& path() const { return path_; }
  // Under EXECMCP_TEST_RUNTIME (see above), what the test made in here becomes the image user's
  // too, as the ACL would have let that user write it under runc.
  void give_contents_to_image_user() const {
    if (test_runtime().empty() || ::geteuid() != 0) return;
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(path_, ec))
      if (::lchown(entry.path().c_str(), 1000, 1000) != 0) std::perror("lchown");
  }

 private:
  std::string path_;
};

inline std::string instance_tag() {
  return "t" + std::to_string(::getpid());
}

inline std::unique_ptr<ExecutorBackend> make_backend(BackendInit init,
                                                     std::string* error = nullptr) {
  auto& factory = plugin().get_alias<execmcp::sdk::BackendFactory>("execmcp_create_backend");
  if (init.instance_id.empty()) init.instance_id = instance_tag();
  init.log = &g_log;
  init.settings_json = with_test_settings(init.settings_json);
  std::string err;
  std::unique_ptr<ExecutorBackend> backend(factory(init, err));
  if (error != nullptr) *error = err;
  return backend;
}

inline ExecResult run(ExecutorBackend& b, const std::string& command,
                      std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  ExecRequest req;
  req.command = command;
  req.timeout = timeout;
  return b.execute(req);
}

inline bool docker_tests_disabled() {
  const char* flag = std::getenv("EXECMCP_DOCKER_TESTS");
  return flag != nullptr && std::string(flag) == "0";
}

// The engine gate: skip only when asked to, fail loudly when the engine is not there.
inline void require_engine() {
  if (docker_tests_disabled())
    GTEST_SKIP() << "EXECMCP_DOCKER_TESTS=0: SKIPPING the Docker integration tests";
  int status = 0;
  sh(outside_cli() + " version", &status);
  ASSERT_EQ(status, 0) << "the Docker engine is not reachable; start it with "
                          "scripts/docker-engine.sh start (or set EXECMCP_DOCKER_TESTS=0 to skip)";
  sh(outside_cli() + " image inspect " + std::string(kImage), &status);
  ASSERT_EQ(status, 0) << "image " << kImage << " is missing; build it with docker/build.sh";
  if (const auto runtime = test_runtime(); !runtime.empty()) {
    const auto runtimes = sh(outside_cli() + " info --format '{{json .Runtimes}}'");
    if (runtimes.find("\"" + runtime + "\"") == std::string::npos)
      GTEST_SKIP() << "EXECMCP_TEST_RUNTIME=" << runtime << ": the engine has no runtime '"
                   << runtime << "' (its runtimes: " << trim(runtimes)
                   << "); scripts/docker-engine.sh reload registers runsc";
    // Registered is not enough: where the runtime cannot run a container (runsc without ptrace,
    // in a nested sandbox) the run skips too, saying why. Asked once per test program.
    static const std::string cannot_run = [&runtime] {
      int run_status = 0;
      const std::string out = sh(outside_cli() + " run --rm --network none --runtime " + runtime +
                                     " " + std::string(kImage) + " true 2>&1",
                                 &run_status);
      return run_status == 0 ? std::string() : trim(out).substr(0, 500);
    }();
    if (!cannot_run.empty())
      GTEST_SKIP() << "EXECMCP_TEST_RUNTIME=" << runtime << ": the engine has runtime '" << runtime
                   << "' but cannot run a container with it: " << cannot_run;
  }
}

#ifdef EXECMCP_BUSYBOX_IMAGE_SCRIPT
// An image with a static busybox and nothing else (no Python, no C library), for backends that
// must work in any image with /bin/sh.
inline constexpr const char* kBusyboxImage = "execmcp/test-busybox:latest";

// Builds kBusyboxImage when it is missing or stale (tests/docker/fixtures/build-busybox-image.sh,
// offline, cheap when up to date); returns "" or the script's output.
inline std::string build_busybox_image() {
  int status = 0;
  const std::string out =
      sh("{ " + std::string(EXECMCP_BUSYBOX_IMAGE_SCRIPT) + " 2>&1; }", &status);
  return status == 0 ? "" : "building " + std::string(kBusyboxImage) + " failed:\n" + out;
}
#endif

#define REQUIRE_ENGINE()                          \
  do {                                            \
    require_engine();                             \
    if (IsSkipped() || HasFatalFailure()) return; \
  } while (0)

// How many of the result's notices contain `text`; whether one does; all of them, for a
// failure message.
inline std::size_t count_notices(const ExecResult& r, const std::string& text) {
  std::size_t n = 0;
  for (const auto& notice : r.notices) n += notice.find(text) != std::string::npos ? 1 : 0;
  return n;
}
inline bool has_notice(const ExecResult& r, const std::string& text) {
  return count_notices(r, text) > 0;
}

// The first 300 bytes, enough to say what went wrong without flooding the log.
inline std::string head_of(const std::string& s) {
  return s.size() <= 300 ? s : s.substr(0, 300) + "... (" + std::to_string(s.size()) + " bytes)";
}

// A container's id and start time, from the engine: a restart changes them.
inline std::string container_identity(const std::string& name) {
  return trim(sh(outside_cli() + " inspect -f '{{.Id}} {{.State.StartedAt}}' " + name));
}

inline std::string notices_of(const ExecResult& r) {
  std::string out;
  for (const auto& n : r.notices) out += "[" + n + "] ";
  return out;
}

// Waits (at most 10 s) until the container is no longer running. A command that signals PID 1
// returns before the container is gone; in agent mode the runner answers faster than the engine
// tears the container down, so a call sent in that moment may land in the dying container (and
// report that). Tests of what happens *after* a container died wait for it first.
inline void wait_until_stopped(const std::string& container) {
  for (int i = 0; i < 200; ++i) {
    if (trim(sh(outside_cli() + " inspect -f '{{.State.Running}}' " + container)) != "true") return;
    ::usleep(50 * 1000);
  }
}

// One backend (one container) shared by every test of a suite, started once: agent
// `Suite::kAgent`, workspace its only grant, settings `Suite::kSettings`.
template <class Suite>
class SharedBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (docker_tests_disabled()) return;
    workspace_ = std::make_unique<TempDir>(Suite::kAgent);
    BackendInit init;
    init.agent_id = Suite::kAgent;
    init.cwd = workspace_->path();
    init.paths = {{workspace_->path(), true}};
    init.settings_json = Suite::kSettings;
    backend_ = make_backend(init, &create_error_);
    if (backend_) start_error_ = backend_->start();
  }
  static void TearDownTestSuite() {
    if (backend_) backend_->cleanup();
    backend_.reset();
    workspace_.reset();
  }
  void SetUp() override {
    REQUIRE_ENGINE();
    ASSERT_TRUE(backend_) << create_error_;
    ASSERT_EQ(start_error_, "");
  }
  static inline std::unique_ptr<TempDir> workspace_;
  static inline std::unique_ptr<ExecutorBackend> backend_;
  static inline std::string create_error_, start_error_;
};

}  // namespace execmcp::docker_test
