// The engine's events about one agent's container (Engine::follow_events()), followed on a thread
// of its own: a running command learns that its container died as soon as the engine says so
// (StopCheck, exec_command_path.hpp), and how (exit code, OOM, a kill through the engine), instead
// of asking the engine once a second. The stream is untrusted bytes: lines are bounded, what does
// not parse is counted and skipped; a stream that ends is opened again with a growing pause; where
// the engine will not give events (a socket proxy, Podman) the commands poll as before, and the
// log says why, once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "docker_common/engine/engine.hpp"
#include "execmcp/sdk/types.hpp"

namespace execmcp::plugins::docker_common {

// The most of one event line kept while its end has not come (Docker's are ~600 bytes, a label-
// heavy container's a few KB); a longer line is dropped and counted.
inline constexpr std::size_t kEventLineMax = 64 * 1024;

// One event of the stream, as far as the backend cares.
struct ContainerEvent {
  enum class Kind { kKill, kDie, kOom, kStop, kDestroy };
  Kind kind = Kind::kDie;
  std::optional<int> exit_code;  // a die's, when the engine gave it
  std::string name;              // the container's, when the engine gave it
};

// One line of the stream: nullopt when it is not JSON, not about a container, or an action the
// backend does not follow. Docker's shape and Podman's (see EventStream).
std::optional<ContainerEvent> parse_container_event(std::string_view line);

// Thread-safe. No call of the agent's waits for the engine here: they read what the thread took.
class ContainerEvents {
 public:
  using Clock = std::chrono::steady_clock;
  using LogFn = std::function<void(sdk::LogLevel, const std::string&)>;

  // `container`: the name the events are asked for; `log` may be empty.
  ContainerEvents(Engine& engine, std::string container, LogFn log);
  ~ContainerEvents();
  ContainerEvents(const ContainerEvents&) = delete;
  ContainerEvents& operator=(const ContainerEvents&) = delete;

  // Starts following unless it does already (also after stop()).
  void start();
  // Ends the thread and its stream; returns once it has ended (within one read's wait, plus the
  // end of a CLI child). Idempotent.
  void stop() noexcept;

  // What the thread has seen so far.
  struct Mark {
    bool live = false;         // a stream is open: a death from now on arrives as an event
    std::uint64_t epoch = 0;   // streams opened so far (one more after each reconnection)
    std::uint64_t deaths = 0;  // die, stop and destroy events taken
  };
  [[nodiscard]] Mark mark() const;
  // Waits until mark() differs from `seen` or `wait` has passed; returns mark().
  Mark wait_change(const Mark& seen, std::chrono::milliseconds wait) const;

  // The last die event taken, for the explanation of a stop.
  struct Death {
    std::uint64_t seq = 0;  // 0: none yet
    std::optional<int> exit_code;
    bool oom = false;     // an oom event came with it (before it, or just after)
    bool killed = false;  // the engine signalled the container just before (docker kill or stop)
    Clock::time_point at{};
  };
  [[nodiscard]] Death last_death() const;

  // The thread's own work, public for tests: a chunk of the stream as it came. Returns how many
  // events it took.
  std::size_t take(std::string_view chunk);

  struct Counts {
    std::uint64_t events = 0;     // events taken
    std::uint64_t malformed = 0;  // lines that were not an event of ours
    std::uint64_t others = 0;     // events of another container (the engine's filter is a prefix)
    std::uint64_t oversized = 0;  // lines longer than kEventLineMax, dropped
    std::uint64_t streams = 0;    // streams opened
    std::uint64_t failures = 0;   // opens that failed, and streams that ended
  };
  [[nodiscard]] Counts counts() const;

 private:
  void run();
  void take_line(std::string_view line);
  // Sleeps `wait` unless stop() comes first; false when it came.
  bool pause(std::chrono::milliseconds wait);
  void set_live(bool live);

  Engine& engine_;
  std::string container_;
  LogFn log_;

  std::mutex thread_mutex_;  // one start() or stop() at a time
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;

  mutable std::mutex mutex_;  // guards what follows
  mutable std::condition_variable changed_;
  std::string partial_;    // a line whose end has not come
  bool skipping_ = false;  // inside a line that grew past kEventLineMax
  Mark mark_;
  Death death_;
  Clock::time_point last_kill_{};  // the last kill event's arrival
  Clock::time_point last_oom_{};   // the last oom event's arrival
  Counts counts_;
};

}  // namespace execmcp::plugins::docker_common
