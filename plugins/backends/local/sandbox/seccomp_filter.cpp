// The embedded seccomp filter and the memfd bubblewrap reads it from (see seccomp_filter.hpp).
#include "seccomp_filter.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>

#include "seccomp_bpf.inc"
#include "seccomp_rules.hpp"

namespace execmcp::plugins::local::sandbox {

std::string_view seccomp_bpf() {
  return {reinterpret_cast<const char*>(generated::kSeccompBpf), sizeof generated::kSeccompBpf};
}

std::size_t seccomp_instruction_count() {
  return sizeof generated::kSeccompBpf / 8;
}

std::size_t seccomp_rule_count() {
  return std::size(kRefusedSyscalls);
}

int seccomp_memfd(std::string& error) {
  const int fd = ::memfd_create("execmcp-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    error = std::string("seccomp: memfd_create: ") + std::strerror(errno);
    return -1;
  }
  std::string_view bpf = seccomp_bpf();
  while (!bpf.empty()) {
    const ssize_t n = ::write(fd, bpf.data(), bpf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = std::string("seccomp: writing the filter: ") + std::strerror(errno);
      ::close(fd);
      return -1;
    }
    bpf.remove_prefix(static_cast<std::size_t>(n));
  }
  ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

}  // namespace execmcp::plugins::local::sandbox
