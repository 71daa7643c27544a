// What the local sandbox's seccomp filter refuses, as data: the build-time generator
// (seccomp_gen.cpp) turns this table into the BPF embedded in the plugin, and the tests iterate it
// to prove each entry is refused by that BPF. Everything not listed is allowed; a syscall of
// another architecture (i386 `int 0x80`, x32 numbers) kills the caller (libseccomp's bad-arch
// action), since nothing in the sandbox needs them.
#pragma once

#include <linux/sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <span>

namespace execmcp::plugins::local::sandbox {

// One condition on an argument: (arg[index] & mask) == value. An `int` argument is compared on its
// low 32 bits only (kInt), as the kernel reads it: high garbage must not slip past the rule.
struct SeccompArg {
  unsigned index = 0;
  std::uint64_t mask = 0;
  std::uint64_t value = 0;
};

struct RefusedSyscall {
  const char* name;  // as libseccomp resolves it (seccomp_syscall_resolve_name)
  int error;         // the errno the caller sees
  // All must hold for the rule to apply (none: the syscall is always refused).
  SeccompArg args[2];
  unsigned arg_count;
  const char* why;
};

inline constexpr std::uint64_t kInt = 0xffffffffu;
inline constexpr std::uint64_t kSockTypeMask = 0xf;  // SOCK_RAW etc. without NONBLOCK/CLOEXEC

// clang-format off
inline constexpr RefusedSyscall kRefusedSyscalls[] = {
    {"io_uring_setup", EPERM, {}, 0, "io_uring bypasses the syscall filter"},
    {"io_uring_enter", EPERM, {}, 0, "io_uring"},
    {"io_uring_register", EPERM, {}, 0, "io_uring"},
    {"ptrace", EPERM, {}, 0, "reading or steering other processes"},
    {"process_vm_readv", EPERM, {}, 0, "reading other processes' memory"},
    {"process_vm_writev", EPERM, {}, 0, "writing other processes' memory"},
    {"socket", EPERM, {{0, kInt, AF_VSOCK}}, 1, "vsock: the hypervisor's channels"},
    {"socketpair", EPERM, {{0, kInt, AF_VSOCK}}, 1, "vsock"},
    {"socket", EPERM, {{0, kInt, AF_PACKET}}, 1, "raw link-layer access"},
    {"socket", EPERM, {{0, kInt, AF_INET}, {1, kSockTypeMask, SOCK_RAW}}, 2, "raw IP"},
    {"socket", EPERM, {{0, kInt, AF_INET6}, {1, kSockTypeMask, SOCK_RAW}}, 2, "raw IPv6"},
    {"bpf", EPERM, {}, 0, "kernel programs"},
    {"perf_event_open", EPERM, {}, 0, "side channels, kernel attack surface"},
    {"userfaultfd", EPERM, {}, 0, "race widening for kernel exploits"},
    {"keyctl", EPERM, {}, 0, "kernel keyrings are not namespaced"},
    {"add_key", EPERM, {}, 0, "keyrings"},
    {"request_key", EPERM, {}, 0, "keyrings"},
    {"unshare", EPERM, {}, 0, "new namespaces"},
    {"setns", EPERM, {}, 0, "entering namespaces"},
    {"clone", EPERM, {{0, CLONE_NEWUSER, CLONE_NEWUSER}}, 1, "new user namespace"},
    {"clone", EPERM, {{0, CLONE_NEWNS, CLONE_NEWNS}}, 1, "new mount namespace"},
    {"clone", EPERM, {{0, CLONE_NEWPID, CLONE_NEWPID}}, 1, "new pid namespace"},
    {"clone", EPERM, {{0, CLONE_NEWNET, CLONE_NEWNET}}, 1, "new network namespace"},
    {"clone", EPERM, {{0, CLONE_NEWIPC, CLONE_NEWIPC}}, 1, "new ipc namespace"},
    {"clone", EPERM, {{0, CLONE_NEWUTS, CLONE_NEWUTS}}, 1, "new uts namespace"},
    {"clone", EPERM, {{0, CLONE_NEWCGROUP, CLONE_NEWCGROUP}}, 1, "new cgroup namespace"},
    // Its flags are in memory, out of the filter's reach; glibc falls back to clone on ENOSYS.
    {"clone3", ENOSYS, {}, 0, "flags unreadable by seccomp"},
    {"mount", EPERM, {}, 0, "mounts"},
    {"umount2", EPERM, {}, 0, "mounts"},
    {"pivot_root", EPERM, {}, 0, "mounts"},
    {"chroot", EPERM, {}, 0, "mounts"},
    {"open_tree", EPERM, {}, 0, "new mount API"},
    {"move_mount", EPERM, {}, 0, "new mount API"},
    {"fsopen", EPERM, {}, 0, "new mount API"},
    {"fsconfig", EPERM, {}, 0, "new mount API"},
    {"fsmount", EPERM, {}, 0, "new mount API"},
    {"fspick", EPERM, {}, 0, "new mount API"},
    {"mount_setattr", EPERM, {}, 0, "new mount API"},
    {"kexec_load", EPERM, {}, 0, "replacing the kernel"},
    {"kexec_file_load", EPERM, {}, 0, "replacing the kernel"},
    {"init_module", EPERM, {}, 0, "kernel modules"},
    {"finit_module", EPERM, {}, 0, "kernel modules"},
    {"delete_module", EPERM, {}, 0, "kernel modules"},
    {"acct", EPERM, {}, 0, "host accounting"},
    {"swapon", EPERM, {}, 0, "host swap"},
    {"swapoff", EPERM, {}, 0, "host swap"},
    {"reboot", EPERM, {}, 0, "host power"},
    {"syslog", EPERM, {}, 0, "kernel log"},
    {"quotactl", EPERM, {}, 0, "host quotas"},
    {"uselib", EPERM, {}, 0, "obsolete"},
    {"modify_ldt", EPERM, {}, 0, "obsolete, exploit helper"},
    {"ioctl", EPERM, {{1, kInt, TIOCSTI}}, 1, "typing into another terminal"},
    {"ioctl", EPERM, {{1, kInt, TIOCLINUX}}, 1, "console control"},
};
// clang-format on

inline std::span<const RefusedSyscall> refused_syscalls() {
  return kRefusedSyscalls;
}

}  // namespace execmcp::plugins::local::sandbox
