// Spawning execmcp with pipes, line-oriented JSON-RPC I/O, and reading its memory from /proc.
#include "server_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace execmcp::bench {

namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  out.reserve(argv.size() + 1);
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

long status_field_kib(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stol(line.substr(prefix.size()));
  }
  return 0;
}

}  // namespace

std::string sibling_execmcp() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto sibling = self.parent_path() / "execmcp";
    if (std::filesystem::exists(sibling)) return sibling.string();
  }
  return "execmcp";
}

int spawn_and_wait(const std::vector<std::string>& argv) {
  auto args = c_argv(argv);
  pid_t pid = -1;
  if (posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

ServerProcess::ServerProcess(const std::string& bin, const std::string& config,
                             const std::string& agent, const std::string& stderr_file,
                             const std::vector<std::string>& extra_args) {
  int in_pipe[2];
  int out_pipe[2];
  // O_CLOEXEC on every end: with several servers alive, none may hold another's pipe open.
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  std::vector<std::string> argv = {bin, "serve", "--config", config, "--agent", agent};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  auto args = c_argv(argv);
  const int rc = posix_spawn(&pid_, bin.c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  in_fd_ = in_pipe[1];
  out_fd_ = out_pipe[0];
  if (rc != 0) {
    close(in_fd_);
    close(out_fd_);
    throw std::runtime_error("cannot start " + bin + ": " + std::strerror(rc));
  }
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) shutdown();
  if (out_fd_ >= 0) close(out_fd_);
}

void ServerProcess::send_line(const std::string& line) {
  std::string data = line + "\n";
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(in_fd_, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("write to server: ") + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
}

std::optional<std::string> ServerProcess::take_line() {
  const auto nl = buffer_.find('\n');
  if (nl == std::string::npos) return std::nullopt;
  std::string line = buffer_.substr(0, nl);
  buffer_.erase(0, nl + 1);
  return line;
}

bool ServerProcess::fill(int timeout_ms) {
  pollfd pfd{out_fd_, POLLIN, 0};
  const int ready = poll(&pfd, 1, timeout_ms);
  if (ready < 0 && errno != EINTR) throw std::runtime_error("poll failed");
  if (ready <= 0) return false;
  char chunk[65536];
  const ssize_t n = read(out_fd_, chunk, sizeof chunk);
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN) return true;
    throw std::runtime_error(std::string("read from server: ") + std::strerror(errno));
  }
  if (n == 0) {
    eof_ = true;
    return false;
  }
  buffer_.append(chunk, static_cast<std::size_t>(n));
  return true;
}

std::string ServerProcess::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto line = take_line()) return *line;
    if (eof_) throw std::runtime_error("server closed its stdout (it exited; see its stderr log)");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw std::runtime_error("timed out waiting for the server");
    fill(static_cast<int>(left.count()));
  }
}

std::optional<std::string> ServerProcess::try_read_line() {
  if (auto line = take_line()) return line;
  if (eof_) throw std::runtime_error("server closed its stdout (it exited; see its stderr log)");
  if (fill(0)) return take_line();
  return std::nullopt;
}

void ServerProcess::initialize() {
  send_line(
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":)"
      R"("2025-06-18","capabilities":{},"clientInfo":{"name":"execmcp_bench","version":"1"}}})");
  for (;;) {
    const std::string line = read_line(std::chrono::seconds(60));
    if (response_id(line) != 0) continue;
    if (line.find("\"result\"") == std::string::npos)
      throw std::runtime_error("initialize failed: " + line);
    break;
  }
  send_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
}

double ServerProcess::shutdown() {
  if (pid_ <= 0) return 0.0;
  const auto start = std::chrono::steady_clock::now();
  if (in_fd_ >= 0) {
    close(in_fd_);
    in_fd_ = -1;
  }
  int status = 0;
  int waited_ms = 0;
  for (int phase = 0; phase < 3; ++phase) {
    if (phase == 1) kill(pid_, SIGTERM);
    if (phase == 2) kill(pid_, SIGKILL);
    const int limit = phase == 2 ? 1000000 : waited_ms + 5000;
    bool gone = false;
    while (waited_ms < limit) {
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_ || (r < 0 && errno == ECHILD)) {
        gone = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      waited_ms += 5;
    }
    if (gone) break;
  }
  pid_ = -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

long ServerProcess::rss_kib() const {
  return status_field_kib(pid_, "VmRSS");
}
long ServerProcess::peak_rss_kib() const {
  return status_field_kib(pid_, "VmHWM");
}

long response_id(const std::string& line) {
  // Cheap: our requests carry numeric ids, so look for `"id":<digits>` before parsing anything.
  const auto pos = line.find("\"id\":");
  if (pos == std::string::npos) return -1;
  std::size_t i = pos + 5;
  while (i < line.size() && line[i] == ' ') ++i;
  if (i >= line.size() || line[i] < '0' || line[i] > '9') return -1;
  return std::strtol(line.c_str() + i, nullptr, 10);
}

void expect_exec_ok(const std::string& line) {
  const auto msg = nlohmann::json::parse(line, nullptr, false);
  if (msg.is_discarded() || !msg.contains("result"))
    throw std::runtime_error("tools/call failed: " + line.substr(0, 500));
  const auto& result = msg["result"];
  if (result.value("isError", false))
    throw std::runtime_error("tool error: " + line.substr(0, 500));
  const auto& sc = result.value("structuredContent", nlohmann::json::object());
  if (sc.value("exit_code", -1) != 0)
    throw std::runtime_error("command did not exit 0: " + line.substr(0, 500));
}

}  // namespace execmcp::bench
