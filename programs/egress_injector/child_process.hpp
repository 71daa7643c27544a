// The command the injector runs beside itself, Squid: its child, so that each ends the other.
// The child gets SIGKILL when the injector dies (PR_SET_PDEATHSIG); the injector forwards SIGINT
// and SIGTERM to it and exits with its status when it exits.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace execmcp::egress_injector {

class ChildProcess {
 public:
  // Forks and execs argv[0] (PATH searched). Throws std::runtime_error when it cannot fork.
  explicit ChildProcess(const std::vector<std::string>& argv);
  ~ChildProcess();  // kills (SIGKILL) and reaps a child still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  void signal(int signal) const noexcept;
  // True once the child has ended; `status` is then its exit code, or 128 + its signal.
  bool reap(int& status) noexcept;

 private:
  pid_t pid_ = -1;
};

}  // namespace execmcp::egress_injector
