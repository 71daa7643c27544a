// The client side of process supervision: hands each command to a spare-pool program
// (spare_pool.cpp) and collects its output and exit status. The local backend runs it in the host;
// execmcp-runner runs it inside a container.
//
// Pipes: stdout and stderr of the shell go straight to the host thread; a control pipe (host ->
// supervisor) carries "kill now" and its EOF means the host died; a status pipe (supervisor ->
// host) carries the spare's and the shell's pids and, once the tree is gone, the shell's wait
// status, and then hangs up. The host waits for that hang-up only (it ends a command, whether the
// supervisor reported or died), then drains what the output pipes still hold and is done: one
// wake-up per command (and one every 50 ms, for the cancel token and timers). Each of those wakes
// sends SIGCONT to the spare (through a pidfd) and, until a spare took the command, to the
// program: a command can stop either, and a stopped one would hold its report until the timeout.
// A kill request unanswered for kKillGrace makes the host kill the spare and the group. A graceful
// end (RunControl::term_grace) sends the spare "terminate" first and "kill" when the grace is over,
// unless the command was gone by then. The command's strings travel in the message itself, or in a
// memfd when they are long.
#include "supervisor_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "command_output.hpp"
#include "supervisor_protocol.hpp"

namespace execmcp::plugins::supervision {

namespace {

namespace proto = protocol;

// How long a kill request may go unanswered before the host kills the spare itself.
constexpr auto kKillGrace = std::chrono::seconds(15);

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  [[nodiscard]] int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// pipe2 with close-on-exec, so concurrent spawns from other threads never inherit our ends.
bool make_pipe(Fd& read_end, Fd& write_end, std::string& error) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    error = std::string("pipe failed: ") + std::strerror(errno);
    return false;
  }
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  return true;
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// The spec of supervisor_protocol.hpp, after the message byte.
std::string encode_spec(const SpawnSpec& spec) {
  std::string data;
  std::size_t size = 1 + spec.work_dir.size() + spec.shell.size() + spec.command.size() + 3;
  for (const auto& e : spec.env) size += e.size() + 1;
  data.reserve(size);
  data.push_back(proto::kMessageByte);
  for (const std::string* s : {&spec.work_dir, &spec.shell, &spec.command}) {
    data.append(*s);
    data.push_back('\0');
  }
  for (const auto& e : spec.env) {
    data.append(e);
    data.push_back('\0');
  }
  return data;
}

// A spec too long for the message goes in a memfd.
std::string write_spec_file(std::string_view spec, Fd& out) {
  out.reset(::memfd_create("execmcp-command", MFD_CLOEXEC));
  if (out.get() < 0 || !write_all(out.get(), spec.data(), spec.size()))
    return std::string("cannot pass the command to its supervisor: ") + std::strerror(errno);
  return {};
}

}  // namespace

std::string SupervisorProgram::check() const {
  if (::access(path_.c_str(), X_OK) == 0) return {};
  return "the local backend's supervisor program '" + path_ + "' is missing or not executable (" +
         std::strerror(errno) + "); it is built and installed with the local plugin, in the " +
         "directory above the plugin's";
}

std::string SupervisorProgram::start_locked() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return std::string("cannot create the supervisor socket: ") + std::strerror(errno);
  Fd mine(sv[0]);
  Fd theirs(sv[1]);
  // dup2 onto itself would keep close-on-exec, and 0-2 are replaced first: keep clear of both.
  if (theirs.get() <= proto::kSocketFd) theirs.reset(::fcntl(theirs.get(), F_DUPFD_CLOEXEC, 4));
  if (theirs.get() < 0)
    return std::string("cannot create the supervisor socket: ") + std::strerror(errno);

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  // Standard fds on /dev/null: the host's may be the MCP client's pipes.
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDWR, 0);
  posix_spawn_file_actions_adddup2(&actions, 0, 1);
  posix_spawn_file_actions_adddup2(&actions, 0, 2);
  posix_spawn_file_actions_adddup2(&actions, theirs.get(), proto::kSocketFd);
  sigset_t signals;
  sigemptyset(&signals);
  posix_spawnattr_setsigmask(&attr, &signals);
  sigfillset(&signals);
  posix_spawnattr_setsigdefault(&attr, &signals);
  // Own session: Ctrl-C on the host's terminal goes to the host, which shuts down in order.
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  char* argv[] = {const_cast<char*>(path_.c_str()), const_cast<char*>(proto::kProtocolArg),
                  nullptr};
  char* envp[] = {nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, path_.c_str(), &actions, &attr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    return "cannot start the local backend's supervisor program '" + path_ +
           "': " + std::strerror(rc);
  pid_ = pid;
  socket_ = mine.release();
  return {};
}

