// The conformance cases: each checks one clause of the backend contract on every registered
// backend.
//
// The cases only use POSIX sh and a few coreutils (sleep, head, tr, cat, printf, setsid when
// present), so a sandboxed backend with a small image passes too. Whether a process tree is dead
// is judged by a heartbeat file in the workspace that a background loop appends to: it must stop
// growing once execute() has returned.
//
// register_backend() lives in this file on purpose: calling it pulls this object file (and so
// these tests) out of the static library into the test program; it pulls the background cases'
// file in the same way.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "execmcp/conformance/backend_conformance.hpp"
#include "execmcp/sdk/background_processes.hpp"
#include "execmcp/sdk/network_events.hpp"

#include "conformance_fixture.hpp"

namespace execmcp::conformance {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using detail::file_size_or_zero;
using detail::read_host_file;
using detail::seconds_since;
using detail::write_host_file;

// Collects streamed chunks; the backend calls it from its own thread.
class RecordingSink final : public sdk::OutputSink {
 public:
  void on_output(sdk::StreamKind stream, std::string_view chunk) noexcept override {
    std::lock_guard lock(mutex_);
    if (stream == sdk::StreamKind::Stdout) {
      if (stdout_.empty()) first_stdout_at_ = Clock::now();
      stdout_.append(chunk);
    } else {
      stderr_.append(chunk);
    }
  }
  std::string stdout_data() {
    std::lock_guard lock(mutex_);
    return stdout_;
  }
  std::string stderr_data() {
    std::lock_guard lock(mutex_);
    return stderr_;
  }
  Clock::time_point first_stdout_at() {
    std::lock_guard lock(mutex_);
    return first_stdout_at_;
  }

 private:
  std::mutex mutex_;
  std::string stdout_;
  std::string stderr_;
  Clock::time_point first_stdout_at_{};
};

class BackendConformance : public detail::BackendFixture {};

TEST_P(BackendConformance, ReportsExitCodes) {
  for (int code : {0, 1, 3, 42, 255}) {
    auto result = run("exit " + std::to_string(code));
    EXPECT_EQ(result.error, "");
    EXPECT_EQ(result.exit_code, code) << "exit " << code;
    EXPECT_FALSE(result.timed_out);
    EXPECT_FALSE(result.cancelled);
  }
  EXPECT_EQ(run("true").exit_code, 0);
  EXPECT_EQ(run("false").exit_code, 1);
  EXPECT_EQ(run("this-command-does-not-exist-xyz").exit_code, 127);
}

TEST_P(BackendConformance, ReportsDeathBySignalAs128PlusSignal) {
  EXPECT_EQ(run("kill -9 $$").exit_code, 128 + 9);
  EXPECT_EQ(run("kill -15 $$").exit_code, 128 + 15);
}

TEST_P(BackendConformance, KeepsStdoutAndStderrApart) {
  auto result = run("echo out1; echo err1 >&2; echo out2; echo err2 >&2");
  EXPECT_EQ(result.error, "");
  EXPECT_EQ(result.stdout_data, "out1\nout2\n");
  EXPECT_EQ(result.stderr_data, "err1\nerr2\n");
  EXPECT_FALSE(result.stdout_truncated);
  EXPECT_FALSE(result.stderr_truncated);
}

TEST_P(BackendConformance, StdinIsEmptyNotTheServersInput) {
  auto result = run("cat; echo \"cat=$?\"", 30s);
  EXPECT_FALSE(result.timed_out) << "the command waited for input";
  EXPECT_EQ(result.stdout_data, "cat=0\n");
}

TEST_P(BackendConformance, PreservesNonUtf8BytesRaw) {
  auto result = run(R"(printf '\377\376\000\200abc\303'; printf '\351\000' >&2)");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.stdout_data, std::string("\xff\xfe\0\x80"
                                            "abc\xc3",
                                            8));
  EXPECT_EQ(result.stderr_data, std::string("\xe9\0", 2));
}

TEST_P(BackendConformance, PassesRequestEnvironment) {
  sdk::ExecRequest request;
  request.command = R"(printf '%s|%s' "$EXECMCP_CONF_A" "$EXECMCP_CONF_B")";
  request.env = {{"EXECMCP_CONF_A", "one two"}, {"EXECMCP_CONF_B", "x=y"}};
  auto result = backend_->execute(request);
  EXPECT_EQ(result.stdout_data, "one two|x=y");
}

