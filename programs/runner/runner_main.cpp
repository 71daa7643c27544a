// execmcp-runner: the docker-api backend's agent inside each container. The backend starts it once
// per container with one Engine exec and keeps that exec's stream open; every command and file
// tool call then travels over it as frames (supervision/runner_protocol.hpp) instead of costing an
// exec of its own; the file tools' calls it does itself (runner_files.hpp), with no shell. Commands
// run exactly as the local backend runs them on the host: each under a subreaper spare of a spare
// pool (supervision/spare_pool.cpp) that this same program provides when started with the pool's
// argument, killed as a whole tree, output capped and streamed.
//
//   backend ══ hijacked exec stream ══▶ execmcp-runner (one thread per call)
//                                          └─ spare pool (execmcp-runner --execmcp-supervisor-…)
//                                               └─ spare (subreaper) ─▶ shell ─▶ the command
//
// Linked statically, so it runs in any image with whatever C library, or none. Everything it
// knows about a call comes from the backend; what the commands do cannot reach the channel (they
// get their own pipes, never the runner's descriptors).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runner_files.hpp"
#include "runner_listen.hpp"
#include "supervision/landlock_rules.hpp"
#include "supervision/runner_protocol.hpp"
#include "supervision/spare_pool.hpp"
#include "supervision/stream_relay.hpp"
#include "supervision/supervisor_client.hpp"

extern char** environ;

namespace execmcp::plugins::runner_program {
namespace {

namespace sv = supervision;
namespace rp = supervision::runner;

// Bytes of stdin one call may send before it starts (write_file's data).
constexpr std::size_t kMaxStdin = std::size_t{1} << 30;

void say(const std::string& text) {
  const std::string line = "execmcp-runner: " + text + "\n";
  [[maybe_unused]] auto n = ::write(2, line.data(), line.size());
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// The channel's sending half: whole frames, one writer at a time.
class Outbox {
 public:
  explicit Outbox(int fd) : fd_(fd) {}
  void send(rp::FrameType type, std::uint32_t call, std::string_view payload) {
    std::string frame;
    frame.reserve(rp::kHeaderSize + payload.size());
    rp::append_frame(frame, type, call, payload);
    std::lock_guard lock(mutex_);
    if (!broken_ && !write_all(fd_, frame)) broken_ = true;  // the backend is gone: reads end too
  }

 private:
  int fd_;
  std::mutex mutex_;
  bool broken_ = false;
};

// Streams one call's output to the backend as it comes (the supervisor has already capped it).
class FrameSink final : public sdk::OutputSink {
 public:
  FrameSink(Outbox& outbox, std::uint32_t call) : outbox_(outbox), call_(call) {}
  void on_output(sdk::StreamKind kind, std::string_view data) noexcept override {
    const auto type =
        kind == sdk::StreamKind::Stdout ? rp::FrameType::kStdout : rp::FrameType::kStderr;
    try {
      while (!data.empty()) {
        const auto n = std::min(data.size(), rp::kMaxPayload);
        outbox_.send(type, call_, data.substr(0, n));
        data.remove_prefix(n);
      }
    } catch (...) {
      // Out of memory: the bytes are lost; the call still ends with its report.
    }
  }

 private:
  Outbox& outbox_;
  std::uint32_t call_;
};

struct Call {
  rp::RunSpec spec;
  std::optional<rp::FileRequest> file;  // a file call (kFile), not a command
  std::string stdin_data;
  bool has_stdin = false;
  bool started = false;
  sdk::CancelToken cancel;
  // Filled by the call's thread when it starts; the reading thread sets only term_grace, before
  // it raises `cancel` (RunControl::term_grace says why that is safe).
  sv::RunControl control;
};

// Reads a small /proc file; "" when it cannot.
std::string read_proc(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// False when the container's init chain (PID 1, its child, that one's child...: docker-init, tini,
// the container's command) has a member that is exiting or dead: the container is going down
// (a command signalled PID 1) and a command started now would be killed with it. True when it
// cannot tell (no /proc/<pid>/task/<pid>/children). The walk ends at the runner itself: in the
// local sandbox the runner is in that chain (bubblewrap's init, then the runner), and what follows
// it is its own spares and commands, whose ends say nothing about the sandbox.
bool init_alive() {
  const std::string self = std::to_string(::getpid());
  std::string pid = "1";
  for (int depth = 0; depth < 8; ++depth) {
    if (pid == self) return true;
    const std::string stat = read_proc("/proc/" + pid + "/stat");
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size()) return depth > 0;
    const char state = stat[paren + 2];
    if (state == 'Z' || state == 'X' || state == 'x') return false;
    const std::string children = read_proc("/proc/" + pid + "/task/" + pid + "/children");
    const auto end = children.find(' ');
    if (children.empty() || end == 0) return true;  // the leaf is alive
    pid = children.substr(0, end);
  }
  return true;
}

// The command's environment: ours (the container's, as the exec got it), then the call's entries.
std::vector<std::string> environment(const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env[std::string(entry.substr(0, eq))] = entry;
  }
  for (const auto& entry : overrides) env[entry.substr(0, entry.find('='))] = entry;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (auto& [name, entry] : env) out.push_back(std::move(entry));
  return out;
}

// Threads kept between calls, at most `max_threads` of them (then jobs queue): a call starts no
// thread of its own once as many ran at once before. The file calls get 4, so a slow file system
// holds up a few calls, never a command; the commands get as many as run at once (each waits for
// its command to end).
class Workers {
 public:
  explicit Workers(std::size_t max_threads) : max_threads_(max_threads) {}
  ~Workers() { stop(); }
  void post(std::function<void()> job) {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
    if (jobs_.size() > idle_ && threads_.size() < max_threads_)
      threads_.emplace_back([this] { work(); });
    cv_.notify_one();
  }
  // Runs what is queued, then ends every worker.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  void work() {
    std::unique_lock lock(mutex_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // stopping, nothing left
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  const std::size_t max_threads_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;  // only post() and stop() touch it, on the reading thread
  std::size_t idle_ = 0;
  bool stopping_ = false;
};

class Runner {
 public:
  // `watch_init`: check the container's init chain before each command (see init_alive()). A
  // listening runner is that chain's end itself (the task's command): a going-down task signals
  // it, so it does not walk, and on a host (its tests) the walk would read the host's init.
  Runner(std::string self, int in, int out, bool watch_init = true)
      : pool_(std::move(self)), in_(in), outbox_(out), watch_init_(watch_init) {}

