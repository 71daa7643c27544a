// One agent's background shells: the table, the bounded output rings, the cursors (see the header).
#include "agent/background_shells.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <random>

#include <spdlog/spdlog.h>

#include "agent/bounded_text.hpp"

namespace execmcp::host {

// ---- LineRing ----

LineRing::LineRing(std::size_t max_lines, std::size_t max_bytes)
    : max_lines_(std::max<std::size_t>(max_lines, 1)), max_bytes_(max_bytes) {}

void LineRing::push_line(std::string line) {
  bytes_ += line.size();
  lines_.push_back(std::move(line));
  ++next_seq_;
  // Always keep the newest line, so a line is never lost before anyone could read it.
  while (lines_.size() > 1 && (lines_.size() > max_lines_ || bytes_ > max_bytes_)) {
    bytes_ -= lines_.front().size();
    lines_.pop_front();
  }
}

void LineRing::append(std::string_view bytes) {
  while (!bytes.empty()) {
    const std::size_t newline = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, newline);
    if (!discarding_) {
      const std::size_t room = kBackgroundMaxLineBytes - tail_.size();
      tail_.append(piece.substr(0, room));
      if (piece.size() > room) discarding_ = true;
    }
    if (newline == std::string_view::npos) {
      if (!discarding_ && tail_.size() == kBackgroundMaxLineBytes) discarding_ = true;
      return;
    }
    if (discarding_) ++truncated_lines_;
    discarding_ = false;
    push_line(std::exchange(tail_, {}));
    bytes.remove_prefix(newline + 1);
  }
}

void LineRing::finish() {
  if (!tail_.empty() || discarding_) {
    if (discarding_) ++truncated_lines_;
    discarding_ = false;
    push_line(std::exchange(tail_, {}));
  }
}

// ---- BackgroundShells ----

class BackgroundShells::Shell final : public sdk::BackgroundObserver {
 public:
  Shell(BackgroundShells& table, std::string id, std::string_view full_command)
      : table_(table),
        id(std::move(id)),
        command(cut_text(full_command, kBackgroundCommandShownBytes)),
        command_truncated(full_command.size() > kBackgroundCommandShownBytes),
        out(table.config_.max_output_lines, table.config_.max_output_bytes),
        err(table.config_.max_output_lines, table.config_.max_output_bytes) {}

  void on_output(sdk::StreamKind stream, std::string_view bytes) noexcept override {
    try {
      std::lock_guard lock(table_.mutex_);
      (stream == sdk::StreamKind::Stdout ? out : err).append(bytes);
    } catch (...) {
      // Out of memory: the bytes are lost, the process goes on.
    }
  }

  void on_exit(const sdk::BackgroundExit& exit) noexcept override { table_.on_exit(*this, exit); }

  BackgroundShells& table_;
  // Guarded by the table's mutex from here on.
  const std::string id;
  const std::string command;  // as shown: the backend has the whole one
  const bool command_truncated;
  std::string cwd;
  long pid = 0;
  std::uint64_t handle = 0;
  bool listed = false;  // in shells_ (start() returned)
  bool exited = false;
  bool kill_requested = false;
  sdk::BackgroundExit exit_info;
  std::chrono::system_clock::time_point start_time = std::chrono::system_clock::now();
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point ended{};
  LineRing out;
  LineRing err;
};

BackgroundShells::BackgroundShells(sdk::BackgroundProcesses& processes, BackgroundConfig config,
                                   std::string cwd, Audit audit)
    : processes_(processes),
      config_(std::move(config)),
      cwd_(std::move(cwd)),
      audit_(std::move(audit)) {}

BackgroundShells::~BackgroundShells() {
  close();
}

std::string BackgroundShells::new_id_locked() {
  std::random_device device;
  for (;;) {
    char id[16];
    std::snprintf(id, sizeof id, "shell_%08x", static_cast<unsigned>(device()));
    if (!shells_.contains(id)) return id;
  }
}

std::size_t BackgroundShells::running_locked() const {
  std::size_t running = starting_;
  for (const auto& [id, shell] : shells_) running += shell->exited ? 0 : 1;
  return running;
}

void BackgroundShells::evict_finished_locked() {
  while (finished_order_.size() > config_.max_retained) {
    shells_.erase(finished_order_.front());
    finished_order_.pop_front();
  }
}

void BackgroundShells::on_exit(Shell& shell, const sdk::BackgroundExit& exit) {
  std::lock_guard lock(mutex_);
  shell.exit_info = exit;
  shell.exited = true;
  shell.ended = std::chrono::steady_clock::now();
  shell.out.finish();
  shell.err.finish();
  if (shell.listed) finished_order_.push_back(shell.id);
  // Notified under the lock: the table (and the condition variable) may be gone once it is free.
  exited_.notify_all();
}

