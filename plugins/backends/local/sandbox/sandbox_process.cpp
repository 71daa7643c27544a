// SandboxProcess: one bubblewrap sandbox, started as an unprivileged uid (see
// sandbox_launcher.hpp).
//
//   server ── fork, drop to uid U, no_new_privs, exec ──▶ bwrap (monitor, host pid ns, uid U)
//     ║ channel (socketpair) = program's stdin+stdout        └─ init (PID 1 of the new pid ns)
//     ║ diagnostics (pipe)   = program's stderr                   └─ /.execmcp/<program>
//
// The init's host pid comes from bwrap's --json-status-fd; SIGKILL to it (by pidfd) ends the pid
// namespace, so stop() leaves nothing behind. With a cgroup of its own (SandboxSpec::cgroup_procs)
// the forked child joins it before it runs bwrap, so everything the sandbox runs is in it.
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "bwrap_args.hpp"
#include "etc_view.hpp"
#include "sandbox_launcher.hpp"
#include "sandbox_support_internal.hpp"
#include "seccomp_filter.hpp"
#include "spawner_thread.hpp"
#include "supervision/landlock_rules.hpp"
#include "supervision/stream_relay.hpp"

namespace execmcp::plugins::local::sandbox {
namespace {

// Owns descriptors until handed on; closes what is left.
struct Fds {
  std::vector<int> fds;
  int keep(int fd) {
    if (fd >= 0 && fd < 3) {  // never 0-2: the child's stdio is made there
      const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
      ::close(fd);
      fd = moved;
    }
    if (fd >= 0) fds.push_back(fd);
    return fd;
  }
  void close_all() {
    for (int fd : fds) ::close(fd);
    fds.clear();
  }
  ~Fds() { close_all(); }
};

int memfd_with(const std::string& name, const std::string& data) {
  const int fd = ::memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) return -1;
  std::string_view rest = data;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return -1;
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

std::string describe_dir(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "cannot stat it";
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
  return std::string("mode ") + mode + ", owner uid " + std::to_string(st.st_uid);
}

// What the child checks as the sandbox uid before it runs bwrap (access() honours ACLs), each
// with the sentence it writes when the check fails. Made before fork: the child only calls
// access() and write().
struct ReachCheck {
  std::string path;
  int mode;
  std::string message;
};

void add_reach_checks(const std::string& source, bool is_program, uid_t uid,
                      std::vector<ReachCheck>& checks) {
  for (auto slash = source.find('/', 1); slash != std::string::npos;
       slash = source.find('/', slash + 1)) {
    const std::string dir = source.substr(0, slash);
    checks.push_back({dir, X_OK,
                      "the sandbox user " + std::to_string(uid) + " cannot reach " + source +
                          ": it may not search " + dir + " (" + describe_dir(dir) +
                          "); give it search permission (setfacl -m u:" + std::to_string(uid) +
                          ":x " + dir + ") or choose another sandbox user\n"});
  }
  if (is_program)
    checks.push_back(
        {source, X_OK,
         "the sandbox user " + std::to_string(uid) + " cannot execute " + source + "\n"});
}

// What the forked child does, all of it made before fork.
struct ChildPlan {
  std::vector<char*> argv;   // bwrap's, null-terminated
  std::vector<int> inherit;  // descriptors bwrap is handed
  const std::vector<ReachCheck>* checks = nullptr;
  int channel = -1, diagnostics = -1, report = -1;
  bool drop = false;  // the server is root: become uid:gid first
  uid_t uid = 0;
  gid_t gid = 0;
  rlim_t max_processes = 0;                        // 0: no RLIMIT_NPROC
  const std::vector<int>* cgroup_procs = nullptr;  // joined first (SandboxSpec::cgroup_procs)
  std::string exec_failed, drop_failed, too_many, join_failed;
};

// The child: signals, its cgroup, stdio, descriptors, the sandbox uid, no_new_privs, the reach
// checks, then bwrap. Async-signal-safe calls only; a refusal is written to `report`
// (close-on-exec: EOF there means bwrap runs).
[[noreturn]] void exec_bwrap(const ChildPlan& plan) {
  auto fail = [&](const std::string& text) {
    [[maybe_unused]] auto n = ::write(plan.report, text.data(), text.size());
    ::_exit(126);
  };
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Dispositions the server set to "ignore" survive exec (SIGCHLD ignored would break bwrap's
  // wait for its init): every signal starts at its default.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  // Into the sandbox's cgroup before anything else runs: "0" is the writer itself.
  for (int fd : *plan.cgroup_procs)
    if (::write(fd, "0", 1) != 1) fail(plan.join_failed);
  if (::dup2(plan.channel, 0) < 0 || ::dup2(plan.channel, 1) < 0 || ::dup2(plan.diagnostics, 2) < 0)
    fail("sandbox: dup2 failed\n");
  // Nothing of the server's reaches bwrap or the sandbox but what is named here.
  ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  for (int fd : plan.inherit) ::fcntl(fd, F_SETFD, 0);
  if (plan.max_processes != 0) {
    const struct rlimit limit = {plan.max_processes, plan.max_processes};
    if (::setrlimit(RLIMIT_NPROC, &limit) != 0) fail("sandbox: cannot set RLIMIT_NPROC\n");
  }
  if (plan.drop && (::syscall(SYS_setgroups, 0, nullptr) != 0 ||
                    ::syscall(SYS_setresgid, plan.gid, plan.gid, plan.gid) != 0 ||
                    ::syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid) != 0))
    fail(plan.drop_failed);
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  for (const auto& c : *plan.checks)
    if (::access(c.path.c_str(), c.mode) != 0) fail(c.message);
  char* envp[] = {nullptr};
  ::execve(plan.argv[0], plan.argv.data(), envp);
  fail(errno == EAGAIN ? plan.too_many : plan.exec_failed);
  ::_exit(126);
}

// Reads bwrap's first JSON status document, {"child-pid": N}: the init's host pid, or -1.
pid_t read_child_pid(int fd, std::chrono::milliseconds timeout) {
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto key = text.find("\"child-pid\"");
    if (key != std::string::npos) {
      auto pos = text.find(':', key);
      if (pos != std::string::npos) {
        ++pos;
        while (pos < text.size() && text[pos] == ' ') ++pos;
        auto end = pos;
        while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
        if (end > pos && end < text.size()) return static_cast<pid_t>(std::stol(text.substr(pos)));
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || text.size() > 65536) return -1;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return -1;
    char buf[512];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    text.append(buf, static_cast<std::size_t>(n));
  }
}

std::string drain(int fd) {
  std::string text;
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || text.size() > 16384) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::fcntl(fd, F_SETFL, flags);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

bool wait_exit(int pidfd, std::chrono::milliseconds timeout) {
  pollfd p{pidfd, POLLIN, 0};
  for (;;) {
    const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (ready < 0 && errno == EINTR) continue;
    return ready > 0;
  }
}

int pidfd_open(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

// A pidfd of the sandbox's init, or -1 when it has already ended. The pid is checked to still be
// bwrap's child (not a reused number) while the pidfd pins it.
int init_of(pid_t init, pid_t bwrap) {
  const int fd = pidfd_open(init);
  if (fd < 0) return -1;
  std::ifstream status("/proc/" + std::to_string(init) + "/status");
  pid_t parent = -1;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("PPid:", 0) == 0) parent = static_cast<pid_t>(std::atol(line.c_str() + 5));
  }
  if (parent != bwrap || ::syscall(SYS_pidfd_send_signal, fd, 0, nullptr, 0) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

class BwrapSandbox final : public SandboxProcess {
 public:
  BwrapSandbox(pid_t bwrap, int bwrap_pidfd, pid_t init, int init_pidfd, int channel,
               int diagnostics, int status)
      : bwrap_(bwrap),
        bwrap_pidfd_(bwrap_pidfd),
        init_(init),
        init_pidfd_(init_pidfd),
        channel_(channel),
        diagnostics_(diagnostics),
        status_(status) {}
  ~BwrapSandbox() override { stop(std::chrono::milliseconds(0)); }

  int take_channel_fd() override { return std::exchange(channel_, -1); }
  int take_diagnostics_fd() override { return std::exchange(diagnostics_, -1); }
  [[nodiscard]] pid_t init_pid() const override { return init_; }

  void stop(std::chrono::milliseconds grace) noexcept override {
    std::lock_guard lock(mutex_);
    if (bwrap_ < 0) return;
    if (channel_ >= 0) ::close(std::exchange(channel_, -1));  // the program's EOF
    if (grace.count() <= 0 || !wait_exit(bwrap_pidfd_, grace))
      if (init_pidfd_ >= 0) ::syscall(SYS_pidfd_send_signal, init_pidfd_, SIGKILL, nullptr, 0);
    // The monitor follows its init at once; a monitor that does not is killed too.
    if (!wait_exit(bwrap_pidfd_, std::chrono::milliseconds(2000)))
      ::syscall(SYS_pidfd_send_signal, bwrap_pidfd_, SIGKILL, nullptr, 0);
    int status = 0;
    while (::waitpid(bwrap_, &status, 0) < 0 && errno == EINTR) {
    }
    for (int* fd : {&bwrap_pidfd_, &init_pidfd_, &diagnostics_, &status_})
      if (*fd >= 0) ::close(std::exchange(*fd, -1));
    bwrap_ = -1;
  }

 private:
  std::mutex mutex_;
  pid_t bwrap_;
  int bwrap_pidfd_;
  pid_t init_;
  int init_pidfd_;
  int channel_;
  int diagnostics_;
  int status_;  // kept open: bwrap writes its exit status there as it leaves
};

// Opens what bubblewrap is handed (the mounts' and the program's O_PATH descriptors, the seccomp
// filter, passwd and group) into `in` and `fds`, and lists what the child checks as the sandbox
// uid before it runs bwrap.
bool open_inputs(const SandboxSpec& spec, BwrapInputs& in, Fds& fds,
                 std::vector<ReachCheck>& checks, std::string& error) {
  for (const auto& m : in.mounts) {
    int fd = -1;
    if (m.kind == PlannedMount::Kind::kBind) {
      fd = fds.keep(::open(m.source.c_str(), O_PATH | O_CLOEXEC | O_NOFOLLOW));
      if (fd < 0) {
        error = "sandbox: cannot open " + m.source + ": " + std::strerror(errno);
        return false;
      }
      // Opened where it was named: no symlink on the way (a swap would show as another path).
      char real[4096];
      const std::string link = "/proc/self/fd/" + std::to_string(fd);
      const ssize_t n = ::readlink(link.c_str(), real, sizeof real - 1);
      struct stat st {};
      if (n <= 0 || std::string(real, static_cast<std::size_t>(n)) != m.source ||
          ::fstat(fd, &st) != 0 || S_ISLNK(st.st_mode)) {
        error = "sandbox: " + m.source + " is not what it was (it resolves elsewhere: a symlink " +
                "or a rename on its way); refusing to mount it";
        return false;
      }
      add_reach_checks(m.source, false, spec.uid, checks);
    }
    in.mount_fds.push_back(fd);
  }
  in.program_fd = fds.keep(::open(spec.program.c_str(), O_PATH | O_CLOEXEC));
  if (in.program_fd < 0) {
    error = "sandbox: cannot open the program " + spec.program + ": " + std::strerror(errno);
    return false;
  }
  add_reach_checks(spec.program, true, spec.uid, checks);
  in.seccomp_fd = fds.keep(seccomp_memfd(error));
  if (in.seccomp_fd < 0) return false;
  in.passwd_fd = fds.keep(memfd_with("passwd", synthesized_passwd(spec.uid, spec.gid, spec.home)));
  in.group_fd = fds.keep(memfd_with("group", synthesized_group(spec.gid)));
  if (in.passwd_fd < 0 || in.group_fd < 0) {
    error = std::string("sandbox: memfd_create: ") + std::strerror(errno);
    return false;
  }
  if (spec.runner_landlock && supervision::landlock::kernel_abi() >= 2)
    in.program_extra_args = supervision::landlock::to_args(landlock_rules_for(spec, in.host));
  if (spec.network == SandboxNetwork::kEgress) {
    if (spec.egress_socket.empty() || spec.egress_socket[0] != '/') {
      error = "sandbox: network egress needs the proxy's socket (an absolute host path)";
      return false;
    }
    add_reach_checks(spec.egress_socket, false, spec.uid, checks);
    if (spec.runner_landlock)
      in.program_extra_args.push_back(std::string(supervision::kEgressRelayArg) +
                                      supervision::kEgressSocketInside);
  }

  return true;
}

// The cached support probe of one bwrap (success only: a failure is probed again next time).
std::string support_problem() {
  static std::mutex mutex;
  static std::string ok_for;
  const std::string bwrap = find_bwrap();
  std::lock_guard lock(mutex);
  if (!ok_for.empty() && ok_for == bwrap) return {};
  const SandboxSupport support = check_sandbox_support();
  if (support.problem.empty()) ok_for = bwrap;
  return support.problem;
}

}  // namespace

std::unique_ptr<SandboxProcess> SandboxProcess::start(const SandboxSpec& spec, std::string& error) {
  const bool root = ::geteuid() == 0;
  if (spec.uid == 0 || spec.gid == 0) {
    error = "sandbox: the sandbox user must not be root (uid/gid 0)";
    return nullptr;
  }
  if (!root && (spec.uid != ::geteuid() || spec.gid != ::getegid())) {
    error = "sandbox: a server that is not root runs the sandbox as itself (uid " +
            std::to_string(::geteuid()) + "), not as uid " + std::to_string(spec.uid);
    return nullptr;
  }
  if (spec.program.empty() || spec.program.front() != '/' || spec.home.empty() ||
      spec.home.front() != '/') {
    error = "sandbox: the program and HOME must be absolute paths";
    return nullptr;
  }
  if (std::string problem = support_problem(); !problem.empty()) {
    error = problem;
    return nullptr;
  }
  BwrapInputs in;
  in.bwrap = find_bwrap();
  in.host = probe_host_layout();
  in.etc_hidden = host_etc_hidden_entries();
  in.mounts = plan_grant_mounts(spec, error);
  if (in.mounts.empty() && !error.empty()) {
    error = "sandbox: " + error;
    return nullptr;
  }

  Fds fds;  // everything bwrap gets; closed in the parent once it has them
  std::vector<ReachCheck> checks;
  if (!open_inputs(spec, in, fds, checks, error)) return nullptr;

  int channel[2], diag[2], status[2], report[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) {
    error = std::string("sandbox: socketpair: ") + std::strerror(errno);
    return nullptr;
  }
  Fds parent_ends;
  parent_ends.keep(channel[0]);
  const int child_channel = fds.keep(channel[1]);
  if (::pipe2(diag, O_CLOEXEC) != 0 || ::pipe2(status, O_CLOEXEC) != 0 ||
      ::pipe2(report, O_CLOEXEC) != 0) {
    error = std::string("sandbox: pipe: ") + std::strerror(errno);
    return nullptr;
  }
  parent_ends.keep(diag[0]);
  parent_ends.keep(status[0]);
  parent_ends.keep(report[0]);
  const int child_diag = fds.keep(diag[1]);
  in.status_fd = fds.keep(status[1]);
  const int child_report = fds.keep(report[1]);
  channel[0] = parent_ends.fds[0];
  diag[0] = parent_ends.fds[1];
  status[0] = parent_ends.fds[2];
  report[0] = parent_ends.fds[3];

  // Everything the child needs, made before fork (after it: async-signal-safe calls only).
  ChildPlan plan;
  const std::vector<std::string> args = bwrap_args(spec, in);
  for (const auto& a : args) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  for (int fd : {in.seccomp_fd, in.status_fd, in.passwd_fd, in.group_fd, in.program_fd})
    plan.inherit.push_back(fd);
  for (int fd : in.mount_fds)
    if (fd >= 0) plan.inherit.push_back(fd);
  plan.checks = &checks;
  plan.channel = child_channel;
  plan.diagnostics = child_diag;
  plan.report = child_report;
  plan.drop = root;
  plan.uid = spec.uid;
  plan.gid = spec.gid;
  plan.cgroup_procs = &spec.cgroup_procs;
  plan.join_failed = "sandbox: cannot put the sandbox into its cgroup (its resource limits)\n";
  plan.exec_failed = "bubblewrap: cannot execute " + in.bwrap + "\n";
  plan.max_processes = static_cast<rlim_t>(spec.max_processes);
  plan.too_many = "sandbox: the sandbox user " + std::to_string(spec.uid) + " has " +
                  std::to_string(spec.max_processes) +
                  " processes or more on this machine already (the sandbox's process limit)\n";
  plan.drop_failed = "sandbox: cannot switch to the sandbox user " + std::to_string(spec.uid) +
                     ":" + std::to_string(spec.gid) + "\n";
  const pid_t pid = fork_on_spawner_thread([&plan] {
    const pid_t child = ::fork();
    if (child == 0) exec_bwrap(plan);
    return child;
  });
  if (pid < 0) {
    error = std::string("sandbox: fork: ") + std::strerror(errno);
    return nullptr;
  }
  fds.close_all();
  const int bwrap_pidfd = pidfd_open(pid);
  auto reap = [&] {
    ::kill(pid, SIGKILL);
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (bwrap_pidfd >= 0) ::close(bwrap_pidfd);
  };
  // The child's own refusal (before exec), if any: EOF means bwrap runs.
  std::string refused;
  for (char buf[1024];;) {
    const ssize_t n = ::read(report[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    refused.append(buf, static_cast<std::size_t>(n));
  }
  if (!refused.empty()) {
    reap();
    while (!refused.empty() && refused.back() == '\n') refused.pop_back();
    error = refused;
    return nullptr;
  }
  const pid_t init = read_child_pid(status[0], std::chrono::seconds(20));
  if (init <= 0 || bwrap_pidfd < 0) {
    reap();
    const std::string said = drain(diag[0]);
    error = "bubblewrap could not start the sandbox" + (said.empty() ? std::string() : ": " + said);
    return nullptr;
  }
  // The init may have ended already (a failed set-up, a program that exits at once): then the
  // channel is at EOF and bwrap's or the program's words are on the diagnostics pipe.
  const int init_pidfd = init_of(init, pid);
  parent_ends.fds.clear();  // handed over
  ::close(report[0]);
  return std::make_unique<BwrapSandbox>(pid, bwrap_pidfd, init, init_pidfd, channel[0], diag[0],
                                        status[0]);
}

}  // namespace execmcp::plugins::local::sandbox
