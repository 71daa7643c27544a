// Runs one shell command under a per-command supervisor process that can kill its whole tree.
//
// Why not Boost.Process: the contract needs a process between us and the shell that (1) is a
// child subreaper, so every orphaned descendant, including one that called setsid() to leave the
// shell's process group, re-parents to it and can be found and killed, and (2) runs only
// async-signal-safe code, because the host is multithreaded and the supervisor never calls exec.
// Boost.Process v1 spawns the child directly and runs arbitrary code after fork, so we fork
// ourselves. We chose the subreaper over a cgroup v2 per command because it needs no privileges
// and no delegated cgroup tree.
//
//   host thread ──fork──▶ supervisor (setsid, PR_SET_CHILD_SUBREAPER) ──fork+exec──▶ shell (own
//   process group, stdin /dev/null)
//
// Pipes: stdout and stderr of the shell go straight to the host thread; a control pipe (host ->
// supervisor) carries "kill now" and its EOF means the host died; a status pipe (supervisor ->
// host) carries the shell's pid and then its wait status, and its EOF means the tree is gone.
#include "process_supervisor.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>

namespace execmcp::plugins::local {

namespace {

// ---- Supervisor side: async-signal-safe code only (no malloc, no locks, no exceptions). ----

void write_all(int fd, const void* data, std::size_t size) noexcept {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void write_str(int fd, const char* s) noexcept {
  write_all(fd, s, std::strlen(s));
}

// Parses a decimal pid; returns -1 when `s` is not one.
long parse_pid(const char* s) noexcept {
  if (*s == '\0') return -1;
  long v = 0;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9') return -1;
    v = v * 10 + (*s - '0');
    if (v > 0x7fffffff) return -1;
  }
  return v;
}

// The ppid field of /proc/<pid>/stat, or -1. The comm field may contain spaces and ')', so the
// fields after it are found from the last ')'.
long read_ppid(const char* pid_name) noexcept {
  char path[64] = "/proc/";
  std::size_t len = std::strlen(path);
  for (const char* s = pid_name; *s != '\0' && len < sizeof(path) - 6; ++s) path[len++] = *s;
  std::memcpy(path + len, "/stat", 6);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char* close_paren = std::strrchr(buf, ')');
  if (close_paren == nullptr || close_paren[1] == '\0' || close_paren[2] == '\0') return -1;
  char* p = close_paren + 2;  // state
  while (*p != '\0' && *p != ' ') ++p;
  if (*p != ' ') return -1;
  ++p;
  long v = 0;
  bool any = false;
  for (; *p >= '0' && *p <= '9'; ++p, any = true) v = v * 10 + (*p - '0');
  return any ? v : -1;
}

// Calls fn(name) for every entry of the directory open at `dir_fd`.
template <class Fn>
void for_each_dirent(int dir_fd, Fn fn) noexcept {
  alignas(8) char buf[4096];
  for (;;) {
    ssize_t n = ::getdents64(dir_fd, buf, sizeof(buf));
    if (n <= 0) return;
    for (ssize_t off = 0; off < n;) {
      auto* entry = reinterpret_cast<struct dirent64*>(buf + off);
      fn(entry->d_name);
      off += entry->d_reclen;
    }
  }
}

// SIGKILLs every process whose parent is `self` (our children, including re-parented orphans).
void kill_children(pid_t self) noexcept {
  int proc = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return;
  for_each_dirent(proc, [self](const char* name) {
    long pid = parse_pid(name);
    if (pid <= 0) return;
    if (read_ppid(name) == self) ::kill(static_cast<pid_t>(pid), SIGKILL);
  });
  ::close(proc);
}

struct ReapState {
  pid_t shell = -1;
  int shell_status = 0;
  bool shell_reaped = false;
};

// Reaps every exited child; returns true when no child is left at all.
bool reap_all(ReapState& state) noexcept {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      if (pid == state.shell) {
        state.shell_status = status;
        state.shell_reaped = true;
      }
      continue;
    }
    if (pid < 0 && errno == EINTR) continue;
    return pid < 0;  // ECHILD: nothing left
  }
}

