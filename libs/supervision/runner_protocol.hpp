// The wire contract between the docker-api backend and execmcp-runner, its agent inside each
// container: one byte stream each way (the runner's stdin and stdout, carried by one hijacked
// Engine exec), cut into frames.
//
// A frame is a 9-byte header, then `length` bytes of payload:
//   u32 length (big-endian, at most kMaxPayload) | u32 call id (big-endian) | u8 type
// The runner speaks first: kHello with kVersion as its payload. Then the host sends, per call,
// kRun (its payload: encode_run()) with a new id, optionally kStdin frames and always kStdinEnd
// (the command starts at kStdinEnd, with what came as its stdin, or /dev/null without any), and
// kKill whenever it must die (empty: SIGKILL to the tree at once; encode_kill(): SIGTERM to the
// tree, then SIGKILL after a grace). The runner answers kStarted just before it starts the command
// (a call lost with the channel before that never ran and may be sent again; one lost after it may
// have), kPid (encode_pid()) once the shell exists, kStdout / kStderr frames (the command's
// output, already capped at the call's output_cap, or every byte when the call keeps no output)
// and one kDone (encode_done()) per call, after which the id is free.
// A file call (the file tools: no shell, no process) is kFile (encode_file()) with a new id, the
// bytes of a write as kStdin frames, and kStdinEnd; the runner does it as its own user and
// answers with kStdout frames (a read's bytes, a list's entries: encode_entry()) and one
// kFileDone (encode_file_done()). Each side treats every byte of the other as untrusted: an
// oversize or unknown frame ends the channel (never the process reading it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace execmcp::plugins::supervision::runner {

// Changes whenever anything in this file changes, so a stale runner is refused, not misread.
inline constexpr std::string_view kVersion = "execmcp-runner/5";
inline constexpr const char* kChannelArg = "--execmcp-runner-channel=1";
inline constexpr std::size_t kHeaderSize = 9;
inline constexpr std::size_t kMaxPayload = 1024 * 1024;

enum class FrameType : std::uint8_t {
  kHello = 1,
  kRun = 2,
  kStdin = 3,
  kStdinEnd = 4,
  kKill = 5,
  kStdout = 6,
  kStderr = 7,
  kDone = 8,
  kStarted = 9,
  kPid = 10,
  kFile = 11,
  kFileDone = 12,
};

struct Frame {
  FrameType type = FrameType::kHello;
  std::uint32_t call = 0;
  std::string payload;
};

// Appends one frame to `out`. The payload must be at most kMaxPayload bytes.
void append_frame(std::string& out, FrameType type, std::uint32_t call, std::string_view payload);

// Cuts a byte stream into frames. feed() appends bytes; next() returns the next whole frame, or
// nullopt when more bytes are needed or the stream is malformed (then error() says why and the
// reader must end the channel).
class FrameReader {
 public:
  void feed(std::string_view bytes) { buffer_.append(bytes); }
  std::optional<Frame> next();
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] std::size_t buffered() const { return buffer_.size() - offset_; }

 private:
  std::string buffer_;
  std::size_t offset_ = 0;
  std::string error_;
};

// What kRun carries.
struct RunSpec {
  std::size_t output_cap = 0;
  // false (a background process): every byte is streamed and the runner keeps none, so no
  // output_cap applies and the command may print for ever in bounded memory.
  bool retain_output = true;
  std::string work_dir;          // absolute, inside the container
  std::string shell;             // absolute
  std::string command;           // `<shell> -c <command>`
  std::vector<std::string> env;  // "NAME=value", over the runner's own environment
};
std::string encode_run(const RunSpec& spec);
// nullopt when the payload is not a RunSpec.
std::optional<RunSpec> decode_run(std::string_view payload);

// What kDone carries. `killed`: the runner killed the command on a kKill request (its flags stay
// timed_out/cancelled on the host); otherwise it ended by itself first. `not_run`: the runner did
// not start the command because the container is going down (its init is exiting).
struct DoneReport {
  int exit_code = -1;
  bool killed = false;
  bool not_run = false;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  // The shell was killed by a signal: exit_code is 128 + that signal (not a shell's `exit 130`).
  bool signalled = false;
  std::string error;
  std::vector<std::string> notices;
};
std::string encode_done(const DoneReport& report);
std::optional<DoneReport> decode_done(std::string_view payload);

// kKill's payload: empty = kill at once; 4 bytes (big-endian milliseconds) = SIGTERM to the whole
// tree, up to that long for it to exit, then SIGKILL. decode_kill: nullopt when malformed.
std::string encode_kill(std::uint32_t grace_ms);
std::optional<std::uint32_t> decode_kill(std::string_view payload);

// kPid's payload: the shell's pid in the container, 4 bytes big-endian (never 0).
std::string encode_pid(std::uint32_t pid);
std::optional<std::uint32_t> decode_pid(std::string_view payload);

// What kFile carries. `path` is resolved against `cwd` when relative; the runner follows symlinks
// as any program in the container would (its mounts and user decide what is allowed).
enum class FileOp : char {
  kRead = 'r',   // up to max_bytes from offset (one more is read to tell truncation)
  kWrite = 'w',  // the call's input over the file: created (parents too) or truncated in place
  kStat = 's',   // what the path is (missing is an answer, not an error)
  kList = 'l',   // a directory's entries, at most max_bytes of them
};
struct FileRequest {
  FileOp op = FileOp::kRead;
  std::string cwd;   // absolute
  std::string path;  // not empty
  std::uint64_t offset = 0;
  std::uint64_t max_bytes = 0;
};
std::string encode_file(const FileRequest& request);
std::optional<FileRequest> decode_file(std::string_view payload);

// What kFileDone carries. `kind`: 'f' regular file, 'd' directory, 'l' symlink (a list's entry
// only), 'p' FIFO, 's' socket, 'c' / 'b' device, '-' missing, '?' unknown.
struct FileReport {
  std::string error;  // "" when it worked; else why, in words for the agent
  char kind = '?';
  bool truncated = false;  // a read or a list stopped at max_bytes
  std::uint64_t size = 0;  // the file's size (stat, read), or the bytes written
  std::uint32_t mode = 0;  // permission bits (07777)
  std::int64_t mtime = 0;  // seconds since the epoch
};
std::string encode_file_done(const FileReport& report);
std::optional<FileReport> decode_file_done(std::string_view payload);

// One entry of a list, as its kStdout bytes carry it: the kind, the name, a NUL.
std::string encode_entry(char kind, std::string_view name);
struct Entry {
  char kind = '?';
  std::string name;
};
// nullopt when the bytes are not whole entries with names that could be in a directory.
std::optional<std::vector<Entry>> decode_entries(std::string_view bytes);

}  // namespace execmcp::plugins::supervision::runner
