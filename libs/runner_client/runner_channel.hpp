// A backend's side of the channel to execmcp-runner (its agent inside a container or a sandbox):
// one stream each way that carries every call as frames (supervision/runner_protocol.hpp), over
// Docker's multiplexed exec stream or over a child's raw pipes or socket.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "execmcp/sdk/types.hpp"
#include "runner_client/log_budget.hpp"
#include "supervision/runner_protocol.hpp"

namespace execmcp::plugins::runner_client {

// How much of one runner's stderr reaches the log. A command can write there too (through
// /proc/<runner pid>/fd/2), so it is bounded per runner process, line by line, and escaped.
inline constexpr std::size_t kRunnerLogLine = 1024;
inline constexpr std::size_t kRunnerLogLines = 256;
inline constexpr std::size_t kRunnerLogBytes = 64 * 1024;

// Takes a call's output and end as they come, on the channel's I/O thread (a background process:
// nothing is queued or kept). Calls for one call never overlap and keep the bytes' order;
// on_end() comes exactly once, last: with the runner's report, or without one (`report` null) and
// why the call was lost.
class RunnerCallObserver {
 public:
  virtual ~RunnerCallObserver() = default;
  virtual void on_pid(long pid) noexcept = 0;
  virtual void on_output(sdk::StreamKind kind, std::string_view bytes) noexcept = 0;
  virtual void on_end(const supervision::runner::DoneReport* report,
                      const std::string& lost) noexcept = 0;
};

// One call in flight on a channel. Its output arrives as the runner sends it; the call's own
// thread takes it with wait(), so one call's flood never delays another call's result.
class RunnerCall {
 public:
  struct Chunk {
    sdk::StreamKind kind;
    std::string data;
  };
  // Waits at most `wait` for output or the end; appends what came to `chunks`. Returns true once
  // the call is over: done() or lost() then says how.
  bool wait(std::chrono::milliseconds wait, std::vector<Chunk>& chunks);
  [[nodiscard]] const std::optional<supervision::runner::DoneReport>& done() const { return done_; }
  // A file call's report (RunnerChannel::start_file), once it is over.
  [[nodiscard]] const std::optional<supervision::runner::FileReport>& file_done() const {
    return file_done_;
  }
  // Why the call ended without a report (the channel broke); "" otherwise.
  [[nodiscard]] const std::string& lost() const { return lost_; }
  // True when bytes past the cap were dropped here (the runner should have capped them).
  [[nodiscard]] bool dropped(sdk::StreamKind kind) const {
    return kind == sdk::StreamKind::Stdout ? dropped_out_ : dropped_err_;
  }
  [[nodiscard]] std::uint32_t id() const { return id_; }
  // True once the runner is about to start the command: a call lost before that never ran.
  [[nodiscard]] bool started() const { return started_; }
  // Waits at most `wait` for the shell's pid (kPid); 0 when it did not come (the call ended, or
  // the runner is slow).
  long wait_pid(std::chrono::milliseconds wait);
  // Ends the call here, unless it has ended already: true when this caller ended it (its observer
  // then gets nothing more, and the caller tells it how it ended).
  bool claim_end();

 private:
  friend class RunnerChannel;
  RunnerCall(std::uint32_t id, std::size_t cap) : id_(id), cap_(cap) {}

  std::uint32_t id_;
  std::size_t cap_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Chunk> chunks_;
  std::size_t got_out_ = 0, got_err_ = 0;  // bytes received per stream, to enforce the cap
  bool dropped_out_ = false, dropped_err_ = false;
  bool over_ = false;
  std::atomic<bool> started_{false};
  std::optional<supervision::runner::DoneReport> done_;
  std::optional<supervision::runner::FileReport> file_done_;
  std::string lost_;
  long pid_ = 0;
  std::shared_ptr<RunnerCallObserver> observer_;  // null: output is queued for wait()
};

// The file descriptors a channel runs over; the channel owns (and closes) them from then on.
struct ChannelEnds {
  enum class Framing {
    // One socket both ways (the Engine API's hijacked exec stream): what comes back is Docker's
    // multiplexed stream, the runner's stdout (the frames) and its stderr (diagnostics) in one.
    kDockerMultiplexed,
    // What comes back on `read_fd` is the runner's stdout as it is (`docker exec -i`, whose CLI
    // took the multiplexing off); its stderr, if we have it, comes on `diagnostics_fd`.
    kRaw,
  };

  // The Engine API's case: the exec's socket (ExecConnection::detach) and the bytes already read
  // past its headers.
  static ChannelEnds docker_multiplexed(int socket, std::string leftover);
  // A child's pipes or socket: `read_fd` its stdout, `write_fd` its stdin (may be `read_fd`, a
  // socket), `diagnostics_fd` its stderr (-1 when not wanted).
  static ChannelEnds raw(int read_fd, int write_fd, int diagnostics_fd = -1);

