// Spawning, feeding, reading and ending the docker-cli plugin's child processes. The one file with
// Boost.Process (1.74, its v1 API): it only spawns; the descriptors, the poll loop and the reaping
// are ours, because 1.74's pipes lack close-on-exec and its wait_for/terminate are unsafe in a
// threaded server (see the design note of issue 10, section 2).
#include "docker_cli/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>

#include <boost/filesystem/path.hpp>
#include <boost/process/args.hpp>
#include <boost/process/child.hpp>
#include <boost/process/exe.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/posix.hpp>
#include <boost/process/search_path.hpp>

namespace execmcp::plugins::docker_cli {
namespace {

namespace bp = boost::process;
using Clock = std::chrono::steady_clock;

// Boost 1.74 makes its exec-error pipe with pipe() and sets close-on-exec afterwards: a child
// forked by another of our threads in between would keep it open, and this spawn would wait for
// that child to exit. One spawn at a time in this plugin closes the window.
std::mutex& spawn_mutex() {
  static std::mutex mutex;
  return mutex;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Owns a descriptor until released.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { close_fd(fd); }
  int release() {
    const int f = fd;
    fd = -1;
    return f;
  }
};

// The child's ends must not be 0, 1 or 2 already (a server started with one of them closed):
// dup2 onto its own number would keep close-on-exec, and binding 0 could clobber 1's source.
bool above_stdio(Fd& f) {
  if (f.fd > 2) return true;
  const int moved = ::fcntl(f.fd, F_DUPFD_CLOEXEC, 3);
  if (moved < 0) return false;
  close_fd(f.fd);
  f.fd = moved;
  return true;
}

bool set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

int status_of(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

std::vector<boost::filesystem::path> split_path(const std::string& path) {
  std::vector<boost::filesystem::path> dirs;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find(':', start), path.size());
    // An empty entry means the current directory to a shell; never to us.
    if (end > start) dirs.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return dirs;
}

std::string errno_text(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace

// --- Child ---

Child::Child(pid_t pid, int in_fd, int out_fd, int err_fd)
    : pid_(pid), in_fd_(in_fd), out_fd_(out_fd), err_fd_(err_fd) {}

Child::~Child() {
  end();
  if (in_fd_ == out_fd_) in_fd_ = -1;
  close_fd(in_fd_);
  close_fd(out_fd_);
  close_fd(err_fd_);
}

int Child::release_in() {
  const int fd = in_fd_;
  in_fd_ = -1;
  return fd;
}

int Child::release_out() {
  const int fd = out_fd_;
  if (in_fd_ == out_fd_) in_fd_ = -1;  // one socket: handed over once
  out_fd_ = -1;
  return fd;
}

int Child::release_err() {
  const int fd = err_fd_;
  err_fd_ = -1;
  return fd;
}

void Child::close_in() {
  if (in_fd_ < 0) return;
  if (in_fd_ == out_fd_) {
    ::shutdown(in_fd_, SHUT_WR);
    in_fd_ = -1;
    return;
  }
  close_fd(in_fd_);
}

bool Child::reap(bool block) {
  if (status_) return true;
  for (;;) {
    int wstatus = 0;
    const pid_t r = ::waitpid(pid_, &wstatus, block ? 0 : WNOHANG);
    if (r == pid_) {
      status_ = status_of(wstatus);
      return true;
    }
    if (r == 0) return false;
    if (errno == EINTR) continue;
    // ECHILD: someone else reaped it (SIGCHLD set to SIG_IGN in this process); its status is lost.
    status_ = -1;
    return true;
  }
}

std::optional<int> Child::poll_exit() {
  std::lock_guard lock(mutex_);
  reap(false);
  return status_;
}

int Child::wait_exit() {
  std::lock_guard lock(mutex_);
  reap(true);
  return *status_;
}

int Child::end(std::chrono::milliseconds exit_wait, std::chrono::milliseconds term_grace) noexcept {
  std::lock_guard lock(mutex_);
  auto wait_until = [&](Clock::time_point until) {
    for (;;) {
      if (reap(false)) return true;
      const auto now = Clock::now();
      if (now >= until) return false;
      std::this_thread::sleep_for(
          std::min<Clock::duration>(std::chrono::milliseconds(50), until - now));
    }
  };
  if (wait_until(Clock::now() + exit_wait)) return *status_;
  signalled_ = true;
  ::kill(pid_, SIGTERM);  // not yet reaped: the pid is still ours
  if (wait_until(Clock::now() + term_grace)) return *status_;
  ::kill(pid_, SIGKILL);
  reap(true);
  return *status_;
}

// --- ChildLauncher ---

ChildLauncher::ChildLauncher(std::string binary, std::map<std::string, std::string> env)
    : binary_(std::move(binary)), env_(std::move(env)) {
  const std::string path = env_.count("PATH") != 0 ? env_.at("PATH") : std::string();
  if (!binary_.empty() && binary_.front() == '/') {
    if (::access(binary_.c_str(), X_OK) == 0) {
      program_ = binary_;
    } else {
      error_ = "the docker CLI '" + binary_ + "' cannot be run (" + std::strerror(errno) +
               "): install docker.io, or set docker_binary";
    }
    return;
  }
  boost::filesystem::path found;
  try {
    found = bp::search_path(binary_, split_path(path));
  } catch (const std::exception&) {
    found.clear();
  }
  if (found.empty()) {
    error_ = "the docker CLI '" + binary_ + "' was not found in PATH (" + path +
             "): install docker.io, or set docker_binary";
    return;
  }
  program_ = found.string();
}

std::unique_ptr<Child> ChildLauncher::spawn(
    const std::vector<std::string>& args, ChildStdio stdio, std::string& error,
    const std::map<std::string, std::string>* extra_env) const {
  if (!error_.empty()) {
    error = error_;
    return nullptr;
  }
  Fd our_in, our_out, our_err, child_in, child_out, child_err;
  if (stdio.input && stdio.stdin_is_stdout) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      error = errno_text("socketpair");
      return nullptr;
    }
    our_out.fd = sv[0];
    child_out.fd = sv[1];
  } else {
    if (stdio.input) {
      int sv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        error = errno_text("socketpair");
        return nullptr;
      }
      our_in.fd = sv[0];
      child_in.fd = sv[1];
    } else {
      child_in.fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (child_in.fd < 0) {
        error = errno_text("open /dev/null");
        return nullptr;
      }
    }
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) {
      error = errno_text("pipe2");
      return nullptr;
    }
    our_out.fd = p[0];
    child_out.fd = p[1];
  }
  if (!stdio.stderr_is_stdout) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) {
      error = errno_text("pipe2");
      return nullptr;
    }
    our_err.fd = p[0];
    child_err.fd = p[1];
  }
  if (!above_stdio(child_out) || (child_in.fd >= 0 && !above_stdio(child_in)) ||
      (child_err.fd >= 0 && !above_stdio(child_err))) {
    error = errno_text("fcntl");
    return nullptr;
  }
  const int in = child_in.fd >= 0 ? child_in.fd : child_out.fd;
  const int out = child_out.fd;
  const int err = child_err.fd >= 0 ? child_err.fd : child_out.fd;
  if (!set_nonblocking(our_out.fd) || (our_err.fd >= 0 && !set_nonblocking(our_err.fd))) {
    error = errno_text("fcntl");
    return nullptr;
  }

  // The child's whole environment, built from nothing: it inherits no variable of ours. Not with
  // bp::environment: Boost 1.74 compares a name with each entry over the name's length, reading
  // past the end of a shorter entry (ASan saw it). Both maps are keyed, so no name repeats.
  std::vector<std::string> entries;
  entries.reserve(env_.size() + (extra_env != nullptr ? extra_env->size() : 0));
  for (const auto& [k, v] : env_) entries.push_back(k + '=' + v);
  if (extra_env != nullptr)
    for (const auto& [k, v] : *extra_env)
      if (env_.count(k) == 0) entries.push_back(k + '=' + v);  // never one of the CLI's own
  std::vector<char*> envp;
  envp.reserve(entries.size() + 1);
  for (auto& entry : entries) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::error_code ec;
  pid_t pid = -1;
  {
    std::lock_guard lock(spawn_mutex());
    bp::child c(
        bp::exe = program_, bp::args = args,
        bp::extend::on_setup = [&envp](auto& exec) { exec.env = envp.data(); },
        bp::posix::fd.bind(STDIN_FILENO, in), bp::posix::fd.bind(STDOUT_FILENO, out),
        bp::posix::fd.bind(STDERR_FILENO, err),
        bp::extend::on_exec_setup =
            [](auto&) {
              // A group of its own: a terminal's ^C reaches the server, whose clean-up still
              // needs the CLI. Signals as a fresh process has them (a blocked SIGTERM or an
              // ignored SIGPIPE would survive the exec otherwise).
              ::setpgid(0, 0);
              sigset_t none;
              sigemptyset(&none);
              ::sigprocmask(SIG_SETMASK, &none, nullptr);
              ::signal(SIGPIPE, SIG_DFL);
              // Nothing else of the server's crosses the exec, not even a descriptor some
              // library opened without close-on-exec (Boost's own error pipe already has it).
              ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
            },
        ec);
    if (!ec && c.valid()) {
      pid = c.id();
      c.detach();  // its pid is ours to wait for; ~child must not touch it
    }
  }
  if (ec || pid <= 0) {
    error = "cannot start " + program_ + ": " + (ec ? ec.message() : std::string("unknown error"));
    return nullptr;
  }
  const int in_fd = stdio.input ? (stdio.stdin_is_stdout ? our_out.fd : our_in.release()) : -1;
  return std::make_unique<Child>(pid, in_fd, our_out.release(), our_err.release());
}

