// execmcp-supervisor: the small program that creates and guards the local backend's commands.
//
// Why a separate program: the contract needs a process between the host and the shell that is a
// child subreaper, so every orphaned descendant (including one that called setsid() to leave the
// shell's process group) re-parents to it and can be killed. Forking that process from the host
// copies the whole multithreaded host per command, which cost more than the command itself for
// short commands. Instead the plugin starts this program once per backend; it waits on a socket
// and forks, per command, a copy of itself (tiny and single-threaded, so the fork is cheap):
//
//   host ──spawn once──▶ execmcp-supervisor ──fork per command──▶ subreaper (setsid,
//   PR_SET_CHILD_SUBREAPER) ──posix_spawn──▶ shell (own process group, stdin /dev/null)
//
// See supervisor_protocol.hpp for the messages. The program links no C++ runtime facilities
// beyond the C library, so it can be linked statically and starts in microseconds.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "supervisor_protocol.hpp"

namespace execmcp::plugins::local {
namespace {

namespace proto = protocol;

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

void write_error(int fd, const char* what, const char* detail, int error) noexcept {
  write_str(fd, "execmcp: ");
  write_str(fd, what);
  if (detail != nullptr) write_str(fd, detail);
  write_str(fd, ": ");
  write_str(fd, std::strerror(error));
  write_str(fd, "\n");
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
  if (state.shell > 0) ::kill(-state.shell, SIGKILL);
  const timespec pause{0, 2 * 1000 * 1000};
  for (int pass = 0; pass < 5000; ++pass) {
    if (reap_all(state)) return;
    kill_children(::getpid());
    if (reap_all(state)) return;
    ::nanosleep(&pause, nullptr);
  }
}

void empty_handler(int) {}

// The command's spec, read from the memfd; pointers into one malloc'd buffer.
struct Spec {
  const char* work_dir = nullptr;
  const char* shell = nullptr;
  char** argv = nullptr;  // shell, "-c", command
  char** envp = nullptr;
};

bool read_spec(int fd, Spec& spec) noexcept {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size <= 0) return false;
  const auto size = static_cast<std::size_t>(st.st_size);
  char* data = static_cast<char*>(std::malloc(size + 1));
  if (data == nullptr) return false;
  std::size_t got = 0;
  while (got < size) {
    ssize_t n = ::pread(fd, data + got, size - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  data[size] = '\0';
  std::size_t strings = 0;
  for (std::size_t i = 0; i < size; ++i) strings += data[i] == '\0' ? 1 : 0;
  if (strings < 3 || data[size - 1] != '\0') return false;
  char** table = static_cast<char**>(std::malloc((strings + 3) * sizeof(char*)));
  if (table == nullptr) return false;
  // table: [shell, "-c", command, nullptr, env..., nullptr]; work_dir kept aside.
  char* p = data;
  auto next = [&p]() {
    char* s = p;
    p += std::strlen(p) + 1;
    return s;
  };
  spec.work_dir = next();
  spec.shell = next();
  table[0] = const_cast<char*>(spec.shell);
  table[1] = const_cast<char*>("-c");
  table[2] = next();
  table[3] = nullptr;
  std::size_t e = 4;
  while (p < data + size) table[e++] = next();
  table[e] = nullptr;
  spec.argv = table;
  spec.envp = table + 4;
  return true;
}

// The per-command subreaper: starts the shell, waits for it or for a kill request, then makes
// sure nothing of the command is left. Runs in a fresh fork of the (single-threaded) program.
[[noreturn]] void supervise(const int* fds, int subreaper_error) noexcept {
  const int out_w = fds[proto::kStdout];
  const int err_w = fds[proto::kStderr];
  const int ctrl_r = fds[proto::kControl];
  const int status_w = fds[proto::kStatus];
  ::close(proto::kSocketFd);
  sigset_t all;
  sigfillset(&all);
  int pid_msg = -1;
  int status_msg = -1;
  ReapState state;
  Spec spec;
  if (subreaper_error != 0) {
    write_error(err_w, "cannot become a child subreaper", nullptr, subreaper_error);
  } else if (!read_spec(fds[proto::kSpec], spec)) {
    write_str(err_w, "execmcp: the supervisor received an unreadable command\n");
  } else if (::chdir(spec.work_dir) != 0) {
    write_error(err_w, "cannot enter work_dir", nullptr, errno);
    status_msg = 126 << 8;  // as if the shell had exited 126, like a shell's "cannot cd"
  } else {
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t actions;
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);  // SIG_IGN would survive exec
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    // Our fd 0 is /dev/null already; everything we received is close-on-exec.
    posix_spawn_file_actions_adddup2(&actions, out_w, 1);
    posix_spawn_file_actions_adddup2(&actions, err_w, 2);
    pid_t shell = -1;
    const int rc = ::posix_spawn(&shell, spec.shell, &actions, &attr, spec.argv, spec.envp);
    if (rc != 0) {
      write_error(err_w, "cannot run shell ", spec.shell, rc);
      status_msg = 127 << 8;
    } else {
      state.shell = shell;
      pid_msg = shell;
    }
  }
  ::close(out_w);
  ::close(err_w);
  write_all(status_w, &pid_msg, sizeof(pid_msg));

  if (state.shell > 0) {
    sigset_t wait_mask;
    sigfillset(&wait_mask);
    sigdelset(&wait_mask, SIGCHLD);
    for (;;) {
      reap_all(state);
      if (state.shell_reaped) break;
      pollfd pfd{ctrl_r, POLLIN, 0};
      int r = ::ppoll(&pfd, 1, nullptr, &wait_mask);
      if (r > 0) break;  // "kill" byte, or EOF because the host is gone: either way, kill
    }
    // Normal exit or kill: nothing of the command may outlive the call.
    kill_tree(state);
    status_msg = state.shell_reaped ? state.shell_status : -1;
  }
  write_all(status_w, &status_msg, sizeof(status_msg));
  ::_exit(0);
}

// Receives one command; returns the number of descriptors stored in `fds`, 0 at EOF, -1 when
// the message is malformed (its descriptors are closed) or on a receive error.
int receive(int* fds) noexcept {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * proto::kFdCount)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  while ((n = ::recvmsg(proto::kSocketFd, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n <= 0) return n == 0 ? 0 : -2;
  int count = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const auto got = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < got; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (count < proto::kFdCount)
        fds[count++] = fd;
      else
        ::close(fd);
    }
  }
  if (byte == proto::kMessageByte && count == proto::kFdCount && (msg.msg_flags & MSG_CTRUNC) == 0)
    return count;
  for (int i = 0; i < count; ++i) ::close(fds[i]);
  return -1;
}

// A spare: prepared ahead of time (own session, subreaper, signals) so a command only costs a
// receive here, then waits for one command and supervises it.
[[noreturn]] void spare_main(int taken_w) noexcept {
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  ::setsid();  // out of the host's terminal signals (Ctrl-C goes to the host, which cleans up)
  const int subreaper_error = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0 ? 0 : errno;
  int fds[proto::kFdCount];
  for (;;) {
    const int got = receive(fds);
    if (got == 0 || got == -2) ::_exit(0);  // the plugin closed its end, or the host is gone
    if (got > 0) break;
  }
  const char taken = 'c';
  write_all(taken_w, &taken, 1);
  ::close(taken_w);
  supervise(fds, subreaper_error);
}

// Keeps one spare waiting on the socket: forks the next as soon as the current one has taken a
// command or died. Exits when the plugin closes the socket.
int serve() noexcept {
  struct sigaction act {};
  act.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &act, nullptr);  // a write to the status pipe of a dead host
  act.sa_handler = empty_handler;       // so SIGCHLD interrupts ppoll()
  ::sigaction(SIGCHLD, &act, nullptr);
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  sigset_t wait_mask = all;
  sigdelset(&wait_mask, SIGCHLD);

