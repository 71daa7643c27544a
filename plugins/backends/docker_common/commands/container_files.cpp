// The file tools in the container: file calls of execmcp-runner (exec_mode agent), else short
// shell scripts: a read is `head -c`, a write `cat >` fed through stdin (or base64 pieces in
// arguments where no input reaches the container). Both refuse the same things in the same words.
#include "docker_common/commands/container_files.hpp"

#include <filesystem>

#include "docker_common/lifecycle/mount_source.hpp"
#include "execmcp/common/base64.hpp"

namespace execmcp::plugins::docker_common {

namespace {

// Prologue of the file tools' scripts: anything but a regular file (a directory, FIFO, socket or
// device, also behind a symlink) is refused before it is opened, since opening a FIFO blocks
// until a peer comes. Should one be swapped in after the check, the exec's timeout and the call's
// cancel still end it.
constexpr const char* kRefuseSpecialFile =
    "if [ -e \"$1\" ] && [ ! -f \"$1\" ]; then "
    "if [ -d \"$1\" ]; then echo \"'$1' is a directory\" >&2; exit 21; fi; "
    "echo \"'$1' is not a regular file (a FIFO, socket or device)\" >&2; exit 22; fi; ";

constexpr const char* kCancelledBeforeStart = "the call was cancelled before it started";

bool cancelled_before_start(const sdk::CancelToken* cancel) {
  return cancel != nullptr && cancel->cancel_requested();
}

// Why a file exec that ran failed: its stderr without the trailing newlines, else its exit code.
std::string file_exec_failure(const char* verb, const std::string& path, const sdk::ExecResult& r) {
  std::string msg = r.stderr_data;
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  return std::string("cannot ") + verb + " '" + path +
         "': " + (msg.empty() ? "exit code " + std::to_string(r.exit_code) : msg);
}

namespace rp = supervision::runner;

// A file call's end in the tool's words: "" when it worked.
std::string runner_failure(const char* verb, const std::string& path, const RunnerFileResult& r) {
  if (!r.error.empty()) return r.error;
  if (!r.report.error.empty())
    return std::string("cannot ") + verb + " '" + path + "': " + r.report.error;
  return {};
}

}  // namespace

std::optional<sdk::FileReadResult> read_through_runner(RunnerCommandPath& runner,
                                                       const std::string& cwd,
                                                       const sdk::FileReadRequest& request,
                                                       std::size_t max_bytes) {
  rp::FileRequest call;
  call.op = rp::FileOp::kRead;
  call.cwd = cwd;
  call.path = request.path;
  call.max_bytes = max_bytes;
  auto r = runner.run_file(call, nullptr, max_bytes + 1, std::chrono::seconds(60));
  if (!r) return std::nullopt;
  sdk::FileReadResult out;
  out.error = runner_failure("read", request.path, *r);
  if (!out.error.empty()) return out;
  out.data = std::move(r->data);
  out.truncated = r->report.truncated || r->dropped || out.data.size() > max_bytes;
  if (out.data.size() > max_bytes) out.data.resize(max_bytes);
  return out;
}

std::optional<sdk::FileWriteResult> write_through_runner(RunnerCommandPath& runner,
                                                         const std::string& cwd,
                                                         const sdk::FileWriteRequest& request) {
  rp::FileRequest call;
  call.op = rp::FileOp::kWrite;
  call.cwd = cwd;
  call.path = request.path;
  auto r = runner.run_file(call, &request.data, 4096, std::chrono::seconds(120));
  if (!r) return std::nullopt;
  sdk::FileWriteResult out;
  out.error = runner_failure("write", request.path, *r);
  if (out.error.empty()) out.bytes_written = request.data.size();
  return out;
}

std::optional<sdk::FileReadResult> ContainerFiles::read_by_runner(
    const sdk::FileReadRequest& request, std::size_t max_bytes) {
  if (runner_ == nullptr) return std::nullopt;
  return read_through_runner(*runner_, container_cwd(*lifecycle_.init()), request, max_bytes);
}

std::optional<sdk::FileWriteResult> ContainerFiles::write_by_runner(
    const sdk::FileWriteRequest& request) {
  if (runner_ == nullptr) return std::nullopt;
  return write_through_runner(*runner_, container_cwd(*lifecycle_.init()), request);
}

ContainerCommand ContainerFiles::file_call(std::string name, std::string script,
                                           std::vector<std::string> args,
                                           const sdk::CancelToken* cancel) const {
  ContainerCommand c;
  c.script = std::move(script);
  c.name = std::move(name);
  c.args = std::move(args);
  c.cancel = cancel;
  c.marker = random_marker();
  c.work_dir = container_cwd(*lifecycle_.init());
  c.env = {std::string(kMarkerVar) + "=" + c.marker};
  return c;
}

sdk::FileReadResult ContainerFiles::read_file(const sdk::FileReadRequest& request) {
  sdk::FileReadResult out;
  if (cancelled_before_start(request.cancel)) {
    out.error = kCancelledBeforeStart;
    return out;
  }
  try {
    // Read one byte more than allowed to learn whether the file is larger.
    const std::size_t max_bytes = std::min<std::size_t>(request.max_bytes, std::size_t{1} << 40);
    if (auto by_runner = read_by_runner(request, max_bytes)) return std::move(*by_runner);
    const std::string limit = std::to_string(max_bytes + 1);
    ContainerCommand spec = file_call(
        "execmcp-read", std::string(kRefuseSpecialFile) + "exec head -c " + limit + " -- \"$1\"",
        {request.path}, request.cancel);
    spec.timeout = std::chrono::seconds(60);
    spec.output_cap = max_bytes + 1;
    auto r = commands_.run(spec);
    if (!r.error.empty()) {
      out.error = r.error;
    } else if (r.exit_code != 0) {
      out.error = file_exec_failure("read", request.path, r);
    } else {
      out.data = std::move(r.stdout_data);
      if (out.data.size() > max_bytes) {
        out.data.resize(max_bytes);
        out.truncated = true;
      }
    }
  } catch (const std::exception& e) {
    out.error = lifecycle_.backend_name() + ": " + e.what();
  }
  return out;
}

std::string ContainerFiles::protected_refusal(const std::string& requested) const {
  const auto snapshot = lifecycle_.init();
  const auto& init = *snapshot;
  // In the commands' view, as the file call sees the path.
  const std::string path =
      (std::filesystem::path(container_cwd(init)) / requested).lexically_normal().string();
  for (const auto& g : init.paths)
    if (g.writable)
      for (const auto& host : g.protected_paths)
        if (const auto p = container_path(init, host); path == p || path_within(path, p))
          return "cannot write '" + requested + "': '" + path + "' is protected (" + p +
                 "): read-only for this agent";
  return {};
}

sdk::FileWriteResult ContainerFiles::write_file(const sdk::FileWriteRequest& request) {
  sdk::FileWriteResult out;
  if (cancelled_before_start(request.cancel)) {
    out.error = kCancelledBeforeStart;  // before the exec: `cat >` would truncate the file at once
    return out;
  }
  try {
    // The read-only mounts enforce protected paths whatever the path; named here first, so the
    // agent reads why rather than the file system's "Read-only file system".
    if (auto refusal = protected_refusal(request.path); !refusal.empty()) {
      out.error = refusal;
      return out;
    }
    if (auto by_runner = write_by_runner(request)) return std::move(*by_runner);
    // No input can reach the container this way (a proxy that refuses upgrades): the bytes go in
    // arguments instead.
    if (exec_.check_input_path() == kNoUpgrade) return write_file_in_pieces(request);
    // Bytes go through the exec's stdin, so any byte value survives; the container's mounts and
    // user decide whether the write is allowed (a read-only context path fails with EROFS).
    ContainerCommand spec =
        file_call("execmcp-write",
                  std::string(kRefuseSpecialFile) +
                      "d=$(dirname -- \"$1\") && mkdir -p -- \"$d\" && cat > \"$1\"",
                  {request.path}, request.cancel);
    spec.stdin_data = request.data;
    spec.timeout = std::chrono::seconds(120);
    spec.output_cap = 64 * 1024;
    auto r = commands_.run(spec);
    if (!r.error.empty()) {
      out.error = r.error;
    } else if (r.exit_code != 0) {
      out.error = file_exec_failure("write", request.path, r);
    } else {
      out.bytes_written = request.data.size();
    }
  } catch (const std::exception& e) {
    out.error = lifecycle_.backend_name() + ": " + e.what();
  }
  return out;
}

sdk::FileWriteResult ContainerFiles::write_file_in_pieces(const sdk::FileWriteRequest& request) {
  // Each piece is appended to a scratch file beside the target; the last copies it over the
  // target in place (as `cat >` does: the file keeps its inode and mode) and removes it. 48 KiB is
  // 64 KiB of base64, well under the 128 KiB one argument may hold.
  constexpr std::size_t kPiece = 48 * 1024;
  const std::string scratch = ".execmcp-write-" + random_marker();
  sdk::FileWriteResult out;
  std::size_t at = 0;
  bool first = true;
  for (;;) {
    const std::size_t n = std::min(kPiece, request.data.size() - at);
    const std::string piece = common::base64_encode(std::string_view(request.data).substr(at, n));
    at += n;
    const bool last = at >= request.data.size();
    std::string script = kRefuseSpecialFile;
    script += "t=\"$1$2\"; ";
    if (first) script += "d=$(dirname -- \"$1\") && mkdir -p -- \"$d\" && : > \"$t\" || exit; ";
    script += "printf %s \"$3\" | base64 -d >> \"$t\" || { rm -f -- \"$t\"; exit 1; }; ";
    if (last) script += "cat -- \"$t\" > \"$1\"; rc=$?; rm -f -- \"$t\"; exit $rc";
    ContainerCommand spec =
        file_call("execmcp-write", script, {request.path, scratch, piece}, request.cancel);
    spec.timeout = std::chrono::seconds(120);
    spec.output_cap = 64 * 1024;
    auto r = exec_.run(spec);
    if (!r.error.empty() || r.exit_code != 0) {
      out.error = !r.error.empty() ? r.error : file_exec_failure("write", request.path, r);
      if (!first || !last) {  // leave no scratch file behind
        ContainerCommand rm =
            file_call("execmcp-write", "rm -f -- \"$1$2\"", {request.path, scratch}, nullptr);
        rm.timeout = std::chrono::seconds(30);
        exec_.run(rm);
      }
      return out;
    }
    if (last) break;
    first = false;
  }
  out.bytes_written = request.data.size();
  return out;
}

}  // namespace execmcp::plugins::docker_common
