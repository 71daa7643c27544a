// An `execmcp serve` child process driven over its stdin/stdout pipes, one JSON-RPC line at a time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace execmcp::bench {

// The `execmcp` next to the running program (both are built into bin/), else "execmcp" (PATH).
std::string sibling_execmcp();

// Spawns a program with posix_spawn and waits for it; returns the exit status or -1.
int spawn_and_wait(const std::vector<std::string>& argv);

class ServerProcess {
 public:
  // Starts `bin serve --config config --agent agent [extra_args]`; its stderr goes to
  // `stderr_file`.
  ServerProcess(const std::string& bin, const std::string& config, const std::string& agent,
                const std::string& stderr_file, const std::vector<std::string>& extra_args = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] int stdout_fd() const { return out_fd_; }

  void send_line(const std::string& line);
  // Reads one complete line; blocks up to `timeout`. Throws on EOF or timeout.
  std::string read_line(std::chrono::milliseconds timeout);
  // Returns a complete line already buffered or readable without blocking, if any.
  std::optional<std::string> try_read_line();

  // initialize + notifications/initialized; throws when the server does not answer properly.
  void initialize();

  // Closes stdin, waits for exit (then SIGTERM, then SIGKILL); returns seconds it took.
  double shutdown();

  // VmRSS / VmHWM of the server in KiB from /proc/<pid>/status (0 when unreadable).
  [[nodiscard]] long rss_kib() const;
  [[nodiscard]] long peak_rss_kib() const;

 private:
  std::optional<std::string> take_line();
  bool fill(int timeout_ms);  // false: nothing arrived in time

  pid_t pid_ = -1;
  int in_fd_ = -1;
  int out_fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
};

// The id of a JSON-RPC response line, or -1 for a notification / non-numeric id.
long response_id(const std::string& line);

// Checks that a tools/call response is a successful execute_command with exit code 0; throws with
// the line otherwise.
void expect_exec_ok(const std::string& line);

}  // namespace execmcp::bench
