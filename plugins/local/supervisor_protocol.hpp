// The wire contract between the local backend plugin and its execmcp-supervisor program.
//
// The plugin starts the program once per backend with kSocketFd a SOCK_SEQPACKET socket and
// argv[1] == kProtocolArg. Each command is one message on that socket: kMessageByte as data and,
// as SCM_RIGHTS, exactly kFdCount descriptors in the order of the Fd enum below. The program forks
// one subreaper per message; that process reports on the status pipe two native ints, the
// shell's pid (-1 when no shell was started) and then its wait status (-1 when unknown), and a
// byte or EOF on the control pipe means "kill the command now".
#pragma once

namespace execmcp::plugins::local::protocol {

inline constexpr const char* kProgramName = "execmcp-supervisor";
// Changes whenever anything in this file changes, so a stale program is refused, not misread.
inline constexpr const char* kProtocolArg = "--execmcp-supervisor-protocol=1";
inline constexpr int kSocketFd = 3;
inline constexpr char kMessageByte = 'x';

// The spec memfd holds NUL-terminated strings: work_dir, shell, command, then "NAME=value"
// environment entries, as many as there are.
enum Fd : int { kSpec = 0, kStdout, kStderr, kControl, kStatus, kFdCount };

}  // namespace execmcp::plugins::local::protocol
