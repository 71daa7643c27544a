// The local backend on the host (isolation: none): work_dir and venv resolution, file tools,
// background processes, lifecycle.
#include "host_execution.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "command_environment.hpp"
#include "execmcp/sdk/path_policy.hpp"
#include "skills_link.hpp"
#include "supervision/supervisor_client.hpp"

extern char** environ;  // NOLINT: POSIX

namespace execmcp::plugins::local {

namespace fs = std::filesystem;

namespace {

// What errno means for a path the agent gave, in words that say what to do.
std::string path_error(const std::string& verb, const std::string& path, int error) {
  std::string text = "cannot " + verb + " '" + path + "': ";
  if (error == EXDEV)
    return text + "it leads outside this agent's allowed paths (through a symlink or '..')";
  if (error == ELOOP) return text + "too many symlinks, or a symlink where none may be";
  return text + std::strerror(error);
}

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISLNK(mode)) return "a symlink";
  return "not a regular file";
}

// The absolute path of the directory an open descriptor names, or "" (errno set).
std::string descriptor_path(int fd) {
  char link[64];
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  std::string target(PATH_MAX, '\0');
  const ssize_t n = ::readlink(link, target.data(), target.size());
  if (n <= 0 || static_cast<std::size_t>(n) >= target.size()) {
    if (n >= 0) errno = ENAMETOOLONG;
    return {};
  }
  target.resize(static_cast<std::size_t>(n));
  return target;
}

bool has_protected_paths(const std::vector<GrantRoot>& roots) {
  return std::any_of(roots.begin(), roots.end(),
                     [](const GrantRoot& root) { return !root.protected_paths.empty(); });
}

// Closes a descriptor at the end of a scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

// The protected path recorded with `st`'s device and inode, or null.
const std::string* protected_identity(const struct stat& st, const std::vector<GrantRoot>& roots) {
  for (const auto& root : roots) {
    for (const auto& identity : root.protected_identities) {
      if (identity.dev == st.st_dev && identity.ino == st.st_ino) return &identity.configured;
    }
  }
  return nullptr;
}

// Refuses when `leaf` in `dir_fd`, the directory itself, or any directory above it is a protected
// file or directory by identity, wherever a command moved or linked it. The walk goes up by ".."
// from the descriptor to /, never by name, so a rename meanwhile cannot send it elsewhere.
std::string protected_by_identity(int dir_fd, const std::string& leaf,
                                  const std::vector<GrantRoot>& roots, const std::string& shown) {
  if (std::none_of(roots.begin(), roots.end(),
                   [](const GrantRoot& root) { return !root.protected_identities.empty(); }))
    return {};
  auto refusal = [&](const std::string& configured) {
    return "cannot write '" + shown + "': it is, or is inside, the protected '" + configured +
           "' (moved or linked here): read-only for this agent";
  };
  struct stat st {};
  if (!leaf.empty() && ::fstatat(dir_fd, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (const std::string* hit = protected_identity(st, roots)) return refusal(*hit);
  }
  int error = ELOOP;  // fails closed: a walk that cannot reach / refuses
  int fd = ::openat(dir_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) error = errno;
  for (int level = 0; fd >= 0 && level < 4096; ++level) {
    FdCloser closer{fd};
    if (::fstat(fd, &st) != 0) {
      error = errno;
      break;
    }
    if (const std::string* hit = protected_identity(st, roots)) return refusal(*hit);
    fd = ::openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat above {};
    if (fd < 0 || ::fstat(fd, &above) != 0) {
      error = errno;
      if (fd >= 0) ::close(fd);
      break;
    }
    if (above.st_dev == st.st_dev && above.st_ino == st.st_ino) {  // "/": its own parent
      ::close(fd);
      return {};
    }
  }
  return path_error("write", shown, error);
}

// Refuses (with a message naming `shown`) when `leaf` in the directory `dir_fd` (or the directory
// itself, for an empty leaf) really is at or beneath a protected path, by its real path or by
// identity.
std::string protected_target(int dir_fd, const std::string& leaf,
                             const std::vector<GrantRoot>& roots, const std::string& shown) {
  if (!has_protected_paths(roots)) return {};
  std::string target = descriptor_path(dir_fd);
  if (target.empty()) return path_error("write", shown, errno);
  if (!leaf.empty()) target += (target == "/" ? "" : "/") + leaf;
  const std::string* hit = protected_by(target, roots);
  if (hit == nullptr) return protected_by_identity(dir_fd, leaf, roots, shown);
  return "cannot write '" + shown + "': it leads to '" + target + "', which is protected (" + *hit +
         "): read-only for this agent";
}

constexpr std::size_t kFileChunk = 1024 * 1024;  // cancel is looked at between chunks

}  // namespace