  int serve() {
    outbox_.send(rp::FrameType::kHello, 0, rp::kVersion);
    rp::FrameReader reader;
    std::string buf(64 * 1024, '\0');
    int code = 0;
    for (;;) {
      const ssize_t n = ::read(in_, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // the backend closed the channel (or is gone)
      reader.feed(std::string_view(buf.data(), static_cast<std::size_t>(n)));
      while (auto frame = reader.next()) {
        if (!handle(*frame)) {
          code = 3;
          break;
        }
      }
      if (code != 0) break;
      if (!reader.error().empty()) {
        say("malformed frame from the backend: " + reader.error());
        code = 3;
        break;
      }
      join_finished();
    }
    // Whatever still runs is killed: nothing of a call outlives the channel.
    for (auto& [id, call] : calls_) call->cancel.request_cancel();
    commands_.stop();
    files_.stop();
    pool_.shut_down();
    return code;
  }

 private:
  bool handle(rp::Frame& frame) {
    auto it = calls_.find(frame.call);
    switch (frame.type) {
      case rp::FrameType::kRun: {
        auto spec = rp::decode_run(frame.payload);
        if (!spec || it != calls_.end()) {
          say("malformed or duplicate run request for call " + std::to_string(frame.call));
          return false;
        }
        auto call = std::make_unique<Call>();
        call->spec = std::move(*spec);
        calls_.emplace(frame.call, std::move(call));
        return true;
      }
      case rp::FrameType::kFile: {
        auto request = rp::decode_file(frame.payload);
        if (!request || it != calls_.end()) {
          say("malformed or duplicate file request for call " + std::to_string(frame.call));
          return false;
        }
        auto call = std::make_unique<Call>();
        call->file = std::move(*request);
        calls_.emplace(frame.call, std::move(call));
        return true;
      }
      case rp::FrameType::kStdin:
        if (it == calls_.end() || it->second->started) return true;
        if (it->second->stdin_data.size() + frame.payload.size() > kMaxStdin) {
          say("call " + std::to_string(frame.call) + " sent more input than allowed");
          return false;
        }
        it->second->has_stdin = true;
        it->second->stdin_data += frame.payload;
        return true;
      case rp::FrameType::kStdinEnd:
        if (it == calls_.end() || it->second->started) return true;
        start(frame.call, *it->second);
        return true;
      case rp::FrameType::kKill: {
        const auto grace = rp::decode_kill(frame.payload);
        if (!grace) {
          say("malformed kill request for call " + std::to_string(frame.call));
          return false;
        }
        if (it == calls_.end() || it->second->cancel.cancel_requested()) return true;
        it->second->control.term_grace = std::chrono::milliseconds(*grace);
        it->second->cancel.request_cancel();
        return true;
      }
      default:
        say("unexpected frame type " + std::to_string(static_cast<int>(frame.type)));
        return false;
    }
  }

  void start(std::uint32_t id, Call& call) {
    call.started = true;
    if (call.file) {
      files_.post([this, id, &call] {
        const rp::FileReport report = do_file_call(
            *call.file, call.stdin_data,
            [&](std::string_view bytes) { outbox_.send(rp::FrameType::kStdout, id, bytes); });
        call.stdin_data = std::string();
        outbox_.send(rp::FrameType::kFileDone, id, rp::encode_file_done(report));
        std::lock_guard lock(finished_mutex_);
        finished_.push_back(id);
      });
      return;
    }
    commands_.post([this, id, &call] {
      rp::DoneReport report = run(id, call);
      outbox_.send(rp::FrameType::kDone, id, rp::encode_done(report));
      std::lock_guard lock(finished_mutex_);
      finished_.push_back(id);
    });
  }

  rp::DoneReport run(std::uint32_t id, Call& call) {
    rp::DoneReport report;
    if (watch_init_ && !init_alive()) {
      report.not_run = true;
      report.error =
          "the container is going down (its init is exiting); the command was not started";
      return report;
    }
    // Sent before the command starts: a call lost before this frame never ran, so the backend
    // may send it again. (Sent once the shell exists, a command that kills the runner at once
    // would run twice.)
    outbox_.send(rp::FrameType::kStarted, id, {});
    const int dir = ::open(call.spec.work_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) {
      report.error = "work_dir '" + call.spec.work_dir +
                     "' is not a directory inside the container (" + std::strerror(errno) + ")";
      return report;
    }
    sv::SpawnSpec spawn;
    spawn.shell = call.spec.shell;
    spawn.command = call.spec.command;
    spawn.work_dir = call.spec.work_dir;
    spawn.work_dir_fd = dir;
    spawn.env = environment(call.spec.env);
    if (call.has_stdin) spawn.stdin_data = &call.stdin_data;
    FrameSink sink(outbox_, id);
    sv::RunControl& control = call.control;
    control.output_cap = call.spec.output_cap;
    control.sink = &sink;
    control.cancel = &call.cancel;
    // A background process: every byte streams, none is kept, and its pid is told once it runs.
    control.retain_output = call.spec.retain_output;
    // Only a background process's pid is wanted (RunnerCallObserver::on_pid): a command's call
    // saves the frame.
    if (!call.spec.retain_output)
      control.on_started = [this, id](long pid) {
        if (pid > 0 && pid <= 0x3fffffff)
          outbox_.send(rp::FrameType::kPid, id, rp::encode_pid(static_cast<std::uint32_t>(pid)));
      };
    int wait_status = -1;
    sdk::ExecResult r = sv::run_supervised(pool_, spawn, control, &wait_status);
    ::close(dir);
    report.exit_code = r.exit_code;
    report.killed = r.cancelled;
    report.signalled = wait_status != -1 && WIFSIGNALED(wait_status) && r.exit_code > 128;
    report.stdout_truncated = r.stdout_truncated;
    report.stderr_truncated = r.stderr_truncated;
    report.error = std::move(r.error);
    report.notices = std::move(r.notices);
    return report;
  }

  void join_finished() {
    std::vector<std::uint32_t> done;
    {
      std::lock_guard lock(finished_mutex_);
      done.swap(finished_);
    }
    for (auto id : done) calls_.erase(id);  // its job touches it no more
  }

  sv::SupervisorProgram pool_;
  int in_;
  Outbox outbox_;
  std::map<std::uint32_t, std::unique_ptr<Call>> calls_;  // only the reading thread touches it
  // Stopped before calls_ is destroyed: their jobs refer to calls.
  Workers commands_{std::numeric_limits<std::size_t>::max()};
  Workers files_{4};
  std::mutex finished_mutex_;
  std::vector<std::uint32_t> finished_;
  const bool watch_init_;
};

// Inside the local sandbox with `network: egress`: 127.0.0.1:3128 of the sandbox's own network
// namespace, relayed to the proxy's unix socket bound in at `socket_path` (stream_relay.hpp).
// Null and a line on stderr when the port cannot be had.
std::unique_ptr<supervision::StreamRelay> start_egress_relay(const std::string& socket_path) {
  const int listener = supervision::listen_tcp_loopback(supervision::kEgressRelayPort);
  if (listener < 0) {
    say("cannot listen on 127.0.0.1:" + std::to_string(supervision::kEgressRelayPort) +
        " for the egress relay: " + std::strerror(errno));
    return nullptr;
  }
  return std::make_unique<supervision::StreamRelay>(
      listener, [socket_path] { return supervision::connect_unix(socket_path); },
      supervision::kEgressRelayConnections);
}

// `execmcp-runner --execmcp-egress-relay=PATH` alone: the relay in the foreground, nothing else.
int relay_main(const std::string& socket_path) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, nullptr);
  auto relay = start_egress_relay(socket_path);
  if (!relay) return 2;
  for (;;) ::pause();
}

// What both channel modes do first: SIGPIPE ignored (a command that stops reading its stdin, a
// peer gone), every descriptor above 2 closed but those `keep` names (moved above 2, close-on-exec,
// in place), 0 and 1 on /dev/null so nothing we start inherits the channel, "/" as the directory,
// and the egress relay when asked. False (said) when one of them fails.
bool detach(std::vector<int*> keep, const std::string& egress_socket,
            std::unique_ptr<supervision::StreamRelay>& relay) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, nullptr);
  ::syscall(SYS_close_range, 3U, ~0U, 0);
  for (int* fd : keep) *fd = ::fcntl(*fd, F_DUPFD_CLOEXEC, 3);
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  bool ok = null >= 0;
  for (const int* fd : keep) ok = ok && *fd >= 0;
  if (!ok) {
    say(std::string("cannot set up the channel: ") + std::strerror(errno));
    return false;
  }
  ::dup2(null, 0);
  ::dup2(null, 1);
  ::close(null);
  if (::chdir("/") != 0) {
    // Only the commands need a directory, and each gets its own.
  }
  if (!egress_socket.empty()) {
    relay = start_egress_relay(egress_socket);
    if (!relay) return false;
  }
  return true;
}