// Kills the shell's process group and then, pass after pass, every remaining descendant (each
// orphan re-parents to us, the subreaper) until we have no child left. Bounded so a process stuck
// in the kernel cannot hang the supervisor forever.
void kill_tree(ReapState& state) noexcept {
  ::kill(-state.shell, SIGKILL);
  const timespec pause{0, 2 * 1000 * 1000};
  for (int pass = 0; pass < 5000; ++pass) {
    if (reap_all(state)) return;
    kill_children(::getpid());
    if (reap_all(state)) return;
    ::nanosleep(&pause, nullptr);
  }
}

// Closes every descriptor except 0-2 and those in keep[0..n). The supervisor never execs, so
// without this it would hold other commands' pipes (opened by other host threads) open.
void close_fds_except(const int* keep, int n) noexcept {
  int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return;
  // Collect first: closing while iterating the directory would disturb the iteration.
  int to_close[1024];
  bool more = true;
  while (more) {
    int count = 0;
    more = false;
    ::lseek(dir, 0, SEEK_SET);
    for_each_dirent(dir, [&](const char* name) {
      long fd = parse_pid(name);
      if (fd < 3 || fd == dir) return;
      for (int i = 0; i < n; ++i)
        if (keep[i] == fd) return;
      if (count < 1024)
        to_close[count++] = static_cast<int>(fd);
      else
        more = true;
    });
    for (int i = 0; i < count; ++i) ::close(to_close[i]);
  }
  ::close(dir);
}

void empty_handler(int) {}

struct ChildArgs {
  const char* shell;
  char* const* argv;
  char* const* envp;
  const char* work_dir;
  int devnull;
  int out_w;
  int err_w;
  int ctrl_r;
  int status_w;
};

[[noreturn]] void exec_shell(const ChildArgs& a) noexcept {
  // Signal dispositions set to SIG_IGN survive exec (the host ignores SIGPIPE): restore defaults.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::setpgid(0, 0);
  ::dup2(a.devnull, 0);
  ::dup2(a.out_w, 1);
  ::dup2(a.err_w, 2);
  // The originals are close-on-exec; 0-2 are fresh dups without the flag.
  if (::chdir(a.work_dir) != 0) {
    write_str(2, "execmcp: cannot enter work_dir: ");
    write_str(2, std::strerror(errno));
    write_str(2, "\n");
    ::_exit(126);
  }
  ::execve(a.shell, a.argv, a.envp);
  write_str(2, "execmcp: cannot run shell ");
  write_str(2, a.shell);
  write_str(2, ": ");
  write_str(2, std::strerror(errno));
  write_str(2, "\n");
  ::_exit(127);
}

[[noreturn]] void supervisor_main(const ChildArgs& a) noexcept {
  // Block everything first so no handler inherited from the host runs in this copy of it.
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  struct sigaction act {};
  act.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &act, nullptr);
  act.sa_handler = SIG_IGN;  // a write to the status pipe of a dead host must not kill us
  ::sigaction(SIGPIPE, &act, nullptr);
  act.sa_handler = empty_handler;  // only so SIGCHLD interrupts ppoll()
  ::sigaction(SIGCHLD, &act, nullptr);

  ::setsid();  // out of the host's terminal signals (Ctrl-C goes to the host, which cleans up)
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    write_str(a.err_w, "execmcp: cannot become a child subreaper\n");
    ::_exit(125);
  }
  const int keep[] = {a.devnull, a.out_w, a.err_w, a.ctrl_r, a.status_w};
  close_fds_except(keep, 5);
  // Our own 0-2 may be the host's MCP pipes: do not keep them open.
  ::dup2(a.devnull, 0);
  ::dup2(a.devnull, 1);
  ::dup2(a.devnull, 2);

  ReapState state;
  state.shell = ::fork();
  if (state.shell < 0) {
    write_str(a.err_w, "execmcp: fork failed: ");
    write_str(a.err_w, std::strerror(errno));
    write_str(a.err_w, "\n");
    ::_exit(125);
  }
  if (state.shell == 0) exec_shell(a);
  ::setpgid(state.shell, state.shell);  // also done by the child; whichever runs first wins
  ::close(a.out_w);
  ::close(a.err_w);
  ::close(a.devnull);
  const int pid_msg = state.shell;
  write_all(a.status_w, &pid_msg, sizeof(pid_msg));

  sigset_t wait_mask;
  sigfillset(&wait_mask);
  sigdelset(&wait_mask, SIGCHLD);
  for (;;) {
    reap_all(state);
    if (state.shell_reaped) break;
    pollfd pfd{a.ctrl_r, POLLIN, 0};
    int r = ::ppoll(&pfd, 1, nullptr, &wait_mask);
    if (r > 0) break;  // "kill" byte, or EOF because the host is gone: either way, kill
  }
  // Normal exit or kill: nothing of the command may outlive the call.
  kill_tree(state);
  const int status_msg = state.shell_reaped ? state.shell_status : -1;
  write_all(a.status_w, &status_msg, sizeof(status_msg));
  ::_exit(0);
}