HostExecution::HostExecution(const sdk::BackendInit& init, LocalSettings settings)
    : init_(init),
      grants_(init.paths.empty() ? std::vector<sdk::PathGrant>{{init.cwd, true}} : init.paths),
      roots_(grant_roots(grants_)),
      settings_(std::move(settings)),
      supervisor_(default_supervisor_path()) {
  if (init_.cwd.empty()) throw std::invalid_argument("the agent has no cwd");
}

HostExecution::~HostExecution() {
  stop();
}

void HostExecution::log(sdk::LogLevel level, const std::string& message) const noexcept {
  if (init_.log != nullptr) init_.log->log(level, message);
}

std::string HostExecution::start() {
  if (auto error = supervisor_.check(); !error.empty()) return error;
  std::error_code ec;
  fs::create_directories(init_.cwd, ec);
  if (ec) return "cannot create the agent's cwd '" + init_.cwd + "': " + ec.message();
  if (!fs::is_directory(init_.cwd, ec))
    return "the agent's cwd '" + init_.cwd + "' is not a directory";
  roots_.publish(grant_roots(grants_, roots_.load().get()));
  link_skills(init_);
  return {};
}

HostExecution::OpenedGrant HostExecution::open_grant(const std::string& path,
                                                     sdk::Access access) const {
  OpenedGrant opened;
  opened.roots = roots_.load();
  Location location = locate(path, init_.cwd, *opened.roots, access);
  if (!location.error.empty()) {
    opened.error = location.error;
    return opened;
  }
  opened.root = &(*opened.roots)[location.grant];
  opened.relative = std::move(location.relative);
  // Opened per call, not kept: a grant replaced by a symlink since start fails closed here.
  opened.fd = open_grant_root(opened.root->canonical);
  if (opened.fd < 0)
    opened.error = "the allowed path '" + opened.root->configured +
                   "' cannot be opened: " + std::strerror(-opened.fd);
  return opened;
}

bool HostExecution::abandoned(const sdk::CancelToken* cancel,
                              unsigned stops_at_start) const noexcept {
  return (cancel != nullptr && cancel->cancel_requested()) ||
         stops_.load(std::memory_order_acquire) != stops_at_start;
}

void HostExecution::stop() noexcept {
  stops_.fetch_add(1, std::memory_order_acq_rel);
  stop_background();
  std::unique_lock lock(running_mutex_);
  for (auto& flag : running_) flag.store(true, std::memory_order_release);
  // Each execute() notices within 50 ms and its supervisor kills the tree; bounded wait so a
  // wedged process cannot hang shutdown.
  running_done_.wait_for(lock, std::chrono::seconds(10), [this] { return running_.empty(); });
  if (!running_.empty()) log(sdk::LogLevel::Warn, "local: commands still running after stop()");
  lock.unlock();
  // Running commands keep their own supervisors; a later execute() starts the program again.
  supervisor_.shut_down();
}

void HostExecution::cleanup() noexcept {
  stop();
}

std::string HostExecution::prepare(const std::string& request_command, const Env& request_env,
                                   const std::string& work_dir, std::string& command,
                                   std::vector<std::string>& env_out) const {
  PreparedCommand prepared;
  if (auto error =
          prepare_command(settings_, init_.cwd, request_command, request_env, work_dir, prepared);
      !error.empty())
    return error;
  command = std::move(prepared.command);
  env_out.clear();
  if (!prepared.venv && settings_.env.empty() && request_env.empty()) {
    // Nothing to override (the usual case): the host's environment as it is, without the map.
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const char* eq = std::strchr(*e, '=');
      if (eq != nullptr && eq != *e) env_out.emplace_back(*e);
    }
    return {};
  }
  env_out = command_environment(host_environment(), settings_, prepared.venv, request_env);
  return {};
}

