// Child processes of the docker-cli plugin (the docker or podman binary): spawned with an explicit
// environment and our own descriptors as their stdio, ended with SIGTERM then SIGKILL, always
// reaped. Boost.Process does the spawning, inside child_process.cpp only.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace execmcp::plugins::docker_cli {

// How a child's stdio is wired. The child never gets the server's own stdin, stdout or stderr
// (on the stdio transport, fd 1 is the MCP stream).
struct ChildStdio {
  bool input = false;             // stdin is a socket we write to (else /dev/null)
  bool stdin_is_stdout = false;   // stdin and stdout are one socket (with `input`)
  bool stderr_is_stdout = false;  // stderr goes where stdout goes, in arrival order
};

// One spawned child. Threading: every method may be called from any thread; the process is
// reaped exactly once. The destructor ends it (end()) if it still runs.
class Child {
 public:
  Child(pid_t pid, int in_fd, int out_fd, int err_fd);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  // Our ends, close-on-exec; out_fd and err_fd are non-blocking. in_fd == out_fd when stdin and
  // stdout share a socket; err_fd is -1 when stderr goes to stdout; in_fd is -1 without input.
  [[nodiscard]] int in_fd() const { return in_fd_; }
  [[nodiscard]] int out_fd() const { return out_fd_; }
  [[nodiscard]] int err_fd() const { return err_fd_; }
  // Hands our ends to the caller, who closes them from then on (-1 here afterwards); a socket
  // shared by stdin and stdout goes with release_out().
  int release_in();
  int release_out();
  int release_err();
  // The child sees the end of its input (shutdown(SHUT_WR) when stdin is stdout's socket).
  void close_in();

  // The exit status once the child has ended (its exit code, or 128 + the signal that killed it);
  // nullopt while it runs. Never blocks.
  std::optional<int> poll_exit();
  // Waits for the child to end by itself.
  int wait_exit();
  // Ends the child if it still runs: waits up to `exit_wait` for it to exit by itself, then
  // SIGTERM, up to `term_grace` (checked every 50 ms), then SIGKILL; reaps it either way and
  // returns its status.
  int end(std::chrono::milliseconds exit_wait = std::chrono::milliseconds(0),
          std::chrono::milliseconds term_grace = std::chrono::seconds(2)) noexcept;
  // True once end() had to signal the child (its status is then not its own doing).
  [[nodiscard]] bool signalled() const { return signalled_; }

 private:
  // Reaps the child if it has ended (blocking: waits until it has); caller holds mutex_.
  bool reap(bool block);

  pid_t pid_;
  int in_fd_, out_fd_, err_fd_;
  std::mutex mutex_;
  std::optional<int> status_;
  std::atomic<bool> signalled_{false};
};

// What run() says about one finished (or killed) CLI run.
struct CliRun {
  int exit_status = -1;     // see Child::poll_exit(); -1 when it never ran
  std::string out;          // its stdout (at most max_output bytes kept)
  std::string err;          // its stderr (at most max_output bytes kept)
  std::string spawn_error;  // it could not start (the binary is missing, ...)
  bool timed_out = false;   // killed at the timeout
  [[nodiscard]] bool ok() const { return spawn_error.empty() && !timed_out && exit_status == 0; }
};

// Starts one CLI binary with one fixed environment. The binary is looked up once, in the PATH of
// that environment (not the server's).
class ChildLauncher {
 public:
  // `env` is the child's whole environment; nothing else of ours is inherited.
  ChildLauncher(std::string binary, std::map<std::string, std::string> env);

  // "" when the binary was found, else why not (in words, naming PATH and the setting).
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] const std::string& program() const { return program_; }
  [[nodiscard]] const std::map<std::string, std::string>& env() const { return env_; }

  // Starts `program args...`; null and `error` when it cannot start. `extra_env` adds variables
  // to this child's environment (never replacing one of env()'s): values that must not be seen in
  // its argv, as `docker exec --env=NAME` reads NAME's value from the CLI's own environment.
  std::unique_ptr<Child> spawn(const std::vector<std::string>& args, ChildStdio stdio,
                               std::string& error,
                               const std::map<std::string, std::string>* extra_env = nullptr) const;

  // Runs `program args...` to its end, feeding `input` (nullptr: stdin is /dev/null) while
  // collecting both output streams, all in one poll loop; killed at `timeout`.
  CliRun run(const std::vector<std::string>& args, const std::string* input,
             std::chrono::milliseconds timeout, std::size_t max_output = kMaxOutput) const;

  static constexpr std::size_t kMaxOutput = std::size_t{64} << 20;

 private:
  std::string binary_;
  std::map<std::string, std::string> env_;
  std::string program_;  // absolute path
  std::string error_;
};

}  // namespace execmcp::plugins::docker_cli