// ---- Host side. ----

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

 private:
  int fd_ = -1;
};

// pipe2 with close-on-exec (so concurrent spawns from other threads never inherit our ends),
// with both ends moved above 2 in case the host closed its standard descriptors.
bool make_pipe(Fd& read_end, Fd& write_end, std::string& error) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    error = std::string("pipe failed: ") + std::strerror(errno);
    return false;
  }
  for (int& fd : fds) {
    if (fd < 3) {
      int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
      ::close(fd);
      fd = moved;
    }
  }
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  if (fds[0] < 0 || fds[1] < 0) {
    error = std::string("pipe failed: ") + std::strerror(errno);
    return false;
  }
  return true;
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

int exit_code_from_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Keeps at most `cap` bytes of a stream, streams the kept part to the sink, and drops the rest.
struct StreamCapture {
  std::string* data;
  bool* truncated;
  sdk::StreamKind kind;
  bool open = true;

  void append(const char* bytes, std::size_t n, std::size_t cap, sdk::OutputSink* sink) {
    std::size_t room = data->size() < cap ? cap - data->size() : 0;
    std::size_t keep = n < room ? n : room;
    if (keep > 0) {
      data->append(bytes, keep);
      if (sink != nullptr) sink->on_output(kind, std::string_view(bytes, keep));
    }
    if (keep < n) *truncated = true;
  }
};

}  // namespace