CliRun ChildLauncher::run(const std::vector<std::string>& args, const std::string* input,
                          std::chrono::milliseconds timeout, std::size_t max_output) const {
  CliRun run;
  ChildStdio stdio;
  stdio.input = input != nullptr;
  auto child = spawn(args, stdio, run.spawn_error);
  if (!child) return run;
  const auto deadline = Clock::now() + timeout;
  std::string_view left = input != nullptr ? std::string_view(*input) : std::string_view();
  if (input != nullptr && left.empty()) child->close_in();
  int out = child->out_fd(), err = child->err_fd();
  char buf[64 * 1024];
  // Reads what is there now; false at the end of the stream (or an error).
  auto drain = [&](int fd, std::string& into) {
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        into.append(buf, std::min<std::size_t>(static_cast<std::size_t>(n),
                                               max_output - std::min(max_output, into.size())));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  };
  bool exited = false;
  while (out >= 0 || err >= 0) {
    const auto now = Clock::now();
    if (now >= deadline) {
      run.timed_out = true;
      break;
    }
    pollfd fds[3];
    nfds_t n = 0;
    if (out >= 0) fds[n++] = {out, POLLIN, 0};
    if (err >= 0) fds[n++] = {err, POLLIN, 0};
    if (child->in_fd() >= 0) fds[n++] = {child->in_fd(), POLLOUT, 0};
    const auto wait = std::min<Clock::duration>(std::chrono::milliseconds(50), deadline - now);
    const int ready = ::poll(
        fds, n, static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count()));
    if (ready < 0 && errno != EINTR) break;
    if (child->in_fd() >= 0) {
      const ssize_t w =
          ::send(child->in_fd(), left.data(), left.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) left.remove_prefix(static_cast<std::size_t>(w));
      // Done, or the child stopped reading (its stderr says why): no more input either way.
      if (left.empty() || (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        child->close_in();
    }
    if (out >= 0 && !drain(out, run.out)) out = -1;
    if (err >= 0 && !drain(err, run.err)) err = -1;
    // A process it started (an ssh master) may hold the streams open after it has exited: its
    // exit ends the run once what it wrote has been read.
    if (exited) break;
    exited = child->poll_exit().has_value();
  }
  if (run.timed_out) {
    run.exit_status = child->end();
    return run;
  }
  // Its output has ended: it is exiting. Wait for that until the deadline.
  for (;;) {
    if (auto status = child->poll_exit()) {
      run.exit_status = *status;
      return run;
    }
    if (Clock::now() >= deadline) {
      run.timed_out = true;
      run.exit_status = child->end();
      return run;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace execmcp::plugins::docker_cli
