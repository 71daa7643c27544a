// The spare pool: the process that creates and guards commands, for the local backend's
// execmcp-supervisor program and for execmcp-runner inside a container.
//
// Why a separate program: the contract needs a process between the host and the shell that is a
// child subreaper, so every orphaned descendant (including one that called setsid() to leave the
// shell's process group) re-parents to it and can be killed. Forking that process from the host
// copies the whole multithreaded host per command, which cost more than the command itself for
// short commands. Instead the plugin starts this program once per backend. It forks subreapers
// ("spares": small single-threaded copies of itself) that wait on the socket; whichever takes a
// command runs it, makes sure nothing of it is left, and waits for the next one:
//
//   host ──spawn once──▶ execmcp-supervisor ──fork when no spare is idle──▶ spare (setsid,
//   PR_SET_CHILD_SUBREAPER) ──posix_spawn per command──▶ shell (own process group, stdin
//   from the client: /dev/null or a pipe)
//
// Where the kernel refuses PR_SET_CHILD_SUBREAPER (gVisor's runsc 0.0~20221219 answers EINVAL), an
// orphan re-parents to the container's PID 1 instead. The spare then marks each command: the shell
// gets kTreeVar=<spare pid>.<sequence> in its environment, which every process of the command
// inherits and /proc/<pid>/environ shows however it was re-parented, and kills and signals reach
// the marked processes too (as exec mode's sweep does; a process started with a cleared environment
// escapes both). The container, not this program, is the boundary.
//
// A spare is reused only when it has no child left after a command, so commands never share a
// process. The program keeps at least one spare idle (forking another as soon as the last idle one
// takes a command), at most kMaxSpares in all; a spare that finds kMaxIdleSpares others idle after
// its command exits, so a burst of parallel commands does not leave a crowd behind. Reusing spares
// instead of forking one per command halved the CPU time a short command costs.
//
// See supervisor_protocol.hpp for the messages. The program links no C++ runtime facilities
// beyond the C library, so it can be linked statically and starts in microseconds.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "spare_pool.hpp"
#include "supervisor_protocol.hpp"

namespace execmcp::plugins::supervision {
namespace {

namespace proto = protocol;

inline constexpr int kMaxSpares = 64;
inline constexpr int kMaxIdleSpares = 8;  // the server's default --max-concurrent

// Spare states, in a MAP_SHARED page the program and its spares all see. The program owns the
// transitions kFree -> kIdle (before forking) and anything -> kFree (after reaping); a spare sets
// kBusy when it takes a command, kIdle when it is ready again and kFree before it exits.
enum SpareState : int { kFree = 0, kIdle = 1, kBusy = 2 };
struct SpareTable {
  int state[kMaxSpares];
};

std::atomic_ref<int> state_of(SpareTable* table, int slot) noexcept {
  return std::atomic_ref<int>(table->state[slot]);
}

int idle_spares(SpareTable* table) noexcept {
  int idle = 0;
  for (int i = 0; i < kMaxSpares; ++i) idle += state_of(table, i).load() == kIdle ? 1 : 0;
  return idle;
}

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

// The environment variable that marks a command's processes where there is no subreaper.
inline constexpr char kTreeVar[] = "EXECMCP_TREE";

// A pattern to find in /proc/<pid>/environ: "\0" NAME=value, and a closing "\0" when the whole
// entry must match (a command's marker) rather than its start (every command of one spare).
struct EnvPattern {
  char bytes[64];
  std::size_t size = 0;
};

// kTreeVar=<spare>.<sequence>, or kTreeVar=<spare>. (any sequence) when `sequence` is negative.
EnvPattern tree_pattern(long spare, long sequence) noexcept {
  EnvPattern p;
  auto put = [&p](const char* s) {
    for (; *s != '\0' && p.size < sizeof(p.bytes) - 1; ++s) p.bytes[p.size++] = *s;
  };
  auto put_number = [&p](long v) {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v > 0);
    while (n > 0 && p.size < sizeof(p.bytes) - 1) p.bytes[p.size++] = digits[--n];
  };
  p.bytes[p.size++] = '\0';
  put(kTreeVar);
  put("=");
  put_number(spare);
  put(".");
  if (sequence >= 0) {
    put_number(sequence);
    p.bytes[p.size++] = '\0';
  }
  return p;
}

// True when the environment of the process `pid_name` has an entry matching `pattern`. Read in
// chunks, the last pattern.size - 1 bytes carried over, behind a leading NUL so the first entry
// matches like the others. A zombie's environment reads empty: it is already dead.
bool environ_has(const char* pid_name, const EnvPattern& pattern) noexcept {
  char path[64] = "/proc/";
  std::size_t len = std::strlen(path);
  for (const char* s = pid_name; *s != '\0' && len < sizeof(path) - 10; ++s) path[len++] = *s;
  std::memcpy(path + len, "/environ", 9);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096 + sizeof(EnvPattern::bytes)];
  std::size_t kept = 1;
  buf[0] = '\0';
  bool found = false;
  for (;;) {
    const ssize_t n = ::read(fd, buf + kept, 4096);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const std::size_t have = kept + static_cast<std::size_t>(n);
    if (::memmem(buf, have, pattern.bytes, pattern.size) != nullptr) {
      found = true;
      break;
    }
    kept = have < pattern.size - 1 ? have : pattern.size - 1;
    std::memmove(buf, buf + have - kept, kept);
  }
  ::close(fd);
  return found;
}