TEST_P(BackendConformance, MeasuresDuration) {
  auto result = run("sleep 0.3");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_GE(result.duration_seconds, 0.25);
  EXPECT_LT(result.duration_seconds, 0.3 + static_cast<double>(slack().count()));
}

TEST_P(BackendConformance, TimeoutKillsTheWholeTree) {
  auto started = Clock::now();
  auto result = run("(" + heartbeat("hb") + ") & sleep 1000", 1500ms);
  double elapsed = seconds_since(started);
  EXPECT_TRUE(result.timed_out);
  EXPECT_FALSE(result.cancelled);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_LT(elapsed, 1.5 + static_cast<double>(slack().count()));
  expect_heartbeat_dead("hb");
}

TEST_P(BackendConformance, TimeoutKillsASetsidEscapee) {
  if (run("command -v setsid").exit_code != 0) GTEST_SKIP() << "no setsid in this backend";
  auto result = run("setsid sh -c \"" + heartbeat("hb") + "\" & sleep 1000", 1500ms);
  EXPECT_TRUE(result.timed_out);
  expect_heartbeat_dead("hb");
}

TEST_P(BackendConformance, CommandLeavingBackgroundJobDoesNotHang) {
  auto started = Clock::now();
  auto result = run("(" + heartbeat("hb") + ") & sleep 0.5; echo done", 120s);
  EXPECT_EQ(result.stdout_data, "done\n");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_FALSE(result.timed_out);
  EXPECT_LT(seconds_since(started), 0.5 + static_cast<double>(slack().count()));
  expect_heartbeat_dead("hb");
}

TEST_P(BackendConformance, CancelKillsTheTreeAndReturnsPromptly) {
  sdk::CancelToken cancel;
  sdk::ExecRequest request;
  request.command = "(" + heartbeat("hb") + ") & sleep 1000";
  request.timeout = 600s;
  request.cancel = &cancel;
  auto future = std::async(std::launch::async, [&] { return backend_->execute(request); });
  wait_for_heartbeat("hb");
  auto cancelled_at = Clock::now();
  cancel.request_cancel();
  ASSERT_EQ(future.wait_for(slack()), std::future_status::ready) << "cancel was not honoured";
  auto result = future.get();
  EXPECT_LT(seconds_since(cancelled_at), static_cast<double>(slack().count()));
  EXPECT_TRUE(result.cancelled);
  EXPECT_FALSE(result.timed_out);
  expect_heartbeat_dead("hb");
}

TEST_P(BackendConformance, StopKillsRunningCommands) {
  sdk::ExecRequest request;
  request.command = "(" + heartbeat("hb") + ") & sleep 1000";
  request.timeout = 600s;
  auto future = std::async(std::launch::async, [&] { return backend_->execute(request); });
  wait_for_heartbeat("hb");
  backend_->stop();
  ASSERT_EQ(future.wait_for(slack()), std::future_status::ready) << "stop() left it running";
  auto result = future.get();
  EXPECT_NE(result.exit_code, 0);
  expect_heartbeat_dead("hb");
}

TEST_P(BackendConformance, CapsOutputPerStreamAndKeepsDraining) {
  sdk::ExecRequest request;
  request.command =
      "head -c 300000 /dev/zero | tr '\\000' a; head -c 5000 /dev/zero | tr '\\000' b >&2;"
      " echo finished > '" +
      workspace_path("finished") + "'";
  request.output_cap = 1000;
  auto result = backend_->execute(request);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.stdout_data, std::string(1000, 'a'));
  EXPECT_TRUE(result.stdout_truncated);
  EXPECT_EQ(result.stderr_data, std::string(1000, 'b'));
  EXPECT_TRUE(result.stderr_truncated);
  EXPECT_EQ(workspace_file("finished"), "finished\n")
      << "the command did not run to its end: was its output drained?";
}