sdk::ExecResult run_supervised(const SpawnSpec& spec, const RunControl& control) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  sdk::ExecResult result;
  auto finish = [&]() -> sdk::ExecResult {
    result.duration_seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return std::move(result);
  };

  // Everything the children need is prepared here: after fork they may not allocate.
  std::vector<char*> argv{const_cast<char*>(spec.shell.c_str()), const_cast<char*>("-c"),
                          const_cast<char*>(spec.command.c_str()), nullptr};
  std::vector<char*> envp;
  envp.reserve(spec.env.size() + 1);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  Fd out_r, out_w, err_r, err_w, ctrl_r, ctrl_w, status_r, status_w;
  if (!make_pipe(out_r, out_w, result.error) || !make_pipe(err_r, err_w, result.error) ||
      !make_pipe(ctrl_r, ctrl_w, result.error) || !make_pipe(status_r, status_w, result.error))
    return finish();
  Fd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (devnull.get() < 3) {
    if (devnull.get() >= 0) devnull.reset(::fcntl(devnull.get(), F_DUPFD_CLOEXEC, 3));
    if (devnull.get() < 0) {
      result.error = std::string("cannot open /dev/null: ") + std::strerror(errno);
      return finish();
    }
  }

  ChildArgs args{spec.shell.c_str(),    argv.data(),   envp.data(),
                 spec.work_dir.c_str(), devnull.get(), out_w.get(),
                 err_w.get(),           ctrl_r.get(),  status_w.get()};
  pid_t supervisor = ::fork();
  if (supervisor < 0) {
    result.error = std::string("fork failed: ") + std::strerror(errno);
    return finish();
  }
  if (supervisor == 0) supervisor_main(args);

  out_w.reset();
  err_w.reset();
  ctrl_r.reset();
  status_w.reset();
  devnull.reset();
  set_nonblocking(out_r.get());
  set_nonblocking(err_r.get());
  set_nonblocking(status_r.get());

  StreamCapture out{&result.stdout_data, &result.stdout_truncated, sdk::StreamKind::Stdout};
  StreamCapture err{&result.stderr_data, &result.stderr_truncated, sdk::StreamKind::Stderr};
  bool status_open = true;
  char status_buf[8];
  std::size_t status_len = 0;
  bool kill_sent = false;
  const bool has_deadline = control.timeout.count() > 0;
  const auto deadline = started + control.timeout;
  std::vector<char> buf(64 * 1024);

  // Once the supervisor is gone the tree is dead, so the pipes reach EOF at once; if a process
  // escaped anyway (the supervisor gave up on it), stop waiting for it after a grace period.
  std::optional<Clock::time_point> pipes_deadline;
  while (out.open || err.open || status_open) {
    if (!status_open && !pipes_deadline) pipes_deadline = Clock::now() + std::chrono::seconds(2);
    if (pipes_deadline && Clock::now() >= *pipes_deadline) {
      result.notices.push_back("a process of the command kept its output open after it ended");
      break;
    }
    if (!kill_sent) {
      bool kill = false;
      if (control.cancel != nullptr && control.cancel->cancel_requested()) {
        result.cancelled = kill = true;
      } else if (control.stop != nullptr && control.stop->load(std::memory_order_acquire)) {
        result.cancelled = kill = true;
        result.notices.push_back("the backend was stopped while the command ran");
      } else if (has_deadline && Clock::now() >= deadline) {
        result.timed_out = kill = true;
      }
      if (kill) {
        const char k = 'k';
        while (::write(ctrl_w.get(), &k, 1) < 0 && errno == EINTR) {
        }
        kill_sent = true;
      }
    }
    // Wake at least every 50 ms to look at the cancel token and the stop flag.
    int wait_ms = 50;
    if (!kill_sent && has_deadline) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left < wait_ms) wait_ms = left < 0 ? 0 : static_cast<int>(left);
    }
    pollfd pfds[3];
    int n = 0;
    int out_idx = -1, err_idx = -1, status_idx = -1;
    if (out.open) out_idx = n, pfds[n++] = {out_r.get(), POLLIN, 0};
    if (err.open) err_idx = n, pfds[n++] = {err_r.get(), POLLIN, 0};
    if (status_open) status_idx = n, pfds[n++] = {status_r.get(), POLLIN, 0};
    int ready = ::poll(pfds, static_cast<nfds_t>(n), wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      result.error = std::string("poll failed: ") + std::strerror(errno);
      break;
    }
    auto drain = [&](int idx, int fd, StreamCapture& capture) {
      if (idx < 0 || pfds[idx].revents == 0) return;
      // A bounded number of reads per wake keeps the other stream and the timers served.
      for (int i = 0; i < 16; ++i) {
        ssize_t got = ::read(fd, buf.data(), buf.size());
        if (got > 0) {
          capture.append(buf.data(), static_cast<std::size_t>(got), control.output_cap,
                         control.sink);
          continue;
        }
        if (got < 0 && (errno == EINTR)) continue;
        if (got == 0 || errno != EAGAIN) capture.open = false;
        return;
      }
    };
    drain(out_idx, out_r.get(), out);
    drain(err_idx, err_r.get(), err);
    if (status_idx >= 0 && pfds[status_idx].revents != 0) {
      ssize_t got =
          ::read(status_r.get(), status_buf + status_len, sizeof(status_buf) - status_len);
      if (got > 0)
        status_len += static_cast<std::size_t>(got);
      else if (got == 0 || (errno != EAGAIN && errno != EINTR))
        status_open = false;
    }
  }

  int shell_pid = -1;
  int wait_status = -1;
  if (status_len >= 4) std::memcpy(&shell_pid, status_buf, 4);
  if (status_len >= 8) std::memcpy(&wait_status, status_buf + 4, 4);
  ctrl_w.reset();
  while (::waitpid(supervisor, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (status_len < 8) {
    // The supervisor died before reporting (killed from outside): take the group down ourselves.
    if (shell_pid > 0) ::kill(-shell_pid, SIGKILL);
    if (result.error.empty()) result.error = "the command's supervisor process died unexpectedly";
    return finish();
  }
  result.exit_code = wait_status == -1 ? -1 : exit_code_from_status(wait_status);
  return finish();
}

}  // namespace execmcp::plugins::local