std::string HostExecution::resolve_spawn(const std::string& command, const std::string& work_dir,
                                         const Env& env, SpawnSpec& spec) const {
  spec.work_dir_fd = -1;
  if (command.find('\0') != std::string::npos) return "the command contains a NUL byte";
  // The directory is opened beneath its grant and handed to the supervisor, which fchdir()s to
  // it: nothing renamed after this check can move the command elsewhere.
  OpenedGrant grant = open_grant(work_dir, sdk::Access::Read);
  FdCloser grant_closer{grant.fd};
  if (!grant.error.empty()) return "work_dir: " + grant.error;
  const int dir =
      open_beneath(grant.fd, grant.root->canonical, grant.relative, O_PATH | O_DIRECTORY);
  FdCloser dir_closer{dir};
  if (dir == -EXDEV)
    return "work_dir: path '" + work_dir +
           "' leads outside this agent's allowed paths (through a symlink or '..')";
  if (dir < 0)
    return "work_dir '" + work_dir + "' is not an existing directory (" + std::strerror(-dir) + ")";
  spec.shell = settings_.shell;
  spec.work_dir = (fs::path(grant.root->canonical) / grant.relative).lexically_normal().string();
  // "<root>/" + "" normalises to "<root>/": results name the directory without the trailing '/'.
  if (spec.work_dir.size() > 1 && spec.work_dir.back() == '/') spec.work_dir.pop_back();
  if (auto error = prepare(command, env, spec.work_dir, spec.command, spec.env); !error.empty())
    return error;
  spec.work_dir_fd = dir_closer.fd;  // now the caller's to close
  dir_closer.fd = -1;
  return {};
}

sdk::ExecResult HostExecution::execute(const sdk::ExecRequest& request) {
  sdk::ExecResult refused;
  try {
    SpawnSpec spec;
    refused.error = resolve_spawn(request.command, request.work_dir, request.env, spec);
    FdCloser dir_closer{spec.work_dir_fd};
    if (!refused.error.empty()) return refused;

    std::list<std::atomic<bool>>::iterator flag;
    {
      std::lock_guard lock(running_mutex_);
      running_.emplace_back(false);
      flag = std::prev(running_.end());
    }
    RunControl control;
    control.timeout = request.timeout;
    control.output_cap = request.output_cap;
    control.sink = request.sink;
    control.cancel = request.cancel;
    control.stop = &*flag;
    sdk::ExecResult result = run_supervised(supervisor_, spec, control);
    {
      std::lock_guard lock(running_mutex_);
      running_.erase(flag);
    }
    running_done_.notify_all();
    if (result.error.empty()) result.work_dir = spec.work_dir;
    return result;
  } catch (const std::exception& e) {
    refused.error = std::string("local backend failed: ") + e.what();
  } catch (...) {
    refused.error = "local backend failed";
  }
  return refused;
}

sdk::FileReadResult HostExecution::read_file(const sdk::FileReadRequest& request) {
  sdk::FileReadResult result;
  const unsigned stops = stops_.load(std::memory_order_acquire);
  if (request.cancel != nullptr && request.cancel->cancel_requested()) {
    result.error = "cannot read '" + request.path + "': cancelled";
    return result;
  }
  try {
    OpenedGrant grant = open_grant(request.path, sdk::Access::Read);
    FdCloser grant_closer{grant.fd};
    if (!grant.error.empty()) {
      result.error = grant.error;
      return result;
    }
    // First a look without opening (opening a FIFO blocks, a device may act on it), then the
    // open for reading, which must find the same regular file.
    const int look = open_beneath(grant.fd, grant.root->canonical, grant.relative, O_PATH);
    FdCloser look_closer{look};
    struct stat seen {};
    if (look < 0 || ::fstat(look, &seen) != 0) {
      result.error = path_error("read", request.path, look < 0 ? -look : errno);
      return result;
    }
    if (!S_ISREG(seen.st_mode)) {
      result.error = "cannot read '" + request.path + "': it is " + file_kind(seen.st_mode) +
                     ", not a regular file";
      return result;
    }
    const int fd = open_beneath(grant.fd, grant.root->canonical, grant.relative,
                                O_RDONLY | O_NONBLOCK | O_NOCTTY);
    FdCloser fd_closer{fd};
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      result.error = path_error("read", request.path, fd < 0 ? -fd : errno);
      return result;
    }
    if (!S_ISREG(st.st_mode) || st.st_dev != seen.st_dev || st.st_ino != seen.st_ino) {
      result.error = "cannot read '" + request.path + "': it was replaced while being opened";
      return result;
    }
    std::size_t want = request.max_bytes;
    if (st.st_size >= 0 && static_cast<std::uintmax_t>(st.st_size) < want)
      want = static_cast<std::size_t>(st.st_size);
    result.data.resize(want);
    std::size_t got = 0;
    while (got < want) {
      if (abandoned(request.cancel, stops)) {
        result.error = "cannot read '" + request.path + "': cancelled";
        break;
      }
      const std::size_t chunk = std::min(want - got, kFileChunk);
      ssize_t n = ::read(fd, result.data.data() + got, chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        result.error = path_error("read", request.path, errno);
        break;
      }
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    result.data.resize(got);
    if (result.error.empty() && got == request.max_bytes) {
      char extra;
      ssize_t n;
      while ((n = ::read(fd, &extra, 1)) < 0 && errno == EINTR) {
      }
      result.truncated = n > 0;
    }
    if (!result.error.empty()) result.data.clear();
  } catch (const std::exception& e) {
    result.data.clear();
    result.error = std::string("cannot read '") + request.path + "': " + e.what();
  }
  return result;
}