TEST_P(BackendConformance, DrainsLargeOutputWithoutBlocking) {
  sdk::ExecRequest request;
  request.command = "head -c 30000000 /dev/zero; echo end >&2";
  request.output_cap = 4096;
  request.timeout = 120s;
  auto result = backend_->execute(request);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.stdout_data.size(), 4096u);
  EXPECT_TRUE(result.stdout_truncated);
  EXPECT_EQ(result.stderr_data, "end\n");
  EXPECT_FALSE(result.stderr_truncated);
}

TEST_P(BackendConformance, OutputExactlyAtTheCapIsNotTruncated) {
  sdk::ExecRequest request;
  request.command = "printf abcd";
  request.output_cap = 4;
  auto result = backend_->execute(request);
  EXPECT_EQ(result.stdout_data, "abcd");
  EXPECT_FALSE(result.stdout_truncated);
}

TEST_P(BackendConformance, StreamsOutputWhileRunning) {
  RecordingSink sink;
  sdk::ExecRequest request;
  request.command = "echo first; echo warn >&2; sleep 1.5; echo second";
  request.sink = &sink;
  auto result = backend_->execute(request);
  auto returned_at = Clock::now();
  EXPECT_EQ(result.stdout_data, "first\nsecond\n");
  EXPECT_EQ(sink.stdout_data(), result.stdout_data);
  EXPECT_EQ(sink.stderr_data(), "warn\n");
  ASSERT_NE(sink.first_stdout_at(), Clock::time_point{});
  EXPECT_GT(std::chrono::duration<double>(returned_at - sink.first_stdout_at()).count(), 0.5)
      << "output arrived only at the end, not while the command ran";
}

TEST_P(BackendConformance, WorkDirDefaultsToCwdAndResolvesInside) {
  fs::create_directories(workspace_ / "sub" / "dir");
  EXPECT_EQ(run("pwd -P").stdout_data, workspace_.string() + "\n");
  EXPECT_EQ(run("pwd -P", 60s, "sub/dir").stdout_data,
            (workspace_ / "sub" / "dir").string() + "\n");
  EXPECT_EQ(run("pwd -P", 60s, (workspace_ / "sub").string()).stdout_data,
            (workspace_ / "sub").string() + "\n");
  // Context paths are allowed paths too (read-only ones included).
  EXPECT_EQ(run("pwd -P", 60s, context_.string()).stdout_data, context_.string() + "\n");
}

TEST_P(BackendConformance, WorkDirOutsideAllowedPathsIsRefused) {
  fs::create_symlink(outside_, workspace_ / "escape");
  const std::string marker = (workspace_ / "ran").string();
  for (const std::string& work_dir : {outside_.string(), std::string("/"), std::string(".."),
                                      std::string("escape"), std::string("escape/../outside")}) {
    auto result = run("touch '" + marker + "'", 60s, work_dir);
    EXPECT_NE(result.error, "") << "work_dir " << work_dir << " was accepted";
    EXPECT_FALSE(fs::exists(marker)) << "the command ran in work_dir " << work_dir;
  }
}

TEST_P(BackendConformance, WorkDirThatDoesNotExistIsRefused) {
  auto result = run("true", 60s, "no/such/dir");
  EXPECT_NE(result.error, "");
}

TEST_P(BackendConformance, FileWriteReadRoundTripKeepsEveryByte) {
  std::string data;
  for (int round = 0; round < 4; ++round)
    for (int b = 0; b < 256; ++b) data.push_back(static_cast<char>(b));
  auto written = backend_->write_file({"deep/er/file.bin", data});
  ASSERT_EQ(written.error, "");
  EXPECT_EQ(written.bytes_written, data.size());
  EXPECT_EQ(read_host_file(workspace_ / "deep/er/file.bin"), data) << "not at the host path";

  auto read = backend_->read_file({(workspace_ / "deep/er/file.bin").string()});
  ASSERT_EQ(read.error, "");
  EXPECT_EQ(read.data, data);
  EXPECT_FALSE(read.truncated);

  auto exact = backend_->read_file({"deep/er/file.bin", data.size()});
  EXPECT_EQ(exact.data, data);
  EXPECT_FALSE(exact.truncated);

  auto partial = backend_->read_file({"deep/er/file.bin", 10});
  EXPECT_EQ(partial.error, "");
  EXPECT_EQ(partial.data, data.substr(0, 10));
  EXPECT_TRUE(partial.truncated);

  // The command sees what the file tool wrote.
  EXPECT_EQ(run("wc -c < deep/er/file.bin | tr -d ' '").stdout_data, "1024\n");

  auto overwrite = backend_->write_file({"deep/er/file.bin", "short"});
  EXPECT_EQ(overwrite.error, "");
  EXPECT_EQ(backend_->read_file({"deep/er/file.bin"}).data, "short");
}