// Sends `signal` (and SIGCONT after a stopping-proof SIGTERM) to every process whose environment
// matches `pattern`; returns how many it found.
int signal_marked(const EnvPattern& pattern, int signal) noexcept {
  const int proc = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return 0;
  const long self = ::getpid();
  int found = 0;
  for_each_dirent(proc, [&](const char* name) {
    const long pid = parse_pid(name);
    if (pid <= 0 || pid == self || !environ_has(name, pattern)) return;
    ++found;
    ::kill(static_cast<pid_t>(pid), signal);
    if (signal != SIGKILL) ::kill(static_cast<pid_t>(pid), SIGCONT);
  });
  ::close(proc);
  return found;
}

// SIGKILLs every process whose parent is `self` (our children, including re-parented orphans),
// except the `keep_count` pids at `keep`.
void kill_children(pid_t self, const pid_t* keep = nullptr, int keep_count = 0) noexcept {
  int proc = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return;
  for_each_dirent(proc, [&](const char* name) {
    long pid = parse_pid(name);
    if (pid <= 0) return;
    for (int i = 0; i < keep_count; ++i) {
      if (keep[i] == pid) return;
    }
    if (read_ppid(name) == self) ::kill(static_cast<pid_t>(pid), SIGKILL);
  });
  ::close(proc);
}

