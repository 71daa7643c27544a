// The supervisor's client: runs one shell command through a spare-pool program that can kill its
// whole tree (run_supervised(); the program is SupervisorProgram).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "execmcp/sdk/types.hpp"

namespace execmcp::plugins::supervision {

struct SpawnSpec {
  std::string shell;             // absolute path of the shell
  std::string command;           // passed as `<shell> -c <command>`
  std::string work_dir;          // absolute, existing; for messages
  int work_dir_fd = -1;          // the directory itself (O_PATH); the shell starts there
  std::vector<std::string> env;  // complete environment, "NAME=value"
  // The command's standard input; null: /dev/null. Fed through a pipe while the command runs, so
  // the caller must ignore SIGPIPE (a command may exit without reading it all).
  const std::string* stdin_data = nullptr;
};

struct RunControl {
  std::chrono::milliseconds timeout{0};  // <= 0: no timeout
  std::size_t output_cap = sdk::kDefaultOutputCap;
  sdk::OutputSink* sink = nullptr;
  const sdk::CancelToken* cancel = nullptr;
  // Set by the backend's stop(): kills the command like a cancel. Raised during the grace of a
  // cancel (term_grace), it ends the grace at once.
  const std::atomic<bool>* stop = nullptr;
  // On cancel/stop: 0 = SIGKILL the tree at once (as before); > 0 = SIGTERM to the whole tree
  // (setsid escapees too), wait up to term_grace for all of it to be gone, then SIGKILL what is
  // left. Read when the kill is decided, so a caller may set it before it raises `cancel` (the
  // token's release/acquire orders the two); never while the command may already be ending.
  std::chrono::milliseconds term_grace{0};
  // false: every byte goes to `sink` and the result keeps nothing (no output_cap applies), so a
  // command may print for ever in bounded memory.
  bool retain_output = true;
  // Optional; called once, on the calling thread, with the shell's pid as soon as it is known and
  // before any output reaches the sink. Not called when no shell was started.
  std::function<void(long pid)> on_started;
};

// A spare-pool program (spare_pool.hpp: execmcp-supervisor next to the local plugin, or
// execmcp-runner itself inside a container), started on first use and restarted if it died.
// Thread-safe: every command of a backend shares one.
class SupervisorProgram {
 public:
  explicit SupervisorProgram(std::string path) : path_(std::move(path)) {}
  ~SupervisorProgram() { shut_down(); }
  SupervisorProgram(const SupervisorProgram&) = delete;
  SupervisorProgram& operator=(const SupervisorProgram&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  // "" when the program exists and is executable, else what is wrong and how to fix it.
  [[nodiscard]] std::string check() const;
  // Hands one command (the message's data, and its descriptors in supervisor_protocol.hpp's order)
  // to the program; returns "" or an error.
  std::string submit(std::string_view data, const int* fds, int fd_count);
  // Sends the program SIGCONT: a command may have stopped it, and a stopped program forks no spare
  // for the commands waiting on its socket.
  void wake() noexcept;
  // Closes the socket (the program then exits; running commands keep their supervisors) and reaps
  // the program.
  void shut_down() noexcept;

 private:
  std::string start_locked();
  void stop_locked() noexcept;

  std::string path_;
  std::mutex mutex_;
  pid_t pid_ = -1;
  int socket_ = -1;
};

// Runs the command to completion (or until it is killed) and fills exit code, output, flags and
// duration. Never throws; failures to start land in `error`. `wait_status`, when given, receives
// the shell's wait status (-1 when unknown), for callers that must tell a signal from an exit code.
sdk::ExecResult run_supervised(SupervisorProgram& supervisor, const SpawnSpec& spec,
                               const RunControl& control, int* wait_status = nullptr);

}  // namespace execmcp::plugins::supervision
