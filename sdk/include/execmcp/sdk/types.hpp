// Plain value types that cross the plugin boundary: requests, results, sinks, cancel tokens.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace execmcp::sdk {

inline constexpr std::size_t kDefaultOutputCap = 1024 * 1024;  // bytes per stream

enum class LogLevel { Trace, Debug, Info, Warn, Error };

// Plugins log through the host so they need no logging library of their own.
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void log(LogLevel level, std::string_view message) noexcept = 0;
};

enum class StreamKind { Stdout, Stderr };

// Receives output chunks while a command runs (for progress streaming). Chunks are raw bytes,
// possibly split inside a UTF-8 sequence; called from the backend's thread.
class OutputSink {
 public:
  virtual ~OutputSink() = default;
  virtual void on_output(StreamKind stream, std::string_view chunk) noexcept = 0;
};

// Set by the host (client cancel, shutdown); polled by the backend, which must then kill the
// command's whole process tree and return promptly with `cancelled = true`.
class CancelToken {
 public:
  void request_cancel() noexcept { requested_.store(true, std::memory_order_release); }
  [[nodiscard]] bool cancel_requested() const noexcept {
    return requested_.load(std::memory_order_acquire);
  }

 private:
  std::atomic<bool> requested_{false};
};

// A path the agent may use. The agent's cwd is always the first grant and is writable.
struct PathGrant {
  PathGrant() = default;
  // `{path, writable}` stays the short form (no missing-initializer warning for the newer field).
  PathGrant(std::string grant_path, bool grant_writable,
            std::vector<std::string> grant_protected_paths = {})
      : path(std::move(grant_path)),
        writable(grant_writable),
        protected_paths(std::move(grant_protected_paths)) {}

  std::string path;  // absolute, as on the host
  bool writable = false;
  // Absolute host paths at or inside `path` that stay read-only although the grant is writable
  // (MassGen's context_paths[].protected_paths). Since ABI 2.0.
  std::vector<std::string> protected_paths;
};

struct ExecRequest {
  std::string command;
  // Empty: the agent's cwd. Relative: against the agent's cwd. Must resolve (symlinks included)
  // inside one of the agent's path grants, or the backend refuses the call.
  std::string work_dir;
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  std::size_t output_cap = kDefaultOutputCap;  // per stream; output past it is drained and dropped
  std::vector<std::pair<std::string, std::string>> env;  // extra environment for this call
  OutputSink* sink = nullptr;                            // optional
  const CancelToken* cancel = nullptr;                   // optional
};

struct ExecResult {
  int exit_code = -1;       // -1 when the command did not run or did not exit normally
  std::string stdout_data;  // raw bytes, at most output_cap
  std::string stderr_data;
  double duration_seconds = 0.0;
  bool timed_out = false;
  bool cancelled = false;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  // Non-empty when the backend could not run the command at all (bad work_dir, engine down, ...).
  // A command that ran and failed is not an error: it has an exit code.
  std::string error;
  // Things the user should know that are not errors ("container was recreated").
  std::vector<std::string> notices;
};

// File requests name a path the agent chose: a backend opens it without following anything that
// leaves the grants (not by re-resolving a checked string), refuses anything but a regular file
// (FIFOs, devices, sockets, directories) at once instead of blocking, and returns promptly with an
// error once `cancel` is requested.
struct FileReadRequest {
  std::string path;  // absolute, or relative to the agent's cwd
  std::size_t max_bytes = 16 * 1024 * 1024;
  const CancelToken* cancel = nullptr;  // optional; since ABI 1.1
};

struct FileReadResult {
  std::string data;        // raw bytes
  bool truncated = false;  // the file is larger than max_bytes
  std::string error;       // non-empty on failure (not found, outside allowed paths, ...)
};

struct FileWriteRequest {
  std::string path;                     // absolute, or relative to the agent's cwd
  std::string data;                     // raw bytes
  const CancelToken* cancel = nullptr;  // optional; since ABI 1.1
};

struct FileWriteResult {
  std::size_t bytes_written = 0;
  std::string error;
};

}  // namespace execmcp::sdk