void SupervisorProgram::stop_locked() noexcept {
  if (socket_ >= 0) ::close(socket_);
  socket_ = -1;
  if (pid_ > 0) {
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
}

std::string SupervisorProgram::submit(std::string_view data, const int* fds, int fd_count) {
  iovec iov{const_cast<char*>(data.data()), data.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * proto::kFdCountWithSpec)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(sizeof(int) * static_cast<std::size_t>(fd_count));
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * static_cast<std::size_t>(fd_count));
  std::memcpy(CMSG_DATA(c), fds, sizeof(int) * static_cast<std::size_t>(fd_count));

  std::lock_guard lock(mutex_);
  if (pid_ > 0) {
    // Killed (by a command, say): its spares that run commands outlive it and keep the socket
    // open, so a send would still succeed, into a queue no spare is left to take. A new program
    // takes this command; the old socket's close lets those spares exit once their commands end.
    pid_t reaped;
    while ((reaped = ::waitpid(pid_, nullptr, WNOHANG)) < 0 && errno == EINTR) {
    }
    if (reaped == pid_ || (reaped < 0 && errno == ECHILD)) {
      pid_ = -1;
      stop_locked();
    }
  }
  // A second attempt only after a restart: the program may have died since the last command.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (socket_ < 0) {
      if (auto error = start_locked(); !error.empty()) return error;
    }
    ssize_t n;
    while ((n = ::sendmsg(socket_, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
    }
    if (n == static_cast<ssize_t>(data.size())) return {};
    const int error = errno;
    stop_locked();
    if (error != EPIPE && error != ECONNRESET && error != ENOTCONN)
      return std::string("cannot hand the command to its supervisor: ") + std::strerror(error);
  }
  return "the local backend's supervisor program '" + path_ + "' exits at once; is it from " +
         "another build than the plugin?";
}

void SupervisorProgram::wake() noexcept {
  std::lock_guard lock(mutex_);
  if (pid_ > 0) ::kill(pid_, SIGCONT);  // our child, not yet reaped: the pid is still ours
}

void SupervisorProgram::shut_down() noexcept {
  std::lock_guard lock(mutex_);
  stop_locked();
}

namespace {

using Clock = std::chrono::steady_clock;

// One command handed to the supervisor and followed to its end: its pipes, its output and input,
// the supervisor's report, and the kill (graceful, then forced, then the spare itself).
// run_supervised() is this class's whole life; each method is one step of its loop.
class SupervisedCall {
 public:
  SupervisedCall(SupervisorProgram& supervisor, const SpawnSpec& spec, const RunControl& control)
      : supervisor_(supervisor),
        spec_(spec),
        control_(control),
        out_{OutputCapture::of_stdout(result_, control.output_cap, control.sink)},
        err_{OutputCapture::of_stderr(result_, control.output_cap, control.sink)},
        start_pending_(static_cast<bool>(control.on_started)),
        has_deadline_(control.timeout.count() > 0),
        deadline_(started_ + control.timeout),
        buf_(std::make_unique_for_overwrite<char[]>(kReadBuffer)) {}

  sdk::ExecResult run(int* wait_status_out) {
    if (wait_status_out != nullptr) *wait_status_out = -1;
    if (!submit()) return finish();
    prepare_streams();
    follow();
    const int wait_status = status_int(2);
    if (wait_status_out != nullptr) *wait_status_out = wait_status;
    return report(wait_status);
  }

 private:
  // A stream is open until its pipe's EOF; what it carries goes to its capture.
  struct Stream {
    OutputCapture capture;
    bool open = true;
  };
  // Not a std::vector: zero-filling 64 KiB cost more than reading a short command's output.
  static constexpr std::size_t kReadBuffer = 64 * 1024;

  sdk::ExecResult finish() {
    result_.duration_seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    return std::move(result_);
  }