TEST_P(BackendConformance, FileToolsRefuseOutsideAndReadOnlyPaths) {
  fs::create_symlink(outside_, workspace_ / "escape");
  auto read_outside = backend_->read_file({(outside_ / "secret.txt").string()});
  EXPECT_NE(read_outside.error, "");
  EXPECT_EQ(read_outside.data, "");
  auto read_link = backend_->read_file({"escape/secret.txt"});
  EXPECT_NE(read_link.error, "");
  EXPECT_EQ(read_link.data, "");
  EXPECT_NE(backend_->read_file({"../outside/secret.txt"}).error, "");

  EXPECT_NE(backend_->write_file({(outside_ / "new.txt").string(), "x"}).error, "");
  EXPECT_NE(backend_->write_file({"escape/new.txt", "x"}).error, "");
  EXPECT_FALSE(fs::exists(outside_ / "new.txt"));

  // A read-only context path: readable, not writable.
  auto context_read = backend_->read_file({(context_ / "readme.txt").string()});
  EXPECT_EQ(context_read.error, "");
  EXPECT_EQ(context_read.data, "context file\n");
  EXPECT_NE(backend_->write_file({(context_ / "readme.txt").string(), "changed"}).error, "");
  EXPECT_EQ(read_host_file(context_ / "readme.txt"), "context file\n");
}

// A FIFO (or any file that is not a regular one) is refused at once: opening one to read blocks
// until a writer comes, which would hold a call and its concurrency slot for ever. Should the
// backend block anyway, the test opens the other end after 10 s so it fails instead of hanging.
TEST_P(BackendConformance, FileToolsRefuseAFifoWithoutBlocking) {
  const fs::path fifo = workspace_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  auto bounded = [&](auto call, int unblock_flags) {
    auto future = std::async(std::launch::async, call);
    const bool blocked = future.wait_for(10s) != std::future_status::ready;
    if (blocked) {
      ::signal(SIGPIPE, SIG_IGN);
      ::close(::open(fifo.c_str(), unblock_flags | O_NONBLOCK));
    }
    EXPECT_FALSE(blocked) << "the file tool blocked on a FIFO";
    return future.get();
  };
  auto read = bounded([&] { return backend_->read_file({"fifo"}); }, O_WRONLY);
  EXPECT_NE(read.error, "");
  EXPECT_EQ(read.data, "");
  auto write = bounded([&] { return backend_->write_file({"fifo", "x"}); }, O_RDONLY);
  EXPECT_NE(write.error, "");
  EXPECT_EQ(write.bytes_written, 0u);
}

// A file request whose cancel token is already set returns an error and changes nothing.
TEST_P(BackendConformance, FileRequestsHonourTheirCancelToken) {
  write_host_file(workspace_ / "kept.txt", "kept\n");
  sdk::CancelToken cancel;
  cancel.request_cancel();
  sdk::FileReadRequest read{"kept.txt"};
  read.cancel = &cancel;
  auto got = backend_->read_file(read);
  EXPECT_NE(got.error, "");
  EXPECT_EQ(got.data, "");
  sdk::FileWriteRequest write{"kept.txt", "changed\n"};
  write.cancel = &cancel;
  EXPECT_NE(backend_->write_file(write).error, "");
  EXPECT_EQ(read_host_file(workspace_ / "kept.txt"), "kept\n");
}

TEST_P(BackendConformance, ReadingAMissingFileIsAnError) {
  auto result = backend_->read_file({"does-not-exist.txt"});
  EXPECT_NE(result.error, "");
  EXPECT_EQ(result.data, "");
}