struct ReapState {
  pid_t shell = -1;
  int shell_status = 0;
  bool shell_reaped = false;
  const EnvPattern* marker = nullptr;  // without a subreaper: the command's processes' mark
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
// orphan re-parents to us, the subreaper; without one, the marked processes) until we have no
// child left and nothing marked lives. Bounded so a process stuck in the kernel cannot hang the
// supervisor forever. Returns true when nothing of the command is left.
bool kill_tree(ReapState& state) noexcept {
  if (state.shell > 0) ::kill(-state.shell, SIGKILL);
  const timespec pause{0, 2 * 1000 * 1000};
  auto marked_left = [&state] {
    return state.marker != nullptr && signal_marked(*state.marker, SIGKILL) > 0;
  };
  for (int pass = 0; pass < 5000; ++pass) {
    if (reap_all(state) && !marked_left()) return true;
    kill_children(::getpid());
    if (reap_all(state) && !marked_left()) return true;
    ::nanosleep(&pause, nullptr);
  }
  return false;
}

// Sends `signal` to the shell's process group and to every process descended from this one, found
// through the ppid links of /proc/*/stat (so a process that left the group with setsid() is found
// too, whether it was re-parented to us or still has its parent in the tree), then SIGCONT, so a
// stopped process acts on it. One snapshot of /proc: what the tree forks meanwhile is left to the
// SIGKILL passes that follow.
void signal_tree(const ReapState& state, int signal) noexcept {
  if (state.shell > 0) {
    ::kill(-state.shell, signal);
    ::kill(-state.shell, SIGCONT);
  }
  int proc = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return;
  struct Link {
    long pid;
    long ppid;
  };
  std::size_t count = 0, capacity = 0;
  Link* links = nullptr;
  for_each_dirent(proc, [&](const char* name) {
    const long pid = parse_pid(name);
    if (pid <= 0) return;
    const long ppid = read_ppid(name);
    if (ppid <= 0) return;
    if (count == capacity) {
      const std::size_t grown = capacity == 0 ? 256 : capacity * 2;
      auto* bigger = static_cast<Link*>(std::realloc(links, grown * sizeof(Link)));
      if (bigger == nullptr) return;
      links = bigger;
      capacity = grown;
    }
    links[count++] = {pid, ppid};
  });
  ::close(proc);
  // Marks descendants in place (ppid set to 0 once signalled), widening from ourselves until a
  // pass finds no new one. Quadratic in the worst case, which a command's tree never nears.
  const long self = ::getpid();
  long* tree = static_cast<long*>(std::malloc((count + 1) * sizeof(long)));
  if (tree != nullptr) {
    std::size_t members = 0;
    tree[members++] = self;
    for (std::size_t done = 0; done < members; ++done) {
      for (std::size_t i = 0; i < count; ++i) {
        if (links[i].ppid != tree[done]) continue;
        links[i].ppid = 0;
        tree[members++] = links[i].pid;
        ::kill(static_cast<pid_t>(links[i].pid), signal);
        ::kill(static_cast<pid_t>(links[i].pid), SIGCONT);
      }
    }
  }
  std::free(tree);
  std::free(links);
  if (state.marker != nullptr) signal_marked(*state.marker, signal);  // re-parented to PID 1
}

// What the host asked on the control pipe: 'k' or EOF (the host is gone) = kill now, 't' = end
// gracefully (supervisor_protocol.hpp). Nothing yet: 0.
char read_control(int ctrl_r) noexcept {
  char byte = 0;
  ssize_t n;
  while ((n = ::read(ctrl_r, &byte, 1)) < 0 && errno == EINTR) {
  }
  if (n == 0) return proto::kControlKill;  // EOF
  if (n < 0) return errno == EAGAIN ? 0 : proto::kControlKill;
  return byte == proto::kControlTerminate ? proto::kControlTerminate : proto::kControlKill;
}

void empty_handler(int) {}

// The command's spec; pointers into two malloc'd buffers it owns.
struct Spec {
  Spec() = default;
  Spec(const Spec&) = delete;
  Spec& operator=(const Spec&) = delete;
  ~Spec() {
    std::free(data);
    std::free(argv);
  }
  char* data = nullptr;
  const char* work_dir = nullptr;
  const char* shell = nullptr;
  char** argv = nullptr;  // shell, "-c", command
  char** envp = nullptr;
};

// Reads a spec that came in a memfd into `spec.data`; returns its size, or 0 when unreadable.
std::size_t read_spec_file(int fd, Spec& spec) noexcept {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size <= 0) return 0;
  const auto size = static_cast<std::size_t>(st.st_size);
  spec.data = static_cast<char*>(std::malloc(size + 1));
  if (spec.data == nullptr) return 0;
  std::size_t got = 0;
  while (got < size) {
    ssize_t n = ::pread(fd, spec.data + got, size - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    got += static_cast<std::size_t>(n);
  }
  return size;
}

// Splits the `size` bytes at `spec.data` into the spec's strings.
bool parse_spec(std::size_t size, Spec& spec) noexcept {
  char* data = spec.data;
  if (data == nullptr || size == 0) return false;
  data[size] = '\0';
  std::size_t strings = 0;
  for (std::size_t i = 0; i < size; ++i) strings += data[i] == '\0' ? 1 : 0;
  if (strings < 3 || data[size - 1] != '\0') return false;
  // Room for one more environment entry than the spec has: the tree marker (supervise()).
  char** table = static_cast<char**>(std::malloc((strings + 4) * sizeof(char*)));
  if (table == nullptr) return false;
  spec.argv = table;
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
  spec.envp = table + 4;
  return true;
}

// One received command: its descriptors and its spec (inline, or read from the memfd).
struct Command {
  int fds[proto::kFdCountWithSpec];
  int fd_count = 0;
  Spec spec;
  bool spec_ok = false;
};

// Adds `marker`'s entry (kTreeVar=...) to the end of the spec's environment (parse_spec() left
// room for it).
void add_marker(Spec& spec, const EnvPattern& marker) noexcept {
  char** env = spec.envp;
  while (*env != nullptr) ++env;
  env[0] = const_cast<char*>(marker.bytes + 1);  // after the leading NUL; ends with its own
  env[1] = nullptr;
}

// Runs one command in this spare: starts the shell, waits for it or for a kill request, makes sure
// nothing of the command is left, reports, and closes the command's descriptors. `marker`: the
// command's mark where there is no subreaper, else null. `on_started` runs once the shell exists
// (or failed to). Returns false when a child could not be killed, so this process must not take
// another command.
template <class OnStarted>
bool supervise(Command& command, const EnvPattern* marker, OnStarted on_started) noexcept {
  const int* fds = command.fds;
  Spec& spec = command.spec;
  const int out_w = fds[proto::kStdout];
  const int err_w = fds[proto::kStderr];
  const int ctrl_r = fds[proto::kControl];
  const int status_w = fds[proto::kStatus];
  sigset_t all;
  sigfillset(&all);
  int status_msg = -1;
  bool clean = true;
  ReapState state;
  state.marker = marker;
  // Whom the host wakes with SIGCONT: written before the shell exists, since the shell's first act
  // may be to stop us (kill -STOP $PPID). The host waits for the pipe's hang-up only, so these
  // writes do not wake it.
  const int self = static_cast<int>(::getpid());
  write_all(status_w, &self, sizeof(self));
  if (!command.spec_ok) {
    write_str(err_w, "execmcp: the supervisor received an unreadable command\n");
  } else if (::fchdir(fds[proto::kWorkDir]) != 0) {
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
    // Everything else we hold is close-on-exec.
    posix_spawn_file_actions_adddup2(&actions, fds[proto::kStdin], 0);
    posix_spawn_file_actions_adddup2(&actions, out_w, 1);
    posix_spawn_file_actions_adddup2(&actions, err_w, 2);
    if (marker != nullptr) add_marker(spec, *marker);
    pid_t shell = -1;
    const int rc = ::posix_spawn(&shell, spec.shell, &actions, &attr, spec.argv, spec.envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      write_error(err_w, "cannot run shell ", spec.shell, rc);
      status_msg = 127 << 8;
    } else {
      state.shell = shell;
    }
  }
  // Where the host finds the process group should this process die before reporting.
  write_all(status_w, &state.shell, sizeof(state.shell));
  on_started();

  if (state.shell > 0) {
    sigset_t wait_mask;
    sigfillset(&wait_mask);
    sigdelset(&wait_mask, SIGCHLD);
    bool terminating = false;
    for (;;) {
      // Ending by itself, the shell ends the command; asked to terminate, the command ends when
      // nothing of it is left.
      const bool none_left = reap_all(state);
      if (terminating ? none_left : state.shell_reaped) break;
      pollfd pfd{ctrl_r, POLLIN, 0};
      int r = ::ppoll(&pfd, 1, nullptr, &wait_mask);
      if (r <= 0) continue;
      const char request = read_control(ctrl_r);
      if (request == proto::kControlTerminate && !terminating) {
        terminating = true;
        signal_tree(state, SIGTERM);
        continue;
      }
      if (request == 0 || request == proto::kControlTerminate) continue;
      break;  // "kill" byte, or EOF because the host is gone: either way, kill
    }
    // Normal exit or kill: nothing of the command may outlive the call.
    clean = kill_tree(state);
    status_msg = state.shell_reaped ? state.shell_status : -1;
  }
  // Our copies of the output pipes stay open until the report is written and the status pipe
  // closed, so the host is woken once after the command, by that hang-up, and not first by the
  // output pipes' EOF.
  write_all(status_w, &status_msg, sizeof(status_msg));
  ::close(status_w);
  for (int i = 0; i < command.fd_count; ++i) {
    if (i != proto::kStatus) ::close(fds[i]);  // the work_dir too: an idle spare holds none
  }
  // An idle spare holds no directory of the agent's (a context path can then be unmounted).
  [[maybe_unused]] const int rc = ::chdir("/");
  return clean;
}

// Receives one command into `command`; returns 1 when it is complete, 0 at EOF, -1 when the
// message is malformed (its descriptors are closed) and -2 on a receive error.
int receive(Command& command) noexcept {
  static char data[1 + proto::kInlineSpecMax + 1];
  iovec iov{data, sizeof(data)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * proto::kFdCountWithSpec)];
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
      if (count < proto::kFdCountWithSpec)
        command.fds[count++] = fd;
      else
        ::close(fd);
    }
  }
  command.fd_count = count;
  const auto inline_size = static_cast<std::size_t>(n) - 1;
  const bool well_formed =
      data[0] == proto::kMessageByte && (msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) == 0 &&
      (count == proto::kFdCountWithSpec || (count == proto::kFdCount && inline_size > 0));
  if (!well_formed) {
    for (int i = 0; i < count; ++i) ::close(command.fds[i]);
    return -1;
  }
  if (count == proto::kFdCountWithSpec) {
    const std::size_t size = read_spec_file(command.fds[proto::kSpec], command.spec);
    command.spec_ok = parse_spec(size, command.spec);
  } else {
    command.spec.data = static_cast<char*>(std::malloc(inline_size + 1));
    if (command.spec.data != nullptr) std::memcpy(command.spec.data, data + 1, inline_size);
    command.spec_ok = parse_spec(inline_size, command.spec);
  }
  return 1;
}