  Framing framing = Framing::kDockerMultiplexed;
  // Its end is the runner's end: the channel fails and its calls are lost.
  int read_fd = -1;
  // A pipe is made non-blocking; a write that meets no reader is EPIPE, never SIGPIPE.
  int write_fd = -1;
  // kRaw only: lines logged, and quoted when no hello came. Its end is not awaited and ends
  // nothing (another process, such as an ssh master, may hold it open).
  int diagnostics_fd = -1;
  std::string leftover;  // bytes from read_fd already read by whoever opened it
  // Where the runner runs, as errors name it ("the container said: ...").
  std::string peer = "the container";
  // Whatever else the channel's life hangs on (a `docker exec -i` child): released after the
  // channel has closed its descriptors, so the child sees the end of its input first.
  std::shared_ptr<void> owner;
};

class RunnerChannel {
 public:
  using Log = std::function<void(sdk::LogLevel, const std::string&)>;

  // Takes the ends and starts the channel's I/O thread.
  RunnerChannel(ChannelEnds ends, Log log);
  // The Engine API's case (ChannelEnds::docker_multiplexed).
  RunnerChannel(int fd, std::string leftover, Log log);
  ~RunnerChannel();
  RunnerChannel(const RunnerChannel&) = delete;
  RunnerChannel& operator=(const RunnerChannel&) = delete;

  // Waits until the runner has said hello; "" or why the channel is unusable.
  std::string wait_ready(std::chrono::milliseconds timeout);
  [[nodiscard]] bool alive() const;
  // Why the channel ended ("" while it works).
  [[nodiscard]] std::string failure() const;

  // Sends one call; null (and `error`) when the channel is gone.
  // With an observer, the call's output and end go to it (see RunnerCallObserver), not to wait().
  std::shared_ptr<RunnerCall> start(const supervision::runner::RunSpec& spec,
                                    const std::string* stdin_data, std::string& error,
                                    std::shared_ptr<RunnerCallObserver> observer = nullptr);
  // Sends one file call (`input`: a write's bytes); its bytes come to wait() as stdout, at most
  // `cap` of them, and its end as file_done(). Null (and `error`) when the channel is gone.
  std::shared_ptr<RunnerCall> start_file(const supervision::runner::FileRequest& request,
                                         const std::string* input, std::size_t cap,
                                         std::string& error);
  // Asks the runner to kill the call's command: at once (grace 0), or SIGTERM to its tree and
  // SIGKILL after `grace`.
  void kill(const RunnerCall& call, std::chrono::milliseconds grace = std::chrono::milliseconds(0));
  // Ends the call's bookkeeping here (its report, if one still comes, is dropped).
  void forget(const RunnerCall& call);

 private:
  // Queues a call's first frame, its input and kStdinEnd.
  std::shared_ptr<RunnerCall> send_call(supervision::runner::FrameType type,
                                        const std::string& payload, const std::string* input,
                                        std::size_t cap, std::string& error,
                                        std::shared_ptr<RunnerCallObserver> observer);
  void io_loop();
  void on_frame(supervision::runner::Frame& frame);
  // A frame of a call with an observer: handed on, nothing kept.
  void on_observed_frame(RunnerCall& call, supervision::runner::Frame& frame);
  // What came on the runner's stdout (`frames` is the io thread's reader), then its stderr.
  void on_output(supervision::runner::FrameReader& frames, std::string_view data);
  void on_diagnostics(std::string_view data);
  // Logs the line collected so far (within the budget), and at the channel's end what was not.
  void log_diagnostic_line();
  void end_diagnostics();
  // Reads what the diagnostics fd holds now, without waiting for more.
  void drain_diagnostics();
  void fail(const std::string& why);
  void wake() noexcept;

  ChannelEnds ends_;  // ends_.leftover: bytes read before the thread started
  bool write_is_socket_ = false;
  int wake_r_ = -1, wake_w_ = -1;
  Log log_;

  mutable std::mutex mutex_;
  std::condition_variable ready_cv_;
  bool ready_ = false;
  bool closing_ = false;
  std::string failure_;
  std::string outbox_;
  std::uint32_t next_id_ = 1;
  std::map<std::uint32_t, std::shared_ptr<RunnerCall>> calls_;
  std::string stderr_line_;          // the runner's own diagnostics, logged line by line
  std::size_t stderr_line_cut_ = 0;  // bytes of this line past what is kept of it
  LogBudget stderr_budget_{kRunnerLogLines, kRunnerLogBytes, kRunnerLogLine};
  std::string before_hello_;  // what came instead of a hello (an exec error from the runtime)
  std::thread thread_;
};

}  // namespace execmcp::plugins::runner_client
