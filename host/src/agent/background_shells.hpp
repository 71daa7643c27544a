// One agent's background shells (MassGen's tools): ids, the running limit, statuses, bounded output
// with cursors, retention and cleanup. The backend only runs processes (execmcp.background/1).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/audit_log.hpp"
#include "agent/background_types.hpp"
#include "config/config.hpp"
#include "execmcp/sdk/background_processes.hpp"

namespace execmcp::host {

// The last lines of one output stream, bounded by a line count and a byte count (the first bound
// reached evicts the oldest line). Every complete line gets the next sequence number; the
// unterminated tail is held apart until its newline (or the end of the stream). Not thread-safe.
class LineRing {
 public:
  LineRing(std::size_t max_lines, std::size_t max_bytes);

  void append(std::string_view bytes);
  // The stream ended: an unterminated tail becomes a line.
  void finish();

  // Sequence number of the oldest kept line (= how many were evicted), and of the next line.
  [[nodiscard]] std::uint64_t first_seq() const { return next_seq_ - lines_.size(); }
  [[nodiscard]] std::uint64_t next_seq() const { return next_seq_; }
  [[nodiscard]] const std::string& tail() const { return tail_; }
  [[nodiscard]] std::uint64_t truncated_lines() const { return truncated_lines_; }
  [[nodiscard]] std::size_t kept_bytes() const { return bytes_ + tail_.size(); }
  // The kept line with sequence number `seq` (first_seq() <= seq < next_seq()).
  [[nodiscard]] const std::string& line(std::uint64_t seq) const {
    return lines_[static_cast<std::size_t>(seq - first_seq())];
  }

 private:
  void push_line(std::string line);

  std::size_t max_lines_;
  std::size_t max_bytes_;
  std::deque<std::string> lines_;
  std::size_t bytes_ = 0;  // of lines_
  std::uint64_t next_seq_ = 0;
  std::string tail_;
  bool discarding_ = false;  // the tail reached the line limit: drop up to the newline
  std::uint64_t truncated_lines_ = 0;
};

// `work_dir` against `cwd` without touching the filesystem ("" = cwd): what the host reports as the
// directory when the backend did not say (a refused command, a third-party backend).
[[nodiscard]] std::string lexical_work_dir(const std::string& cwd, const std::string& work_dir);

// Thread-safe. Shells belong to the agent: every caller allowed the agent sees them. Each public
// call writes one audit record through `audit` (filled with the tool, shell id, command, outcome).
class BackgroundShells {
 public:
  using Audit = std::function<void(AuditRecord record)>;

  BackgroundShells(sdk::BackgroundProcesses& processes, BackgroundConfig config, std::string cwd,
                   Audit audit);
  ~BackgroundShells();  // close()
  BackgroundShells(const BackgroundShells&) = delete;
  BackgroundShells& operator=(const BackgroundShells&) = delete;

  // The command has passed the agent's filters.
  BackgroundStartResult start(const std::string& command, const std::string& work_dir,
                              const std::string& principal);
  BackgroundOutput output(const std::string& shell_id, const std::optional<std::string>& cursor,
                          std::optional<std::size_t> max_lines, const std::string& principal);
  std::optional<BackgroundShellStatus> status(const std::string& shell_id,
                                              const std::string& principal);
  // Returns once the process tree is gone.
  BackgroundKillResult kill(const std::string& shell_id, const std::string& principal);
  std::vector<BackgroundShellStatus> list(const std::string& principal);

  // Ends every running shell (no grace) and refuses new ones; returns when all have exited.
  void close() noexcept;

  [[nodiscard]] const BackgroundConfig& config() const { return config_; }

 private:
  class Shell;

  [[nodiscard]] std::string new_id_locked();
  [[nodiscard]] std::size_t running_locked() const;
  void evict_finished_locked();
  [[nodiscard]] BackgroundShellStatus status_locked(const Shell& shell) const;
  void on_exit(Shell& shell, const sdk::BackgroundExit& exit);
  void audit(const std::string& tool, const std::string& principal, const std::string& shell_id,
             const std::string& command, const std::string& verdict, const std::string& error,
             int exit_code = 0) const;

  sdk::BackgroundProcesses& processes_;
  const BackgroundConfig config_;
  const std::string cwd_;
  const Audit audit_;

  // One mutex for the table and every shell's output: the observer calls of one process are
  // serialised by the backend anyway, and one lock makes eviction safe against a late on_exit.
  mutable std::mutex mutex_;
  std::condition_variable exited_;
  std::map<std::string, std::shared_ptr<Shell>> shells_;
  std::deque<std::string> finished_order_;  // ids of finished shells, oldest first
  std::size_t starting_ = 0;                // reserved against the limit while starting
  bool closed_ = false;
};

}  // namespace execmcp::host
