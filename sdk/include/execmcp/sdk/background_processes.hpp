// The optional backend interface "execmcp.background/1": processes that run in the background,
// beside execute(), until they exit or the host terminates them (MassGen's background shells).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "execmcp/sdk/executor_backend.hpp"
#include "execmcp/sdk/types.hpp"

namespace execmcp::sdk {

// The id a backend answers in ExecutorBackend::query_interface() with a BackgroundProcesses*.
inline constexpr std::string_view kBackgroundProcessesId = "execmcp.background/1";

struct BackgroundRequest {
  std::string command;
  // As ExecRequest::work_dir: empty = the agent's cwd, relative = against it; must resolve inside a
  // path grant, or start_background() refuses.
  std::string work_dir;
  std::vector<std::pair<std::string, std::string>> env;  // extra environment for this process
};

struct BackgroundStarted {
  std::string error;     // non-empty: nothing was started and no observer call will come
  std::uint64_t id = 0;  // the backend's handle for terminate_background(); never 0 when started
  long pid = 0;          // the shell's pid as the backend sees it (in the container), 0 if unknown
  std::string work_dir;  // the directory it runs in, as the backend resolved it
};

struct BackgroundExit {
  int exit_code = -1;   // the exit status when it exited normally, else -1
  int signal = 0;       // the signal that ended it, 0 when it exited normally
  bool killed = false;  // ended by terminate_background() (or by stop()/cleanup())
  // Non-empty when the backend lost the process (container gone, in-container agent ended); the
  // process is dead then too.
  std::string error;
};

// Implemented by the host. Calls come on backend threads: on_output() calls for one process never
// overlap and keep the order of the bytes per stream; on_exit() comes exactly once per started
// process, after its last on_output(). The observer outlives that on_exit() call.
class BackgroundObserver {
 public:
  virtual void on_output(StreamKind stream, std::string_view bytes) noexcept = 0;
  virtual void on_exit(const BackgroundExit& exit) noexcept = 0;

 protected:
  ~BackgroundObserver() = default;
};

// Offered by a backend through query_interface(kBackgroundProcessesId). Owned by the backend
// object. Thread-safe, never throws. The backend keeps no output: every byte goes to the observer
// as it arrives (bounding memory is the host's job). stdin is empty (/dev/null). No timeout.
// stop() and cleanup() of the backend end every background process (whole tree, at once) and
// deliver each on_exit() before they return; start() again does not revive them.
class BackgroundProcesses {
 public:
  // Starts `<shell> -c command` and returns once it runs (or failed to).
  virtual BackgroundStarted start_background(const BackgroundRequest& request,
                                             BackgroundObserver* observer) noexcept = 0;
  // Ends the process and every process it started (setsid escapees included): SIGTERM to all,
  // up to `grace` for them to exit, then SIGKILL to what is left. Returns after its on_exit()
  // returned. An unknown or finished id returns at once.
  virtual void terminate_background(std::uint64_t id, std::chrono::milliseconds grace) noexcept = 0;

 protected:
  ~BackgroundProcesses() = default;
};

// The backend's BackgroundProcesses, or null when it does not offer them.
inline BackgroundProcesses* background_processes(ExecutorBackend& backend) noexcept {
  return static_cast<BackgroundProcesses*>(backend.query_interface(kBackgroundProcessesId));
}

}  // namespace execmcp::sdk