// A spare: prepared ahead of time (own session, subreaper, signals) so a command only costs a
// receive here. Takes commands one after another from the socket until the plugin closes it.
[[noreturn]] void spare_main(SpareTable* table, int slot, int wake_w) noexcept {
  // Idle, the spare dies with the program (see serve()); running a command, it outlives it, so a
  // command that kills the program does not take the supervisor of every other command with it
  // and leave their setsid escapees to init. Two prctl calls per command.
  auto die_with_program = [](bool yes) { ::prctl(PR_SET_PDEATHSIG, yes ? SIGKILL : 0); };
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  ::setsid();  // out of the host's terminal signals (Ctrl-C goes to the host, which cleans up)
  const bool subreaper = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  auto state = state_of(table, slot);
  for (long sequence = 0;; ++sequence) {
    Command command;
    const int got = receive(command);
    if (got == 0 || got == -2) break;  // the plugin closed its end, or the host is gone
    if (got < 0) continue;
    state.store(kBusy);
    die_with_program(false);
    const EnvPattern marker = tree_pattern(::getpid(), sequence);
    const bool clean = supervise(command, subreaper ? nullptr : &marker, [&] {
      // Only now, with the shell started, may the program fork a spare to replace us: a fork
      // woken earlier preempted this process on its CPU and delayed the shell's start.
      if (idle_spares(table) == 0) {
        const char wake = 'w';
        write_all(wake_w, &wake, 1);
      }
    });
    if (!clean || idle_spares(table) >= kMaxIdleSpares) break;
    // Should the program be dead by now, the plugin sees it before its next command and starts
    // another, closing this one's socket: this spare then sees EOF and exits.
    die_with_program(true);
    state.store(kIdle);
  }
  state.store(kFree);
  ::_exit(0);
}

