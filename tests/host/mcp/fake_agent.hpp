// A scripted host::Agent for the MCP tests: canned commands, a slow command that waits for its
// cancel token, output streaming, non-UTF-8 bytes, blocked and failing outcomes, a file store.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/agent.hpp"

namespace execmcp::host::testing {

// Runs `/bin/sh -c command` and captures both streams (for run_internal in read_docstring tests).
inline sdk::ExecResult run_shell(const std::string& command) {
  sdk::ExecResult result;
  int out[2];
  int err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    result.error = "pipe failed";
    return result;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_streams = 2;
  while (open_streams > 0) {
    if (::poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_streams;
      } else {
        (i == 0 ? result.stdout_data : result.stderr_data).append(buffer, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

class FakeAgent final : public Agent {
 public:
  explicit FakeAgent(std::string id = "agent_a") : id_(std::move(id)) {}

  // Commands it knows: "echo hi", "fail", "slow" (waits for cancel), "emit" (streams chunks),
  // "emit-many" (1000 tiny chunks), "binary", "blocked", "broken", "truncated", "flood" (streams
  // 16 KiB chunks until cancelled) and "touch NAME". With a marker directory, "flood" creates
  // flood-started and flood-done in it and "touch NAME" creates NAME: a side channel that works
  // from a forked server whose stdout the test does not read.
  ExecuteOutcome execute(const ExecuteArgs& args, sdk::OutputSink* sink,
                         const sdk::CancelToken* cancel) override {
    {
      std::lock_guard lock(mutex_);
      ++in_flight_;
      max_in_flight_ = std::max(max_in_flight_, in_flight_);
    }
    ExecuteOutcome outcome = execute_script(args, sink, cancel);
    std::lock_guard lock(mutex_);
    --in_flight_;
    return outcome;
  }

  // The most calls that ran at the same time.
  int max_in_flight() {
    std::lock_guard lock(mutex_);
    return max_in_flight_;
  }

 private:
  ExecuteOutcome execute_script(const ExecuteArgs& args, sdk::OutputSink* sink,
                                const sdk::CancelToken* cancel) {
    {
      std::lock_guard lock(mutex_);
      last_args_ = args;
      ++executions_;
    }
    ExecuteOutcome outcome;
    sdk::ExecResult& r = outcome.result;
    r.duration_seconds = 0.01;
    const std::string& c = args.command;
    if (c == "echo hi") {
      r.exit_code = 0;
      r.stdout_data = "hi\n";
    } else if (c == "fail") {
      r.exit_code = 3;
      r.stderr_data = "bad thing\n";
    } else if (c == "slow") {
      {
        std::lock_guard lock(mutex_);
        ++slow_started_;
      }
      cv_.notify_all();
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!(cancel != nullptr && cancel->cancel_requested()) &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      r.cancelled = cancel != nullptr && cancel->cancel_requested();
      r.exit_code = -1;
      {
        std::lock_guard lock(mutex_);
        ++slow_finished_;
      }
      cv_.notify_all();
    } else if (c == "emit") {
      if (sink != nullptr) {
        sink->on_output(sdk::StreamKind::Stdout, "part1\n");
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        sink->on_output(sdk::StreamKind::Stdout, "part2 \xE2\x82");  // euro sign split in two
        sink->on_output(sdk::StreamKind::Stdout, "\xAC end\n");
      }
      r.exit_code = 0;
      r.stdout_data = "part1\npart2 \xE2\x82\xAC end\n";
    } else if (c == "emit-many") {
      for (int i = 0; i < 1000 && sink != nullptr; ++i)
        sink->on_output(sdk::StreamKind::Stderr, "x");
      r.exit_code = 0;
      r.stderr_data = std::string(1000, 'x');
    } else if (c == "flood") {
      touch_marker("flood-started");
      const std::string chunk(16 * 1024, 'x');
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!(cancel != nullptr && cancel->cancel_requested()) &&
             std::chrono::steady_clock::now() < deadline) {
        if (sink != nullptr) sink->on_output(sdk::StreamKind::Stdout, chunk);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      r.cancelled = cancel != nullptr && cancel->cancel_requested();
      r.exit_code = -1;
      touch_marker("flood-done");
    } else if (c.rfind("touch ", 0) == 0) {
      touch_marker(c.substr(6));
      r.exit_code = 0;
    } else if (c == "binary") {
      r.exit_code = 0;
      r.stdout_data = std::string("ok \xFF\xFE\x00 \xC3", 8);
      r.stderr_data = "\x80";
    } else if (c == "blocked") {
      outcome.blocked = true;
      outcome.blocked_by = "patterns";
      outcome.rule = "rm -rf";
      outcome.reason = "destructive commands are not allowed";
    } else if (c == "broken") {
      r.error = "docker engine is not reachable";
    } else if (c == "truncated") {
      r.exit_code = 0;
      r.stdout_data = "aaaa";
      r.stdout_truncated = true;
      r.notices.push_back("container was recreated");
    } else {
      r.exit_code = 127;
      r.stderr_data = "sh: " + c + ": not found\n";
    }
    return outcome;
  }

  void touch_marker(const std::string& name) const {
    if (marker_dir_.empty()) return;
    const int fd = ::open((marker_dir_ + "/" + name).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
  }

 public:
  sdk::ExecResult run_internal(const std::string& command, const sdk::CancelToken*,
                               const std::string&) override {
    {
      std::lock_guard lock(mutex_);
      last_internal_ = command;
    }
    return run_shell(command);
  }

  sdk::FileReadResult read_file(const sdk::FileReadRequest& request, const std::string&) override {
    std::lock_guard lock(mutex_);
    sdk::FileReadResult result;
    const auto it = files_.find(request.path);
    if (it == files_.end()) {
      result.error = "no such file";
    } else {
      result.data = it->second;
    }
    return result;
  }

  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request,
                                  const std::string&) override {
    std::lock_guard lock(mutex_);
    sdk::FileWriteResult result;
    if (request.path.rfind("/readonly/", 0) == 0) {
      result.error = "path is outside the agent's writable paths";
      return result;
    }
    files_[request.path] = request.data;
    result.bytes_written = request.data.size();
    return result;
  }

  [[nodiscard]] const std::string& id() const override { return id_; }
  [[nodiscard]] const std::string& cwd() const override { return cwd_; }
  [[nodiscard]] AgentCapabilities capabilities() const override { return {offer_background}; }
  [[nodiscard]] sdk::BackendTraits traits() const override {
    sdk::BackendTraits traits;
    traits.tools_dir = tools_dir_;
    return traits;
  }

  // Test controls.
  std::atomic<bool> offer_background{false};
  void put_file(const std::string& path, std::string data) {
    std::lock_guard lock(mutex_);
    files_[path] = std::move(data);
  }
  std::optional<std::string> file(const std::string& path) {
    std::lock_guard lock(mutex_);
    const auto it = files_.find(path);
    return it == files_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  bool wait_slow_started(int count, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return slow_started_ >= count; });
  }
  bool wait_slow_finished(int count, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return slow_finished_ >= count; });
  }
  ExecuteArgs last_args() {
    std::lock_guard lock(mutex_);
    return last_args_;
  }
  int executions() {
    std::lock_guard lock(mutex_);
    return executions_;
  }
  std::string last_internal() {
    std::lock_guard lock(mutex_);
    return last_internal_;
  }
  void set_tools_dir(std::string dir) { tools_dir_ = std::move(dir); }
  void set_marker_dir(std::string dir) { marker_dir_ = std::move(dir); }

 private:
  std::string id_;
  std::string cwd_ = "/workspace/agent_a";
  std::string tools_dir_;
  std::string marker_dir_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::string, std::string> files_;
  ExecuteArgs last_args_;
  std::string last_internal_;
  int executions_ = 0;
  int slow_started_ = 0;
  int slow_finished_ = 0;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
};

}  // namespace execmcp::host::testing