// Writes into a new file beside the target (O_EXCL, in the same directory descriptor), fsyncs it
// and renames it over the target: the file is either the old one or the whole new one, a hard
// link to the target is never written through, and a full disk leaves the old file as it was.
std::string HostExecution::protected_ancestor(const OpenedGrant& grant,
                                              const std::string& shown) const {
  if (!has_protected_paths(*grant.roots)) return {};
  std::string existing = grant.relative;
  for (;;) {
    const int fd = open_beneath(grant.fd, grant.root->canonical, existing, O_PATH | O_DIRECTORY);
    if (fd >= 0) {
      FdCloser closer{fd};
      return protected_target(fd, "", *grant.roots, shown);
    }
    if (existing.empty()) return {};  // the grant itself: open_parent_beneath says why
    const auto slash = existing.rfind('/');
    existing = slash == std::string::npos ? std::string() : existing.substr(0, slash);
  }
}

sdk::FileWriteResult HostExecution::write_file(const sdk::FileWriteRequest& request) {
  sdk::FileWriteResult result;
  const unsigned stops = stops_.load(std::memory_order_acquire);
  if (request.cancel != nullptr && request.cancel->cancel_requested()) {
    result.error = "cannot write '" + request.path + "': cancelled; the file was left as it was";
    return result;
  }
  try {
    OpenedGrant grant = open_grant(request.path, sdk::Access::Write);
    FdCloser grant_closer{grant.fd};
    if (!grant.error.empty()) {
      result.error = grant.error;
      return result;
    }
    // Directories missing on the way are made, but never inside a protected one (reached by a
    // symlink): where the deepest existing one really is is checked first.
    if (auto refusal = protected_ancestor(grant, request.path); !refusal.empty()) {
      result.error = refusal;
      return result;
    }
    ParentBeneath parent =
        open_parent_beneath(grant.fd, grant.root->canonical, grant.relative, true);
    FdCloser parent_closer{parent.fd};
    if (parent.fd < 0) {
      result.error = parent.error == EISDIR
                         ? "cannot write '" + request.path + "': it is a directory"
                         : path_error("write", request.path, parent.error);
      return result;
    }
    // Where the file really goes, symlinks on the way followed: a link in the workspace that
    // leads into a protected directory is refused here (locate() saw only the path as written).
    if (auto refusal = protected_target(parent.fd, parent.leaf, *grant.roots, request.path);
        !refusal.empty()) {
      result.error = refusal;
      return result;
    }
    mode_t mode = 0644;
    struct stat old {};
    if (::fstatat(parent.fd, parent.leaf.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0) {
      if (!S_ISREG(old.st_mode)) {
        result.error = "cannot write '" + request.path + "': it is " + file_kind(old.st_mode) +
                       ", not a regular file";
        return result;
      }
      // Replacing is not writing through: keep what opening it for writing would have required.
      if (::faccessat(parent.fd, parent.leaf.c_str(), W_OK, AT_EACCESS) != 0) {
        result.error = path_error("write", request.path, errno);
        return result;
      }
      mode = old.st_mode & 07777;
    } else if (errno != ENOENT) {
      result.error = path_error("write", request.path, errno);
      return result;
    }

    std::string temp;
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 16; ++attempt) {
      char name[48];
      std::snprintf(name, sizeof(name), ".execmcp-write-%08x%04x",
                    static_cast<unsigned>(::random()), static_cast<unsigned>(attempt));
      temp = name;
      fd = ::openat(parent.fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0600);
      if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
      result.error = path_error("write", request.path, errno);
      return result;
    }
    FdCloser fd_closer{fd};
    auto fail = [&](int error) {
      if (error == ENOSPC || error == EDQUOT)
        result.error = "cannot write '" + request.path + "': " + std::strerror(error) +
                       " (the file system is full); the file was left as it was";
      else
        result.error = path_error("write", request.path, error);
      ::unlinkat(parent.fd, temp.c_str(), 0);
      return result;
    };
    std::size_t done = 0;
    while (done < request.data.size()) {
      if (abandoned(request.cancel, stops)) {
        fail(ECANCELED);
        result.error =
            "cannot write '" + request.path + "': cancelled; the file was left as it was";
        return result;
      }
      const std::size_t chunk = std::min(request.data.size() - done, kFileChunk);
      ssize_t n = ::write(fd, request.data.data() + done, chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail(errno);
      done += static_cast<std::size_t>(n);
    }
    if (old.st_nlink > 0) {
      // The owner too, where we may (as root, or when it is us already).
      [[maybe_unused]] const int rc = ::fchown(fd, old.st_uid, old.st_gid);
    }
    if (::fchmod(fd, mode) != 0) return fail(errno);
    // Before the rename, so no name ever points at data the disk may not hold.
    if (::fsync(fd) != 0) return fail(errno);
    if (::renameat(parent.fd, temp.c_str(), parent.fd, parent.leaf.c_str()) != 0)
      return fail(errno);
    result.bytes_written = done;
  } catch (const std::exception& e) {
    result.error = std::string("cannot write '") + request.path + "': " + e.what();
  }
  return result;
}

// One background process. Fields marked (m) are guarded by background_mutex_; `control` is the
// thread's, except term_grace, which the first terminate_background() sets (m) before it raises
// `cancel` (run_supervised() reads it only after it saw the cancel).
struct HostExecution::Background {
  enum class State { Starting, Running, Failed, Finished };
  State state = State::Starting;  // (m) Failed: start_background() reports it and reaps it
  long pid = 0;                   // (m)
  std::string failure;            // (m) why it did not start
  bool terminating = false;       // (m) terminate_background() or stop() asked for its end
  int waiters = 0;                // (m) calls holding it (start, terminate): not reaped
  sdk::CancelToken cancel;
  std::atomic<bool> stop{false};
  RunControl control;
  std::jthread thread;  // last: joined before the rest is destroyed
};

namespace {

// Hands the output to the observer once the shell runs; before that (a shell that could not start)
// keeps a little of it to say why.
class BackgroundSink final : public sdk::OutputSink {
 public:
  explicit BackgroundSink(sdk::BackgroundObserver* observer) : observer_(observer) {}
  void on_output(sdk::StreamKind stream, std::string_view chunk) noexcept override {
    if (started) {
      observer_->on_output(stream, chunk);
      return;
    }
    constexpr std::size_t kEarlyMax = 4096;
    if (early.size() < kEarlyMax) early.append(chunk.substr(0, kEarlyMax - early.size()));
  }
  bool started = false;  // set by on_started(), on the same thread
  std::string early;

 private:
  sdk::BackgroundObserver* observer_;
};

}  // namespace

void HostExecution::run_background(Background& process, SpawnSpec spec,
                                   sdk::BackgroundObserver* observer) noexcept {
  FdCloser dir_closer{spec.work_dir_fd};
  BackgroundSink sink(observer);
  sdk::ExecResult result;
  int wait_status = -1;
  try {
    RunControl& control = process.control;
    control.sink = &sink;
    control.cancel = &process.cancel;
    control.stop = &process.stop;
    control.on_started = [&](long pid) {
      sink.started = true;
      {
        std::lock_guard lock(background_mutex_);
        process.pid = pid;
        process.state = Background::State::Running;
      }
      background_changed_.notify_all();
    };
    result = run_supervised(supervisor_, spec, control, &wait_status);
  } catch (const std::exception& e) {
    result.error = std::string("local backend failed: ") + e.what();
  } catch (...) {
    result.error = "local backend failed";
  }
  if (!sink.started) {
    {
      std::lock_guard lock(background_mutex_);
      process.state = Background::State::Failed;
      process.failure = !result.error.empty() ? result.error
                        : !sink.early.empty() ? sink.early
                                              : "the process did not start (exit code " +
                                                    std::to_string(result.exit_code) + ")";
      while (!process.failure.empty() && process.failure.back() == '\n') process.failure.pop_back();
    }
    background_changed_.notify_all();
    return;
  }
  sdk::BackgroundExit exit;
  if (wait_status != -1 && WIFEXITED(wait_status)) exit.exit_code = WEXITSTATUS(wait_status);
  if (wait_status != -1 && WIFSIGNALED(wait_status)) exit.signal = WTERMSIG(wait_status);
  if (wait_status == -1)
    exit.error = result.error.empty() ? "the process's end was not reported" : result.error;
  // Killed only when its supervisor reported the tree gone: a spare killed before it reported
  // (by a command, say) may have left part of the tree running, and that is an error, not a kill.
  exit.killed = result.cancelled && wait_status != -1;
  observer->on_exit(exit);
  {
    std::lock_guard lock(background_mutex_);
    process.state = Background::State::Finished;
  }
  background_changed_.notify_all();
}

sdk::BackgroundStarted HostExecution::start_background(const sdk::BackgroundRequest& request,
                                                       sdk::BackgroundObserver* observer) noexcept {
  sdk::BackgroundStarted started;
  try {
    reap_background();
    if (observer == nullptr) {
      started.error = "no observer for the background process";
      return started;
    }
    SpawnSpec spec;
    started.error = resolve_spawn(request.command, request.work_dir, request.env, spec);
    FdCloser dir_closer{spec.work_dir_fd};
    if (!started.error.empty()) return started;
    started.work_dir = spec.work_dir;

    std::unique_lock lock(background_mutex_);
    const std::uint64_t id = next_background_id_++;
    auto owned = std::make_unique<Background>();
    Background& process = *owned;
    process.control.timeout = std::chrono::milliseconds(0);  // runs until it exits or is ended
    process.control.retain_output = false;                   // the host keeps what it wants
    process.waiters = 1;  // us: not reaped before we read its pid, should it end at once
    background_.emplace(id, std::move(owned));
    dir_closer.fd = -1;  // the thread's now
    try {
      process.thread = std::jthread([this, &process, spec = std::move(spec), observer]() mutable {
        run_background(process, std::move(spec), observer);
      });
    } catch (...) {
      background_.erase(id);
      throw;
    }
    background_changed_.wait(lock, [&] { return process.state != Background::State::Starting; });
    if (process.state == Background::State::Failed) {
      started.error = process.failure;
      started.work_dir.clear();
      auto node = background_.extract(id);
      lock.unlock();
      return started;  // `node` joins the thread, which is done
    }
    started.id = id;
    started.pid = process.pid;
    --process.waiters;
    return started;
  } catch (const std::exception& e) {
    started = {};
    started.error = std::string("cannot start the background process: ") + e.what();
  } catch (...) {
    started = {};
    started.error = "cannot start the background process";
  }
  return started;
}

void HostExecution::terminate_background(std::uint64_t id,
                                         std::chrono::milliseconds grace) noexcept {
  {
    std::unique_lock lock(background_mutex_);
    auto it = background_.find(id);
    if (it == background_.end() || it->second->state != Background::State::Running) return;
    Background& process = *it->second;
    if (!process.terminating) {
      process.terminating = true;
      process.control.term_grace = grace.count() > 0 ? grace : std::chrono::milliseconds(0);
      process.cancel.request_cancel();
    }
    // Kept in the map (not reaped) while we wait, so `process` stays valid.
    ++process.waiters;
    background_changed_.wait(lock, [&] { return process.state == Background::State::Finished; });
    --process.waiters;
  }
  reap_background();
}

void HostExecution::stop_background() noexcept {
  {
    std::unique_lock lock(background_mutex_);
    for (;;) {
      // Looked at anew on every wake: a process started meanwhile is ended too.
      bool running = false;
      for (auto& [id, process] : background_) {
        if (process->state == Background::State::Finished ||
            process->state == Background::State::Failed)
          continue;
        running = true;
        process->terminating = true;
        process->stop.store(true, std::memory_order_release);
      }
      if (!running) break;
      background_changed_.wait(lock);
    }
  }
  reap_background();
}

void HostExecution::reap_background() noexcept {
  std::vector<std::unique_ptr<Background>> done;
  {
    std::lock_guard lock(background_mutex_);
    for (auto it = background_.begin(); it != background_.end();) {
      if (it->second->state == Background::State::Finished && it->second->waiters == 0) {
        done.push_back(std::move(it->second));
        it = background_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Each thread has returned or is about to (it set Finished last): joined here, unlocked.
}

}  // namespace execmcp::plugins::local