// Keeps at least one spare idle on the socket (see the top of this file). Exits when the plugin
// closes the socket, once every spare has exited (those running a command finish it first).
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

  // A spare killed while it ran a command leaves that command's processes to us (a setsid
  // escapee included), not to init: they are killed as they arrive (see below). Without it, a
  // command that kills a spare would leave the rest of its tree running, beyond any kill.
  const bool subreaper = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  void* shared = ::mmap(nullptr, sizeof(SpareTable), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return 1;
  auto* table = static_cast<SpareTable*>(shared);  // zero-filled: every slot kFree
  pid_t pids[kMaxSpares] = {};
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) return 1;
  for (;;) {
    bool fork_failed = false;
    if (idle_spares(table) == 0) {
      int slot = 0;
      while (slot < kMaxSpares && pids[slot] != 0) ++slot;
      if (slot < kMaxSpares) {  // else every slot is busy: commands queue on the socket
        state_of(table, slot).store(kIdle);
        const pid_t self = ::getpid();
        const pid_t pid = ::fork();
        if (pid == 0) {
          // Should this program be killed, its idle spares go too: one left idle would take
          // commands that nobody replaces. A spare running a command outlives it and finishes
          // that command (spare_main); the plugin sees the program gone before its next send and
          // starts another.
          ::prctl(PR_SET_PDEATHSIG, SIGKILL);
          if (::getppid() != self) ::_exit(0);  // died before the prctl
          ::close(wake[0]);
          spare_main(table, slot, wake[1]);
        }
        if (pid > 0) {
          pids[slot] = pid;
        } else {
          state_of(table, slot).store(kFree);
          fork_failed = true;
        }
      }
    }
    // Data on the socket is for the spares: only its hang-up (events 0) concerns us.
    pollfd pfds[2] = {{wake[0], POLLIN, 0}, {proto::kSocketFd, 0, 0}};
    const timespec retry{0, 10 * 1000 * 1000};
    ::ppoll(pfds, 2, fork_failed ? &retry : nullptr, &wait_mask);
    if ((pfds[1].revents & (POLLHUP | POLLERR)) != 0) {
      // The plugin is done. Idle spares see EOF and exit; busy ones first finish their command.
      // Reaping them all here leaves no zombie behind for whoever inherits them (a container's
      // PID 1 may never reap).
      while (::waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
      }
      return 0;
    }
    char bytes[64];
    while (::read(wake[0], bytes, sizeof(bytes)) > 0) {
    }
    // Every child that is not a spare is what a dead spare's command left: killed, and what it
    // leaves in turn is killed when its end wakes us again.
    bool orphans = false;
    for (;;) {
      const pid_t pid = ::waitpid(-1, nullptr, WNOHANG);
      if (pid <= 0) break;
      bool spare = false;
      for (int slot = 0; slot < kMaxSpares; ++slot) {
        if (pids[slot] != pid) continue;
        spare = true;
        // A spare exits by itself only once its command left nothing behind (or it could not
        // kill it: then it set kFree, and what it left is reaped here when it ends).
        const bool busy = state_of(table, slot).load() == kBusy;
        orphans = orphans || busy;
        // Without a subreaper its command's processes went to PID 1: found by their mark.
        if (busy && !subreaper) {
          const EnvPattern any_of_its = tree_pattern(pid, -1);
          const timespec pause{0, 2 * 1000 * 1000};
          for (int pass = 0; pass < 50 && signal_marked(any_of_its, SIGKILL) > 0; ++pass)
            ::nanosleep(&pause, nullptr);
        }
        pids[slot] = 0;
        state_of(table, slot).store(kFree);  // also when it was killed while idle or busy
      }
      orphans = orphans || !spare;
    }
    if (orphans) kill_children(::getpid(), pids, kMaxSpares);
  }
}

}  // namespace

bool is_spare_pool_invocation(int argc, char** argv) noexcept {
  return argc == 2 && std::strcmp(argv[1], proto::kProtocolArg) == 0;
}

int spare_pool_main(int argc, char** argv) noexcept {
  int type = 0;
  socklen_t len = sizeof(type);
  if (!is_spare_pool_invocation(argc, argv) ||
      ::getsockopt(proto::kSocketFd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
      type != SOCK_SEQPACKET) {
    write_str(2,
              "this mode is started by execmcp's backends of the same build; it is not meant to be "
              "run by hand.\n");
    return 2;
  }
  // Nothing our parent leaked to us without close-on-exec may reach the commands, nor may the
  // socket (the spawn's dup2 left it inheritable).
  ::syscall(SYS_close_range, proto::kSocketFd + 1, ~0U, 0);
  ::fcntl(proto::kSocketFd, F_SETFD, FD_CLOEXEC);
  return serve();
}

}  // namespace execmcp::plugins::supervision
