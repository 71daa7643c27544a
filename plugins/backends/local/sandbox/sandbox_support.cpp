// check_sandbox_support(): whether this machine gives every layer of the local sandbox, and when
// not, which layer is missing and how to get it (see sandbox_launcher.hpp).
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "sandbox_launcher.hpp"
#include "sandbox_support_internal.hpp"
#include "seccomp_filter.hpp"
#include "supervision/landlock_rules.hpp"

extern char** environ;

namespace execmcp::plugins::local::sandbox {
namespace {

constexpr const char* kNeededOptions[] = {"--disable-userns", "--bind-fd",        "--ro-bind-fd",
                                          "--add-seccomp-fd", "--json-status-fd", "--size",
                                          "--perms",          "--ro-bind-data",   "--remount-ro"};

std::string read_small(const char* path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

// `bwrap --help`'s text, or "" when it cannot be run.
std::string bwrap_help(const std::string& bwrap) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return {};
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  ::posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  char* argv[] = {const_cast<char*>(bwrap.c_str()), const_cast<char*>("--help"), nullptr};
  char* envp[] = {nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, bwrap.c_str(), &actions, nullptr, argv, envp);
  ::posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  std::string text;
  if (rc == 0) {
    char buf[4096];
    for (;;) {
      pollfd p{out[0], POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0) break;
      const ssize_t n = ::read(out[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buf, static_cast<std::size_t>(n));
    }
    ::kill(pid, SIGKILL);  // it has long exited; a hung one must not hold us
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  ::close(out[0]);
  return text;
}

// Runs `probe` in a child (as `uid` when we are root) and returns its exit code: 0 for success,
// else the errno it saw; -1 when the child could not be made.
template <typename Probe>
int in_child(uid_t uid, Probe probe) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (::geteuid() == 0) {
      if (::syscall(SYS_setgroups, 0, nullptr) != 0 || ::syscall(SYS_setresgid, uid, uid, uid) ||
          ::syscall(SYS_setresuid, uid, uid, uid) != 0)
        ::_exit(errno & 0xff);
    }
    ::_exit(probe() & 0xff);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string userns_problem(int err) {
  const std::string why = err > 0 ? std::strerror(err) : "the probe could not run";
  if (read_small("/proc/sys/user/max_user_namespaces") == "0")
    return "user namespaces: disabled (user.max_user_namespaces is 0); enable them: "
           "sysctl -w user.max_user_namespaces=15000";
  if (read_small("/proc/sys/kernel/unprivileged_userns_clone") == "0")
    return "user namespaces: unprivileged ones are disabled; enable them: "
           "sysctl -w kernel.unprivileged_userns_clone=1";
  if (read_small("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1")
    return "user namespaces: AppArmor restricts unprivileged ones "
           "(kernel.apparmor_restrict_unprivileged_userns=1); give bwrap an AppArmor profile "
           "that allows userns, or set that sysctl to 0";
  return "user namespaces: an unprivileged user cannot create one (" + why +
         "); if the server runs in a container, its seccomp or AppArmor profile forbids them: "
         "use a Docker backend, or run the server where user namespaces are allowed";
}

}  // namespace

std::string find_bwrap() {
  if (const char* over = std::getenv("EXECMCP_BWRAP"); over != nullptr && *over != '\0')
    return over;
  for (const char* path : {"/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "/usr/bin/bwrap";
}

SandboxSupport check_sandbox_support() {
  SandboxSupport s;
  const std::string bwrap = find_bwrap();
  s.landlock_abi = supervision::landlock::kernel_abi();
  if (::access(bwrap.c_str(), X_OK) != 0) {
    s.problem = "bubblewrap: " + bwrap + " not found (" + std::strerror(errno) +
                "); install it: apt-get install bubblewrap";
    return s;
  }
  const std::string help = bwrap_help(bwrap);
  for (const char* option : kNeededOptions) {
    if (help.find(option) == std::string::npos) {
      s.problem = "bubblewrap: " + bwrap + " has no " + option +
                  "; bubblewrap 0.8.0-2+deb12u1 or upstream 0.10 or later is needed "
                  "(apt-get install bubblewrap)";
      return s;
    }
  }
  s.bwrap = bwrap;
  const uid_t probe_uid = ::geteuid() == 0 ? 65534 : ::geteuid();
  // A process made in the namespaces, not unshare(): unshare(CLONE_NEWUSER) refuses a caller with
  // more than one thread (EINVAL), and a sanitizer's runtime may run a thread in the forked child.
  const int userns = in_child(probe_uid, [] {
    const long made =
        ::syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | SIGCHLD,
                  nullptr, nullptr, nullptr, 0L);
    if (made < 0) return errno;
    if (made == 0) ::syscall(SYS_exit, 0);
    int status = 0;
    while (::waitpid(static_cast<pid_t>(made), &status, 0) < 0 && errno == EINTR) {
    }
    return 0;
  });
  s.user_namespaces = userns == 0;
  if (!s.user_namespaces) {
    s.problem = userns_problem(userns);
    return s;
  }
  const int seccomp = in_child(probe_uid, [] {
    const auto bpf = seccomp_bpf();
    sock_fprog prog{static_cast<unsigned short>(bpf.size() / sizeof(sock_filter)),
                    reinterpret_cast<sock_filter*>(const_cast<char*>(bpf.data()))};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
    return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0 ? 0 : errno;
  });
  s.seccomp = seccomp == 0;
  if (!s.seccomp) {
    s.problem = std::string("seccomp: the sandbox's filter cannot be loaded (") +
                (seccomp > 0 ? std::strerror(seccomp) : "the probe could not run") +
                "); a kernel with CONFIG_SECCOMP_FILTER is needed";
  }
  return s;
}

}  // namespace execmcp::plugins::local::sandbox
