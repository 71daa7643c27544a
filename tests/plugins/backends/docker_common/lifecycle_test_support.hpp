// What the container backend's unit tests share: a substring check, this machine's name (the
// owner label) and a pid no process has (a dead owner's).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace execmcp::plugins::docker_common::test_support {

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("unknown");
}

// A pid no process has: a child that was reaped.
inline long dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

}  // namespace execmcp::plugins::docker_common::test_support