TEST_P(BackendConformance, RunsManyCommandsAtOnce) {
  constexpr int kCommands = 8;
  // A backend's first call may set things up (a Docker backend starts its agent in the container,
  // over SSH seconds): made first, so the clock measures the eight calls only.
  ASSERT_EQ(run("true").error, "");
  std::vector<std::future<sdk::ExecResult>> futures;
  auto started = Clock::now();
  for (int i = 0; i < kCommands; ++i) {
    futures.push_back(std::async(std::launch::async, [this, i] {
      return run("echo start-" + std::to_string(i) + "; sleep 1; echo end-" + std::to_string(i) +
                 " >&2; exit " + std::to_string(i));
    }));
  }
  for (int i = 0; i < kCommands; ++i) {
    auto result = futures[static_cast<std::size_t>(i)].get();
    EXPECT_EQ(result.error, "");
    EXPECT_EQ(result.exit_code, i);
    EXPECT_EQ(result.stdout_data, "start-" + std::to_string(i) + "\n");
    EXPECT_EQ(result.stderr_data, "end-" + std::to_string(i) + "\n");
  }
  // Serialized they would take 8 s or more.
  EXPECT_LT(seconds_since(started), 7.5) << "commands did not run concurrently";
}

// The contract lets the host call every method from several threads at once, start() included:
// here start() runs again and again while commands and file tools run beside it. A call that
// overlaps a start() may fail (a Docker backend's start() may replace the container a command runs
// in), but only through `error`: no call throws, crashes or hangs, a call that reports success
// reports its own result, and the backend serves as before once a last start() has returned. A
// data race (state that start() replaces while calls read it) shows under the sanitizers:
// scripts/sanitize.sh runs this kit for the local backend under ThreadSanitizer.
TEST_P(BackendConformance, StartAgainWhileCallsRunIsSafe) {
  constexpr int kMinStarts = 3;
  constexpr int kMinCallsEach = 10;
  constexpr std::size_t kCallers = 3;  // one for the file tools, two for commands
  fs::create_directories(workspace_ / "sub");
  write_host_file(workspace_ / "sub" / "data.txt", "data\n");
  const std::string sub = (workspace_ / "sub").string();
  const auto deadline = Clock::now() + slack();
  std::atomic<bool> starting{true};
  std::array<std::atomic<int>, kCallers> calls{};
  // Starts until every caller has made some calls beside it (or the slack is spent), then stops
  // them; a caller that made none would prove nothing.
  auto starter = std::async(std::launch::async, [&] {
    auto enough = [&] {
      return std::all_of(calls.begin(), calls.end(),
                         [](const std::atomic<int>& made) { return made.load() >= kMinCallsEach; });
    };
    for (int starts = 0; starts < kMinStarts || (!enough() && Clock::now() < deadline); ++starts)
      (void)backend_->start();  // "" or an error: both keep the contract while calls run
    starting.store(false);
  });
  auto file_caller = [&](std::atomic<int>& made) {
    std::string wrong;
    for (int n = 0; starting.load() && wrong.empty(); n = ++made) {
      auto read = backend_->read_file({"sub/data.txt"});
      if (read.error.empty() && read.data != "data\n")
        wrong = "read_file returned '" + read.data + "' and no error";
      const std::string text = "written-" + std::to_string(n);
      auto written = backend_->write_file({"sub/written.txt", text});
      if (written.error.empty() && written.bytes_written != text.size())
        wrong = "write_file wrote " + std::to_string(written.bytes_written) + " of " +
                std::to_string(text.size()) + " bytes and reported no error";
    }
    return made.load() == 0 ? "the file tools made no call while start() ran" : wrong;
  };
  auto command_caller = [&](std::atomic<int>& made, std::size_t caller) {
    std::string wrong;
    for (int n = 0; starting.load() && wrong.empty(); n = ++made) {
      const std::string token = "call-" + std::to_string(caller) + "-" + std::to_string(n);
      auto result = run("echo " + token + "; pwd -P", slack(), "sub");
      const std::string expected = token + "\n" + sub + "\n";
      if (result.error.empty() && result.exit_code == 0 && result.stdout_data != expected)
        wrong = "execute returned '" + result.stdout_data + "' with exit code 0 and no error, " +
                "expected '" + expected + "'";
    }
    return made.load() == 0 ? "a command caller made no call while start() ran" : wrong;
  };
  std::vector<std::future<std::string>> callers;
  callers.push_back(std::async(std::launch::async, file_caller, std::ref(calls[0])));
  for (std::size_t i = 1; i < kCallers; ++i)
    callers.push_back(std::async(std::launch::async, command_caller, std::ref(calls[i]), i));
  // Each caller ends the call it is in (bounded by its timeout) after the last start.
  const auto bound = 3 * slack();
  ASSERT_EQ(starter.wait_for(bound), std::future_status::ready) << "start() did not return";
  for (auto& caller : callers) {
    ASSERT_EQ(caller.wait_for(bound), std::future_status::ready)
        << "a call beside start() did not return";
    EXPECT_EQ(caller.get(), "");
  }

  ASSERT_EQ(backend_->start(), "") << "start() fails once the calls beside it have ended";
  EXPECT_EQ(run("echo after; pwd -P", 60s, "sub").stdout_data, "after\n" + sub + "\n");
  EXPECT_EQ(backend_->read_file({"sub/data.txt"}).data, "data\n");
}

