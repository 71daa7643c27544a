// The wire contract between a supervisor client (supervisor_client.hpp: the local backend plugin,
// or execmcp-runner inside a container) and the spare pool it starts (spare_pool.cpp).
//
// The client starts the pool program once with kSocketFd a SOCK_SEQPACKET socket and
// argv[1] == kProtocolArg. Each command is one message on that socket: kMessageByte, then the
// command's spec when it fits (at most kInlineSpecMax bytes), as data; and as SCM_RIGHTS the
// descriptors in the order of the Fd enum below: kFdCount of them, or kFdCountWithSpec when the
// spec travels in a memfd (the last descriptor) instead. kStdin is the command's standard input
// (/dev/null or a pipe). kWorkDir is the work_dir, opened by the client beneath its grant; the
// shell starts there (fchdir), so no rename after the plugin's check can move the command
// elsewhere.
//
// The spec is NUL-terminated strings: work_dir (for messages), shell, command, then "NAME=value"
// environment entries, as many as there are.
//
// One of the program's waiting subreapers takes the message and runs the command. On the status
// pipe it writes three native ints: its own pid before it starts the shell, the shell's (-1 when
// no shell was started) as soon as the shell exists, and the shell's wait status (-1 when unknown)
// once nothing of the command is left. It closes the status pipe first after that, and keeps its
// copies of the stdout and stderr pipes until then, so the plugin can wait for the status pipe's
// hang-up alone (poll events 0: the pids do not wake it) and is woken once at the end of a command.
// On the control pipe, kControlKill (or any byte but kControlTerminate) or EOF means "kill the
// command now"; kControlTerminate means "end it gracefully": SIGTERM (then SIGCONT) to the shell's
// group and to every process descended from the subreaper (setsid escapees included), after which
// the command ends once none of its processes is left, or at the next kill byte or EOF, whichever
// comes first (the client sends that byte when its grace runs out). The plugin also sends SIGCONT
// to the subreaper with each byte.
#pragma once

#include <cstddef>

namespace execmcp::plugins::supervision::protocol {

// Changes whenever anything in this file changes, so a stale program is refused, not misread.
inline constexpr const char* kProtocolArg = "--execmcp-supervisor-protocol=6";
inline constexpr int kSocketFd = 3;
inline constexpr char kMessageByte = 'x';
inline constexpr char kControlKill = 'k';
inline constexpr char kControlTerminate = 't';
// Well under the socket's default send buffer (net.core.wmem_default, about 208 KiB).
inline constexpr std::size_t kInlineSpecMax = 60 * 1024;

enum Fd : int {
  kStdout = 0,
  kStderr,
  kControl,
  kStatus,
  kWorkDir,
  kStdin,
  kFdCount,
  kSpec = kFdCount
};
inline constexpr int kFdCountWithSpec = kFdCount + 1;

}  // namespace execmcp::plugins::supervision::protocol
