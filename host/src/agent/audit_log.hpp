// The audit trail: one log line per tool call (and per request a sandbox's network policy
// refused), and optionally one JSON object per line in a file.
#pragma once

#include <cstddef>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

namespace execmcp::host {

// The most one string field of an audit record holds, in the file and in the log line. A longer
// value is cut ("… (N bytes, cut)") and the file's line says, under "cut", its size and SHA-256.
inline constexpr std::size_t kAuditFieldBytes = 4096;

struct AuditRecord {
  std::string agent_id;
  std::string instance_id;
  // execute_command, read_file, write_file, read_docstring, *_background_shell(s); "egress": a
  // request of the sandbox's that its network policy judged (network_events/1), or what its
  // proxy did with a secret's placeholder (secret_events/1)
  std::string tool;
  std::string principal;  // who asked: a token's name, "stdio", "cli"
  std::string user;       // a per-user agent's sandbox: its user key ("" otherwise)
  std::string path;       // read_file / write_file
  std::size_t bytes = 0;  // read_file / write_file: bytes read or written
  std::string command;
  std::string work_dir;
  std::string shell_id;  // the background-shell tools
  std::string verdict;   // "allowed", "blocked:<filter>/<rule>", "internal", "refused" (egress),
                         // "secret injected|withheld|scrubbed" (egress), "task:created",
                         // "task:cancelled" (an MCP task's events; its command's record is
                         // "allowed" or "blocked:…" as a call's)
  std::string reason;    // why it was blocked, when it was
  int exit_code = -1;
  double duration_seconds = 0.0;
  bool timed_out = false;
  bool cancelled = false;
  std::string error;  // the backend's error, when it could not run the command
  // "egress": what the sandbox asked for (the host as the sandbox named it, so untrusted).
  std::string remote_host;
  int remote_port = 0;
  std::string method;
  // "egress" records of the proxy's secret decisions (secret_events/1): the secret's name, never
  // its value; `path` then holds the request's path.
  std::string secret;
  // An MCP task's task_audit_reference: on the records of its creation, its cancellation and
  // its command.
  std::string task;
};

// What an audit record names an MCP task by: "t-" and the first 16 hex digits of the SHA-256 of
// its id. The id is the task's only secret where callers are not told apart (HTTP without
// authentication), so a reader of the audit trail must not learn it; whoever has the id can
// compute the reference.
[[nodiscard]] std::string task_audit_reference(const std::string& task_id);

// Thread-safe; the file (if any) is opened for appending and written one whole line at a time.
// Every record is bounded here, whoever fills it: each string field at kAuditFieldBytes.
class AuditLog {
 public:
  // Empty `file`: log lines only. Throws std::runtime_error if the file cannot be opened.
  explicit AuditLog(const std::string& file = {});
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // The one writer for `file` in this process (every agent naming the file shares it, so their
  // lines never interleave); a fresh log-lines-only writer for "". Throws like the constructor.
  static std::shared_ptr<AuditLog> shared(const std::string& file);

  void record(const AuditRecord& record) noexcept;
  [[nodiscard]] const std::string& file() const { return path_; }

  // The JSON object written for `record`, as one line without the newline; every string value at
  // most kAuditFieldBytes, and for each one cut, "cut": {"<key>": {"bytes": N, "sha256": "<hex>"}}.
  static std::string to_json_line(const AuditRecord& record);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::mutex mutex_;
};

}  // namespace execmcp::host