  int taken[2];
  if (::pipe2(taken, O_CLOEXEC | O_NONBLOCK) != 0) return 1;
  pid_t spare = -1;
  for (;;) {
    if (spare < 0) {
      spare = ::fork();
      if (spare == 0) {
        ::close(taken[0]);
        spare_main(taken[1]);
      }
    }
    // Data on the socket is for the spare: only its hang-up (events 0) concerns us.
    pollfd pfds[2] = {{taken[0], POLLIN, 0}, {proto::kSocketFd, 0, 0}};
    const timespec retry{0, 10 * 1000 * 1000};  // after a failed fork
    ::ppoll(pfds, 2, spare < 0 ? &retry : nullptr, &wait_mask);
    if ((pfds[1].revents & (POLLHUP | POLLERR)) != 0) return 0;
    char bytes[64];
    while (::read(taken[0], bytes, sizeof(bytes)) > 0) spare = -1;
    for (;;) {
      const pid_t pid = ::waitpid(-1, nullptr, WNOHANG);
      if (pid <= 0) break;
      if (pid == spare) spare = -1;  // died before taking a command
    }
  }
}

}  // namespace
}  // namespace execmcp::plugins::local

int main(int argc, char** argv) {
  namespace proto = execmcp::plugins::local::protocol;
  int type = 0;
  socklen_t len = sizeof(type);
  if (argc != 2 || std::strcmp(argv[1], proto::kProtocolArg) != 0 ||
      ::getsockopt(proto::kSocketFd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
      type != SOCK_SEQPACKET) {
    const char* text =
        "execmcp-supervisor is started by execmcp's local backend plugin of the same build; it "
        "is not meant to be run by hand.\n";
    execmcp::plugins::local::write_str(2, text);
    return 2;
  }
  // Nothing the host leaked to us without close-on-exec may reach the commands.
  ::syscall(SYS_close_range, proto::kSocketFd + 1, ~0U, 0);
  return execmcp::plugins::local::serve();
}
