// The embedded seccomp filter, loaded in a forked child: every kRefusedSyscalls entry is refused
// with its errno, what the runner needs stays allowed, and an x32 syscall number kills.
//
// Safety: a refused syscall that the filter let through would run for real, as root (kexec_load,
// reboot, mount...). So the child first loads a "sentinel" filter that answers every syscall of
// the table with kSentinel, then ours: for the same action (ERRNO) the filter loaded last decides
// the errno, so an entry ours refuses reads its errno, one it lets through reads kSentinel, and
// none of them ever reaches the kernel's implementation.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "seccomp_filter.hpp"
#include "seccomp_rules.hpp"

namespace sb = execmcp::plugins::local::sandbox;

namespace {

constexpr int kSentinel = 999;

std::string sentinel_bpf() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  std::set<std::string> names;
  for (const auto& rule : sb::refused_syscalls()) names.insert(rule.name);
  for (const auto& name : names)
    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(kSentinel), seccomp_syscall_resolve_name(name.c_str()), 0);
  std::FILE* tmp = std::tmpfile();
  seccomp_export_bpf(ctx, fileno(tmp));
  seccomp_release(ctx);
  std::rewind(tmp);
  std::string bpf;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, tmp)) > 0;) bpf.append(buf, n);
  std::fclose(tmp);
  return bpf;
}

long load(const std::string_view bpf) {
  sock_fprog prog{static_cast<unsigned short>(bpf.size() / sizeof(sock_filter)),
                  reinterpret_cast<sock_filter*>(const_cast<char*>(bpf.data()))};
  return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

struct Call {
  long nr;
  unsigned long args[6];
};

// The table's calls with arguments that meet each rule's conditions.
std::vector<Call> table_calls() {
  std::vector<Call> calls;
  for (const auto& rule : sb::refused_syscalls()) {
    Call c{seccomp_syscall_resolve_name(rule.name), {}};
    for (unsigned i = 0; i < rule.arg_count; ++i) c.args[rule.args[i].index] = rule.args[i].value;
    calls.push_back(c);
  }
  return calls;
}

// Runs `body` in a child with no_new_privs; returns its wait status.
template <typename Body>
int in_child(Body body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(SeccompFilterTest, IsSmallAndWellFormed) {
  EXPECT_EQ(sb::seccomp_bpf().size() % sizeof(sock_filter), 0U);
  EXPECT_GT(sb::seccomp_instruction_count(), sb::seccomp_rule_count());
  EXPECT_LT(sb::seccomp_instruction_count(), 400U);
}

TEST(SeccompFilterTest, EveryTableEntryIsRefusedWithItsErrno) {
  const std::string sentinel = sentinel_bpf();
  ASSERT_FALSE(sentinel.empty());
  const auto calls = table_calls();
  int results[2];
  ASSERT_EQ(::pipe(results), 0);
  const int status = in_child([&] {
    if (load(sentinel) != 0 || load(sb::seccomp_bpf()) != 0) return 3;
    for (const auto& c : calls) {
      errno = 0;
      const long rc =
          ::syscall(c.nr, c.args[0], c.args[1], c.args[2], c.args[3], c.args[4], c.args[5]);
      const int seen = rc == -1 ? errno : 0;
      if (::write(results[1], &seen, sizeof seen) != sizeof seen) return 4;
    }
    // An int argument with garbage in its high half is still the family the kernel reads.
    const long rc = ::syscall(SYS_socket, (1UL << 32) | AF_VSOCK, SOCK_STREAM, 0);
    const int seen = rc == -1 ? errno : 0;
    return ::write(results[1], &seen, sizeof seen) == sizeof seen ? 0 : 4;
  });
  ::close(results[1]);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const auto rules = sb::refused_syscalls();
  for (std::size_t i = 0; i <= rules.size(); ++i) {
    int seen = -1;
    ASSERT_EQ(::read(results[0], &seen, sizeof seen), static_cast<ssize_t>(sizeof seen));
    const char* name = i < rules.size() ? rules[i].name : "socket(high bits | AF_VSOCK)";
    const int want = i < rules.size() ? rules[i].error : EPERM;
    EXPECT_EQ(seen, want) << name << " (" << (i < rules.size() ? rules[i].why : "")
                          << "): " << (seen == kSentinel ? "let through" : "another errno");
  }
  ::close(results[0]);
}

TEST(SeccompFilterTest, WhatTheRunnerNeedsStaysAllowed) {
  const int status = in_child([] {
    if (load(sb::seccomp_bpf()) != 0) return 3;
    const int s = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s < 0) return 4;
    ::close(s);
    const int inet = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (inet < 0) return 5;
    ::close(inet);
    const pid_t child = ::fork();  // clone without namespace flags
    if (child < 0) return 6;
    if (child == 0) ::_exit(0);
    int st = 0;
    ::waitpid(child, &st, 0);
    if (::syscall(SYS_clone3, nullptr, 0) != -1 || errno != ENOSYS) return 7;
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return 8;
    return 0;
  });
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SeccompFilterTest, AnX32SyscallKills) {
#if defined(__x86_64__)
  const int status = in_child([] {
    if (load(sb::seccomp_bpf()) != 0) return 3;
    ::syscall(0x40000000L | SYS_getpid);  // __X32_SYSCALL_BIT
    return 0;
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "an x32 syscall number ran: " << status;
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
#else
  GTEST_SKIP() << "x32 exists on x86_64 only";
#endif
}

}  // namespace