  // Makes the pipes and hands the command and their ends to the supervisor; false with the error.
  bool submit() {
    Fd out_w, err_w, ctrl_r, status_w, in_r;
    if (!make_pipe(out_r_, out_w, result_.error) || !make_pipe(err_r_, err_w, result_.error) ||
        !make_pipe(ctrl_r, ctrl_w_, result_.error) ||
        !make_pipe(status_r_, status_w, result_.error))
      return false;
    if (spec_.stdin_data != nullptr) {
      if (!make_pipe(in_r, in_w_, result_.error)) return false;
    } else {
      in_r.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      if (in_r.get() < 0) {
        result_.error = std::string("cannot open /dev/null: ") + std::strerror(errno);
        return false;
      }
    }
    int fds[proto::kFdCountWithSpec];
    fds[proto::kStdout] = out_w.get();
    fds[proto::kStderr] = err_w.get();
    fds[proto::kControl] = ctrl_r.get();
    fds[proto::kStatus] = status_w.get();
    fds[proto::kWorkDir] = spec_.work_dir_fd;
    fds[proto::kStdin] = in_r.get();
    int fd_count = proto::kFdCount;
    std::string message = encode_spec(spec_);
    Fd spec_fd;
    if (message.size() - 1 > proto::kInlineSpecMax) {
      if (auto error = write_spec_file(std::string_view(message).substr(1), spec_fd);
          !error.empty()) {
        result_.error = error;
        return false;
      }
      message.resize(1);
      fds[proto::kSpec] = spec_fd.get();
      fd_count = proto::kFdCountWithSpec;
    }
    if (auto error = supervisor_.submit(message, fds, fd_count); !error.empty()) {
      result_.error = error;
      return false;
    }
    // Only the supervisor holds the other ends now (they close here), so the pipes reach EOF
    // when the command's tree ends.
    return true;
  }

  void prepare_streams() {
    set_nonblocking(out_r_.get());
    set_nonblocking(err_r_.get());
    set_nonblocking(status_r_.get());
    if (!control_.retain_output) {
      out_.capture.stream_only();
      err_.capture.stream_only();
    }
    // Standard input, fed in turns with reading the output: a command that stops reading must
    // not block us.
    if (spec_.stdin_data != nullptr) {
      stdin_left_ = *spec_.stdin_data;
      if (stdin_left_.empty())
        in_w_.reset();
      else
        set_nonblocking(in_w_.get());
    }
  }

  void feed_stdin() {
    while (in_w_.get() >= 0 && !stdin_left_.empty()) {
      const ssize_t n = ::write(in_w_.get(), stdin_left_.data(), stdin_left_.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n <= 0) {  // EPIPE: the command closed its input; the rest is dropped
        in_w_.reset();
        return;
      }
      stdin_left_.remove_prefix(static_cast<std::size_t>(n));
    }
    in_w_.reset();  // all written: the command sees end of input
  }

  // The status message of supervisor_protocol.hpp: spare pid, shell pid, wait status.
  [[nodiscard]] int status_int(int index) const {
    int value = -1;
    if (status_len_ >= (static_cast<std::size_t>(index) + 1) * sizeof(int))
      std::memcpy(&value, status_buf_ + index * sizeof(int), sizeof(int));
    return value;
  }
  // Reads what the supervisor has written so far, without waiting.
  void read_status() {
    while (status_len_ < sizeof(status_buf_)) {
      const ssize_t got =
          ::read(status_r_.get(), status_buf_ + status_len_, sizeof(status_buf_) - status_len_);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return;  // EOF, or EAGAIN: nothing more yet
      status_len_ += static_cast<std::size_t>(got);
    }
  }
  // Until on_started() was called: the status pipe is read as soon as it has data (not only at
  // its hang-up) and the output pipes not at all, so no output reaches the sink before it.
  void announce_start() {
    if (!start_pending_ || status_len_ < 2 * sizeof(int)) return;
    start_pending_ = false;
    if (status_int(1) > 0) control_.on_started(status_int(1));
  }

  void send_control(char byte) {
    while (::write(ctrl_w_.get(), &byte, 1) < 0 && errno == EINTR) {
    }
    supervisor_.wake();
  }
  void send_kill() {
    send_control(proto::kControlKill);
    kill_sent_ = true;
    kill_sent_at_ = Clock::now();
  }

  // The spare that runs the command, as a pidfd so a signal can never reach a process that
  // reused its pid. A command can stop the spare (kill -STOP $PPID) or the program that forks
  // spares; both are sent SIGCONT on every wake, so a stopped one cannot hold the command's
  // report (or the start of a queued command) until the timeout.
  void wake_supervisors() {
    read_status();
    if (spare_.get() < 0 && status_int(0) > 0) {
      spare_.reset(static_cast<int>(::syscall(SYS_pidfd_open, status_int(0), 0)));
      // Opened while the spare still held the status pipe, so while that pid was the spare's.
      pollfd hup{status_r_.get(), 0, 0};
      if (spare_.get() >= 0 && ::poll(&hup, 1, 0) != 0) spare_.reset();
    }
    if (spare_.get() >= 0) ::syscall(SYS_pidfd_send_signal, spare_.get(), SIGCONT, nullptr, 0);
    if (status_int(0) <= 0) supervisor_.wake();  // not taken yet: the program may be stopped
  }