BackgroundShellStatus BackgroundShells::status_locked(const Shell& shell) const {
  BackgroundShellStatus s;
  s.shell_id = shell.id;
  s.pid = shell.pid;
  s.command = shell.command;
  s.command_truncated = shell.command_truncated;
  s.cwd = shell.cwd;
  s.start_time = shell.start_time;
  const auto end = shell.exited ? shell.ended : std::chrono::steady_clock::now();
  s.duration_seconds = std::chrono::duration<double>(end - shell.started).count();
  if (!shell.exited) {
    s.status = "running";
    return s;
  }
  const sdk::BackgroundExit& exit = shell.exit_info;
  s.signal = exit.signal;
  s.error = exit.error;
  s.exit_code = exit.signal != 0 ? -exit.signal : exit.exit_code;
  if (!exit.error.empty()) {
    s.status = "failed";  // lost by the backend
  } else if (exit.killed || exit.signal != 0 || shell.kill_requested) {
    s.status = "killed";
  } else {
    s.status = exit.exit_code == 0 ? "stopped" : "failed";
  }
  return s;
}

void BackgroundShells::audit(const std::string& tool, const std::string& principal,
                             const std::string& shell_id, const std::string& command,
                             const std::string& verdict, const std::string& error,
                             int exit_code) const {
  if (!audit_) return;
  AuditRecord record;
  record.tool = tool;
  record.principal = principal;
  record.shell_id = shell_id;
  record.command = command;
  record.verdict = verdict;
  record.error = error;
  record.exit_code = exit_code;
  audit_(std::move(record));
}

BackgroundStartResult BackgroundShells::start(const std::string& command,
                                              const std::string& work_dir,
                                              const std::string& principal) {
  BackgroundStartResult result;
  std::shared_ptr<Shell> shell;
  {
    std::lock_guard lock(mutex_);
    evict_finished_locked();
    if (closed_) {
      result.error = "Failed to start background shell: the agent is shutting down";
    } else if (running_locked() >= config_.max_running) {
      result.error = "Failed to start background shell: Maximum concurrent shells (" +
                     std::to_string(config_.max_running) + ") reached";
    } else {
      shell = std::make_shared<Shell>(*this, new_id_locked(), command);
      // The id stays taken while it starts; nobody can see the shell yet.
      shells_.emplace(shell->id, nullptr);
      ++starting_;
    }
  }
  if (!shell) {
    audit("start_background_shell", principal, {}, command, "refused", result.error, -1);
    return result;
  }

  sdk::BackgroundRequest request;
  request.command = command;
  request.work_dir = work_dir;
  sdk::BackgroundStarted started;
  try {
    started = processes_.start_background(request, shell.get());
  } catch (...) {  // never throws by contract; a plugin that does started nothing we can reach
    started = {};
    started.error = "the backend failed to start it";
  }
  if (started.error.empty() && started.id == 0) started.error = "the backend returned no handle";

  bool terminate = false;
  {
    std::lock_guard lock(mutex_);
    --starting_;
    if (!started.error.empty()) {
      shells_.erase(shell->id);
      result.error = "Failed to start background shell: " + started.error;
    } else {
      shell->handle = started.id;
      shell->pid = started.pid;
      shell->cwd = started.work_dir.empty() ? lexical_work_dir(cwd_, work_dir) : started.work_dir;
      shell->listed = true;
      shells_[shell->id] = shell;
      if (shell->exited) finished_order_.push_back(shell->id);
      result.status = status_locked(*shell);
      terminate = closed_ && !shell->exited;  // close() ran meanwhile and did not see it
    }
    exited_.notify_all();
  }
  if (terminate) processes_.terminate_background(started.id, std::chrono::milliseconds(0));
  if (!result.error.empty()) {
    audit("start_background_shell", principal, {}, command, "failed", result.error, -1);
  } else {
    audit("start_background_shell", principal, shell->id, command, "allowed", {});
  }
  return result;
}

namespace {

StreamSlice slice_of(const LineRing& ring, const std::optional<std::uint64_t>& from,
                     std::size_t max_lines) {
  StreamSlice slice;
  slice.truncated_lines = ring.truncated_lines();
  const std::uint64_t first = ring.first_seq();
  const std::uint64_t next = ring.next_seq();
  std::uint64_t begin = 0;
  std::uint64_t end = next;
  if (!from) {
    // No cursor (MassGen's read): everything kept; a line limit keeps the newest.
    slice.from_newest = true;
    begin = next - std::min<std::uint64_t>(next - first, max_lines);
    slice.dropped_lines = first;
  } else if (*from > next) {
    slice.start_seq = *from;  // ahead of the stream: nothing yet, the same cursor again
    return slice;
  } else {
    begin = std::max(*from, first);
    slice.dropped_lines = begin - *from;
    end = std::min<std::uint64_t>(next, begin + max_lines);
  }
  slice.start_seq = begin;
  slice.lines.reserve(static_cast<std::size_t>(end - begin));
  for (std::uint64_t seq = begin; seq < end; ++seq) slice.lines.push_back(ring.line(seq));
  if (end == next) slice.tail = ring.tail();
  return slice;
}

}  // namespace