// The channel on stdin and stdout (an exec's stream, bubblewrap's pipes).
int channel_main(const char* self, const std::string& egress_socket) {
  int in = 0, out = 1;
  std::unique_ptr<supervision::StreamRelay> relay;
  if (!detach({&in, &out}, egress_socket, relay)) return 2;
  return Runner(self, in, out).serve();
}

// The listen mode (runner_listen.hpp): each authenticated connection in turn is the channel.
int network_main(const char* self, const ListenOptions& options, const std::string& egress_socket) {
  std::unique_ptr<supervision::StreamRelay> relay;
  if (!detach({}, egress_socket, relay)) return 2;
  // A channel that ends, or is replaced, kills its calls (serve() does), and the next one starts
  // a runner of its own.
  return listen_main(options, [self](int fd) { Runner(self, fd, fd, false).serve(); });
}

}  // namespace
}  // namespace execmcp::plugins::runner_program

int main(int argc, char** argv) {
  namespace sv = execmcp::plugins::supervision;
  if (sv::is_spare_pool_invocation(argc, argv)) return sv::spare_pool_main(argc, argv);
  // In the local OS sandbox, Landlock rules follow the channel argument (landlock_rules.hpp).
  namespace ll = sv::landlock;
  ll::Rules rules;
  const std::string relay_prefix = sv::kEgressRelayArg;
  const auto relay_arg = [&](const char* arg, std::string& path) {
    if (std::strncmp(arg, relay_prefix.c_str(), relay_prefix.size()) != 0) return false;
    path = arg + relay_prefix.size();
    return !path.empty() && path[0] == '/';
  };
  std::string egress_socket;
  if (argc == 2 && relay_arg(argv[1], egress_socket))
    return execmcp::plugins::runner_program::relay_main(egress_socket);
  // The channel over stdin/stdout, or the listen mode (the channel over the network).
  execmcp::plugins::runner_program::ListenOptions listen;
  int first_optional = 2;
  const bool listening =
      argc >= 3 && argv[0][0] == '/' &&
      execmcp::plugins::runner_program::parse_listen_args(argc, argv, listen, first_optional);
  bool args_ok = listening || (argc >= 2 && argv[0][0] == '/' &&
                               std::strcmp(argv[1], sv::runner::kChannelArg) == 0);
  for (int i = first_optional; args_ok && i < argc; ++i)
    args_ok = relay_arg(argv[i], egress_socket) || ll::parse_arg(argv[i], rules);
  if (!args_ok) {
    const char* text =
        "execmcp-runner is started inside a container by execmcp's docker-api backend of the "
        "same build; it is not meant to be run by hand.\n";
    [[maybe_unused]] auto n = ::write(2, text, std::strlen(text));
    return 2;
  }
  if (!rules.empty()) {
    // Fail closed: asked for Landlock, the runner never serves without it.
    std::string error;
    if (ll::apply(rules, error) == 0) {
      const std::string line = "execmcp-runner: " + error + "; refusing to run without it\n";
      [[maybe_unused]] auto n = ::write(2, line.data(), line.size());
      return 3;
    }
    // In the OS sandbox the commands run as the runner's own uid: not dumpable, their
    // /proc/<runner>/mem and the like are closed to them (seccomp already refuses ptrace).
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  }
  if (listening)
    return execmcp::plugins::runner_program::network_main(argv[0], listen, egress_socket);
  return execmcp::plugins::runner_program::channel_main(argv[0], egress_socket);
}