TEST_P(BackendConformance, LifecycleCallsAreIdempotent) {
  EXPECT_EQ(backend_->start(), "");  // a second start adopts what the first made
  EXPECT_EQ(run("echo one").stdout_data, "one\n");
  backend_->stop();
  backend_->stop();
  EXPECT_EQ(backend_->start(), "");
  EXPECT_EQ(run("echo two").stdout_data, "two\n");
  backend_->cleanup();
  backend_->cleanup();  // TearDown cleans up a third time
}

// Capabilities are found by id; an id the backend does not know is null (never a throw), and an
// offered one is the same pointer on every call.
TEST_P(BackendConformance, QueryInterfaceIsNullForUnknownIdsAndStable) {
  EXPECT_EQ(backend_->query_interface("execmcp.conformance-no-such-interface/1"), nullptr);
  EXPECT_EQ(backend_->query_interface(""), nullptr);
  EXPECT_EQ(backend_->query_interface(sdk::kBackgroundProcessesId),
            backend_->query_interface(sdk::kBackgroundProcessesId));
}

// execmcp.network_events/1, when offered: the same pointer on every call; events only while a
// sink is subscribed, each with a bounded, escaped host; subscribe(null) returns, and then no call
// reaches the old sink.
TEST_P(BackendConformance, NetworkEventsReachOnlyASubscribedSink) {
  auto* events = sdk::network_events(*backend_);
  if (events == nullptr)
    GTEST_SKIP() << "'" << GetParam().name << "' does not offer " << sdk::kNetworkEventsId;
  EXPECT_EQ(events, sdk::network_events(*backend_));
  struct Sink final : sdk::NetworkEventSink {
    void on_network_event(const sdk::NetworkEvent& event) noexcept override {
      std::lock_guard lock(mutex);
      hosts.push_back(event.host);
    }
    std::mutex mutex;
    std::vector<std::string> hosts;
  } sink;
  events->subscribe(&sink);
  run("echo subscribed");
  events->subscribe(nullptr);
  std::vector<std::string> seen;
  {
    std::lock_guard lock(sink.mutex);
    seen = sink.hosts;
  }
  for (const auto& host : seen) {
    EXPECT_LE(host.size(), 255u + 64u) << host;  // 255 bytes, and what log_text() says was cut
    EXPECT_TRUE(std::none_of(host.begin(), host.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20;
    })) << host;
  }
  run("echo unsubscribed");
  std::lock_guard lock(sink.mutex);
  EXPECT_EQ(sink.hosts.size(), seen.size());
}

TEST_P(BackendConformance, ReportsTraits) {
  auto traits = backend_->traits();
  EXPECT_FALSE(traits.python.empty());
}

}  // namespace

bool register_backend(BackendUnderTest backend) {
  detail::link_background_cases();
  detail::registry().push_back(std::move(backend));
  return true;
}

// Evaluated by InitGoogleTest(), after static initializers have registered the backends.
INSTANTIATE_TEST_SUITE_P(Backends, BackendConformance, ::testing::ValuesIn(detail::registry()),
                         detail::test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BackendConformance);

}  // namespace execmcp::conformance