  // A cancel, a stop or the timeout starts the end: gracefully (RunControl::term_grace) or at
  // once (a timeout kills at once, as before).
  void start_kill_when_asked() {
    if (kill_sent_ || term_sent_) return;
    const KillCause cause = kill_cause(
        control_.cancel, control_.stop != nullptr && control_.stop->load(std::memory_order_acquire),
        has_deadline_ ? std::optional(deadline_) : std::nullopt);
    record_kill(result_, cause);
    if (cause == KillCause::None) return;
    in_w_.reset();
    const auto grace = control_.term_grace;  // read only now: see RunControl::term_grace
    if (grace.count() > 0 && cause != KillCause::TimedOut) {
      send_control(proto::kControlTerminate);
      term_sent_ = true;
      term_cause_ = cause;
      term_deadline_ = Clock::now() + grace;
    } else {
      send_kill();
    }
  }

  // The grace ran out (or the backend stops), a kill went unanswered: each step goes further.
  // False when nothing more can be done from here and the call is given back.
  bool escalate_kill() {
    const bool stopped_since = term_sent_ && term_cause_ == KillCause::Cancelled &&
                               control_.stop != nullptr &&
                               control_.stop->load(std::memory_order_acquire);
    if (term_sent_ && !kill_sent_ && status_open_ &&
        (Clock::now() >= term_deadline_ || stopped_since))
      send_kill();  // whatever is left is killed
    if (status_open_) wake_supervisors();
    if (status_open_) announce_start();
    if (kill_sent_ && status_open_ && Clock::now() - kill_sent_at_ > 2 * kKillGrace) {
      // No pid to act on, or one that ignores SIGKILL in the kernel.
      result_.error = "the command's supervising process (" + supervisor_.path() +
                      ") did not answer the kill request; see the server log";
      return false;
    }
    if (kill_sent_ && !spare_killed_ && status_open_ && Clock::now() - kill_sent_at_ > kKillGrace) {
      // Still no report (its own kill takes at most ~10 s): end it and the shell's group here.
      if (spare_.get() >= 0) ::syscall(SYS_pidfd_send_signal, spare_.get(), SIGKILL, nullptr, 0);
      if (status_int(1) > 0) ::kill(-status_int(1), SIGKILL);
      result_.notices.push_back(
          "the command's supervising process did not answer the kill "
          "request and was killed");
      spare_killed_ = true;
    }
    return true;
  }

  // At least every 50 ms, to look at the cancel token and the stop flag; sooner while a kill
  // request waits for the spare's pid, or a deadline comes.
  [[nodiscard]] int wait_ms() const {
    int wait = kill_sent_ && spare_.get() < 0 ? 5 : 50;
    auto at_most = [&](Clock::time_point until) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
      if (left < wait) wait = left < 0 ? 0 : static_cast<int>(left);
    };
    if (!kill_sent_ && !term_sent_ && has_deadline_) at_most(deadline_);
    if (term_sent_ && !kill_sent_) at_most(term_deadline_);
    return wait;
  }

  // A bounded number of reads per wake keeps the other stream and the timers served.
  void drain_now(int fd, Stream& stream) {
    for (int i = 0; stream.open && i < 16; ++i) {
      const ssize_t got = ::read(fd, buf_.get(), kReadBuffer);
      if (got > 0) {
        stream.capture.append(std::string_view(buf_.get(), static_cast<std::size_t>(got)));
        continue;
      }
      if (got < 0 && (errno == EINTR)) continue;
      if (got == 0 || errno != EAGAIN) stream.open = false;
      return;
    }
  }