BackgroundOutput BackgroundShells::output(const std::string& shell_id,
                                          const std::optional<std::string>& cursor,
                                          std::optional<std::size_t> max_lines,
                                          const std::string& principal) {
  BackgroundOutput output;
  std::optional<OutputCursor> position;
  if (cursor) {
    position = parse_cursor(*cursor);
    if (!position)
      output.error =
          "invalid cursor (pass the next_cursor of an earlier get_background_shell_output "
          "answer, or no cursor)";
  }
  const std::size_t limit =
      std::min(max_lines.value_or(kBackgroundMaxLinesPerRead), kBackgroundMaxLinesPerRead);
  std::string command;
  if (output.error.empty()) {
    std::lock_guard lock(mutex_);
    evict_finished_locked();
    const auto it = shells_.find(shell_id);
    if (it == shells_.end() || !it->second) {
      output.error = "Shell not found: " + shell_id;
    } else {
      const Shell& shell = *it->second;
      command = shell.command;
      output.status = status_locked(shell);
      output.stdout_slice =
          slice_of(shell.out, position ? std::optional(position->stdout_seq) : std::nullopt, limit);
      output.stderr_slice =
          slice_of(shell.err, position ? std::optional(position->stderr_seq) : std::nullopt, limit);
    }
  }
  audit("get_background_shell_output", principal, shell_id, command,
        output.error.empty() ? "allowed" : "refused", output.error,
        output.status.exit_code.value_or(-1));
  return output;
}

std::optional<BackgroundShellStatus> BackgroundShells::status(const std::string& shell_id,
                                                              const std::string& principal) {
  std::optional<BackgroundShellStatus> status;
  {
    std::lock_guard lock(mutex_);
    evict_finished_locked();
    if (const auto it = shells_.find(shell_id); it != shells_.end() && it->second)
      status = status_locked(*it->second);
  }
  audit("get_background_shell_status", principal, shell_id, status ? status->command : "",
        status ? "allowed" : "refused", status ? "" : "Shell not found: " + shell_id,
        status ? status->exit_code.value_or(-1) : -1);
  return status;
}

BackgroundKillResult BackgroundShells::kill(const std::string& shell_id,
                                            const std::string& principal) {
  BackgroundKillResult result;
  std::shared_ptr<Shell> shell;
  {
    std::lock_guard lock(mutex_);
    if (const auto it = shells_.find(shell_id); it != shells_.end() && it->second) {
      shell = it->second;
      result.was_running = !shell->exited;
      if (result.was_running) shell->kill_requested = true;
    } else {
      result.error = "Shell not found: " + shell_id;
    }
  }
  if (shell && result.was_running) {
    // Returns after the tree is gone and on_exit() ran.
    processes_.terminate_background(shell->handle, config_.kill_grace);
  }
  if (shell) {
    std::unique_lock lock(mutex_);
    // A backend that breaks its contract (returns before on_exit) gets a bounded wait, not a hang.
    exited_.wait_for(lock, config_.kill_grace + std::chrono::seconds(10),
                     [&] { return shell->exited; });
    result.status = status_locked(*shell);
    result.forced = shell->exit_info.signal == SIGKILL;
  }
  audit("kill_background_shell", principal, shell_id, shell ? shell->command : "",
        result.error.empty() ? "allowed" : "refused", result.error,
        result.status.exit_code.value_or(-1));
  return result;
}

std::vector<BackgroundShellStatus> BackgroundShells::list(const std::string& principal) {
  std::vector<BackgroundShellStatus> list;
  {
    std::lock_guard lock(mutex_);
    evict_finished_locked();
    for (const auto& [id, shell] : shells_) {
      if (shell) list.push_back(status_locked(*shell));
    }
  }
  std::sort(list.begin(), list.end(),
            [](const auto& a, const auto& b) { return a.start_time < b.start_time; });
  audit("list_background_shells", principal, {}, {}, "allowed", {}, 0);
  return list;
}

void BackgroundShells::close() noexcept {
  try {
    std::vector<std::uint64_t> handles;
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      for (const auto& [id, shell] : shells_) {
        if (shell && !shell->exited) {
          shell->kill_requested = true;
          handles.push_back(shell->handle);
        }
      }
    }
    for (const std::uint64_t handle : handles)
      processes_.terminate_background(handle, std::chrono::milliseconds(0));
    std::unique_lock lock(mutex_);
    const bool done = exited_.wait_for(lock, std::chrono::seconds(30),
                                       [&] { return starting_ == 0 && running_locked() == 0; });
    if (!done) spdlog::error("background shells: some did not report their end within 30 s");
  } catch (...) {
    spdlog::error("background shells: closing failed");
  }
}

std::string lexical_work_dir(const std::string& cwd, const std::string& work_dir) {
  namespace fs = std::filesystem;
  if (work_dir.empty()) return cwd;
  return (fs::path(cwd) / work_dir).lexically_normal().string();
}

}  // namespace execmcp::host