  // One wait for the pipes; false once the command is over (or the wait failed).
  bool poll_once() {
    pollfd pfds[4];
    int n = 0;
    int out_idx = -1, err_idx = -1, status_idx = -1, in_idx = -1;
    if (in_w_.get() >= 0) in_idx = n, pfds[n++] = {in_w_.get(), POLLOUT, 0};
    if (out_.open && !start_pending_) out_idx = n, pfds[n++] = {out_r_.get(), POLLIN, 0};
    if (err_.open && !start_pending_) err_idx = n, pfds[n++] = {err_r_.get(), POLLIN, 0};
    // Events 0: only the hang-up wakes us (the pid written early does not), unless the shell's
    // pid is awaited for on_started().
    const short status_events = start_pending_ ? POLLIN : 0;
    if (status_open_) status_idx = n, pfds[n++] = {status_r_.get(), status_events, 0};
    const int ready = ::poll(pfds, static_cast<nfds_t>(n), wait_ms());
    if (ready < 0) {
      if (errno == EINTR) return true;
      result_.error = std::string("poll failed: ") + std::strerror(errno);
      return false;
    }
    if (in_idx >= 0 && pfds[in_idx].revents != 0) feed_stdin();
    if (out_idx >= 0 && pfds[out_idx].revents != 0) drain_now(out_r_.get(), out_);
    if (err_idx >= 0 && pfds[err_idx].revents != 0) drain_now(err_r_.get(), err_);
    if (status_idx >= 0 && pfds[status_idx].revents == POLLIN) {
      read_status();  // only the pids so far (start_pending_)
      announce_start();
    } else if (status_idx >= 0 && pfds[status_idx].revents != 0) {
      // The supervisor is done with the command (or dead): read everything it wrote.
      read_status();
      announce_start();
      start_pending_ = false;
      status_open_ = false;
      if (status_len_ == sizeof(status_buf_)) {
        // The whole report: the tree is gone, so what the pipes hold is all there will be.
        drain_now(out_r_.get(), out_);
        drain_now(err_r_.get(), err_);
        return false;
      }
    }
    return true;
  }

  // Until the report, the end of every stream, or a give-up. Once the supervisor is gone the tree
  // is dead, so the pipes reach EOF at once; if a process escaped anyway (the supervisor gave up
  // on it), stop waiting for it after a grace period.
  void follow() {
    std::optional<Clock::time_point> pipes_deadline;
    while (out_.open || err_.open || status_open_) {
      if (!status_open_ && !pipes_deadline) pipes_deadline = Clock::now() + std::chrono::seconds(2);
      if (pipes_deadline && Clock::now() >= *pipes_deadline) {
        result_.notices.push_back("a process of the command kept its output open after it ended");
        return;
      }
      start_kill_when_asked();
      if (!escalate_kill() || !poll_once()) return;
    }
  }

  sdk::ExecResult report(int wait_status) {
    ctrl_w_.reset();
    in_w_.reset();
    if (status_len_ < sizeof(status_buf_)) {
      // The supervisor died before reporting (killed from outside): take the group down here.
      if (status_int(1) > 0) ::kill(-status_int(1), SIGKILL);
      if (result_.error.empty())
        result_.error = "the command's supervisor process (" + supervisor_.path() +
                        ") ended without reporting; see the server log";
      return finish();
    }
    result_.exit_code = wait_status == -1 ? -1 : exit_code_from_status(wait_status);
    // A command that ended by itself (before the kill landed, or while its spare was stopped) is
    // reported as it ended. Asked to end gracefully, it ends as it chooses (its trap may exit 0):
    // still our doing.
    if (!term_sent_) settle_kill_flags(result_, wait_status);
    // Only a command that claims success while its input was cut short is an error; one that
    // failed says why on its stderr.
    if (!stdin_left_.empty() && result_.exit_code == 0 && !result_.timed_out && !result_.cancelled)
      result_.error = stdin_shortfall_error(stdin_left_.size());
    return finish();
  }

  SupervisorProgram& supervisor_;
  const SpawnSpec& spec_;
  const RunControl& control_;
  const Clock::time_point started_ = Clock::now();
  sdk::ExecResult result_;
  Fd out_r_, err_r_, ctrl_w_, status_r_, in_w_;
  Stream out_, err_;
  std::string_view stdin_left_;
  bool status_open_ = true;
  char status_buf_[3 * sizeof(int)] = {};
  std::size_t status_len_ = 0;
  bool start_pending_;
  bool term_sent_ = false;
  KillCause term_cause_ = KillCause::None;
  Clock::time_point term_deadline_;
  bool kill_sent_ = false;
  bool spare_killed_ = false;  // the kill request went unanswered for kKillGrace
  Clock::time_point kill_sent_at_;
  const bool has_deadline_;
  const Clock::time_point deadline_;
  const std::unique_ptr<char[]> buf_;
  Fd spare_;
};

}  // namespace

sdk::ExecResult run_supervised(SupervisorProgram& supervisor, const SpawnSpec& spec,
                               const RunControl& control, int* wait_status_out) {
  return SupervisedCall(supervisor, spec, control).run(wait_status_out);
}

}  // namespace execmcp::plugins::supervision
