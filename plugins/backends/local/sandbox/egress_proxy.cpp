// The local sandbox's egress proxy (see egress_proxy.hpp).
#include "egress_proxy.hpp"

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "spawner_thread.hpp"
#include "supervision/stream_relay.hpp"

namespace execmcp::plugins::local::sandbox {
namespace {

namespace fs = std::filesystem;
namespace sv = supervision;

constexpr const char* kPageName = "ERR_EXECMCP_EGRESS_DENIED";
constexpr const char* kTemplates = "/usr/share/squid/errors/templates";
constexpr std::size_t kKeptDiagnostics = 4096;

bool write_owned(const std::string& path, const std::string& text, uid_t uid, gid_t gid) {
  {
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out) return false;
  }
  return ::chmod(path.c_str(), 0400) == 0 && ::chown(path.c_str(), uid, gid) == 0;
}

// A SIGKILLed Squid leaves its shared-memory segments (/dev/shm/<service>-*.shm) behind.
void remove_segments(const std::string& service) {
  std::error_code ec;
  const std::string prefix = service + "-";
  for (const auto& entry : fs::directory_iterator("/dev/shm", ec))
    if (entry.path().filename().string().starts_with(prefix)) fs::remove(entry.path(), ec);
}

class RunningProxy final : public EgressProxy {
 public:
  ~RunningProxy() override { stop(); }

  [[nodiscard]] const std::string& socket_path() const override { return socket_; }
  [[nodiscard]] pid_t squid_pid() const override { return pid_; }
  [[nodiscard]] std::uint16_t squid_port() const override { return port_; }
  [[nodiscard]] std::uint64_t connections() const override { return connections_.load(); }
  void settle(std::chrono::milliseconds quiet) override;

  void stop() noexcept override {
    if (relay_) relay_->stop();
    relay_.reset();
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);  // nothing to save: no cache, no files
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      pid_ = -1;
    }
    if (reader_.joinable()) reader_.join();  // EOF on both pipes now
    if (!service_.empty()) remove_segments(std::exchange(service_, std::string()));
    for (int& fd : {std::ref(out_fd_), std::ref(err_fd_)})
      if (fd >= 0) ::close(std::exchange(fd, -1));
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
      dir_.clear();
    }
  }

  std::string diagnostics() {
    std::lock_guard lock(mutex_);
    return err_text_;
  }

  bool setup(const EgressProxySpec& spec, std::string& error);

 private:
  bool make_dir(const EgressProxySpec& spec, std::string& error);
  bool spawn(const EgressProxySpec& spec, const std::string& squid, std::string& error);
  bool wait_ready(std::string& error);
  void read_logs(std::function<void(const docker_common::EgressLogRecord&)> on_record);

  std::string dir_, socket_, service_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
  int out_fd_ = -1, err_fd_ = -1;
  std::thread reader_;
  std::mutex mutex_;  // guards the three below
  std::condition_variable activity_;
  std::chrono::steady_clock::time_point last_line_{};  // when the access log last said something
  bool reading_ = false;                               // the reader thread reads
  std::string err_text_;
  std::atomic<std::uint64_t> connections_{0};
  std::unique_ptr<sv::StreamRelay> relay_;
};

bool RunningProxy::make_dir(const EgressProxySpec& spec, std::string& error) {
  std::string tmpl = spec.base_dir + "/execmcp-egress-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    error =
        "egress proxy: cannot make a directory in " + spec.base_dir + ": " + std::strerror(errno);
    return false;
  }
  dir_ = tmpl;
  const std::string errors = dir_ + "/errors";
  std::error_code ec;
  fs::create_directory(errors, ec);
  // Squid's own pages stay as they are; the refusal page is ours (error_directory replaces the
  // whole set, so the templates are linked in).
  for (const auto& entry : fs::directory_iterator(kTemplates, ec))
    fs::create_symlink(entry.path(), errors + "/" + entry.path().filename().string(), ec);
  if (!write_owned(errors + "/" + kPageName,
                   docker_common::render_egress_error_page(spec.policy, spec.agent_label), spec.uid,
                   spec.gid) ||
      ::chown(errors.c_str(), spec.uid, spec.gid) != 0 || ::chmod(dir_.c_str(), 0700) != 0 ||
      ::chown(dir_.c_str(), spec.uid, spec.gid) != 0) {
    error = "egress proxy: cannot prepare " + dir_ + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool RunningProxy::spawn(const EgressProxySpec& spec, const std::string& squid,
                         std::string& error) {
  // A free port of the host's loopback (Squid binds it a moment later; a clash fails the start).
  const int probe = sv::listen_tcp_loopback(0);
  port_ = probe >= 0 ? sv::local_port(probe) : 0;
  if (probe >= 0) ::close(probe);
  if (port_ == 0) {
    error = std::string("egress proxy: no free loopback port: ") + std::strerror(errno);
    return false;
  }
  std::string conf = docker_common::render_squid_conf(
      spec.policy, spec.agent_label, {"127.0.0.1/32"}, "127.0.0.1:" + std::to_string(port_));
  conf += "error_directory " + dir_ + "/errors\n";
  if (!spec.hosts_file.empty()) conf += "hosts_file " + spec.hosts_file + "\n";
  const std::string conf_path = dir_ + "/squid.conf";
  if (!write_owned(conf_path, conf, spec.uid, spec.gid)) {
    error = "egress proxy: cannot write " + conf_path + ": " + std::strerror(errno);
    return false;
  }
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return (error = "egress proxy: pipe failed", false);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return (error = "egress proxy: pipe failed", false);
  }
  // Squid reopens its log paths (/dev/stdout): the pipes must be the uid's to be opened again.
  const bool owned =
      ::fchown(out[1], spec.uid, spec.gid) == 0 && ::fchown(err[1], spec.uid, spec.gid) == 0;
  out_fd_ = out[0];
  err_fd_ = err[0];
  const bool drop = ::geteuid() == 0;
  // A service name of its own (the directory's random suffix): Squid names its shared-memory
  // segments after it, so no other Squid's segments (another sandbox's, or what a killed one left
  // under another uid) are in the way, and stop() knows which to remove.
  service_ = "execmcp" + dir_.substr(dir_.rfind('-') + 1);
  std::vector<std::string> args{squid, "-N", "-n", service_, "-f", conf_path};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char* const envp[] = {nullptr};
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const uid_t uid = spec.uid;
  const gid_t gid = spec.gid;
  const char* dir = dir_.c_str();
  const pid_t parent = ::getpid();
  const std::vector<int>& cgroup_procs = spec.cgroup_procs;
  if (owned && devnull >= 0) {
    // On the spawner thread: PR_SET_PDEATHSIG follows the thread that forked (spawner_thread.hpp).
    pid_ = fork_on_spawner_thread([&] {
      const pid_t pid = ::fork();
      if (pid != 0) return pid;
      for (int fd : cgroup_procs)  // into the sandbox's cgroup first: "0" is the writer itself
        if (::write(fd, "0", 1) != 1) ::_exit(125);
      if (::dup2(devnull, 0) < 0 || ::dup2(out[1], 1) < 0 || ::dup2(err[1], 2) < 0) ::_exit(126);
      ::syscall(SYS_close_range, 3U, ~0U, 0U);
      if (drop && (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0))
        ::_exit(126);
      // After the uid change, which clears the death signal; Squid goes with the server.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent || ::chdir(dir) != 0) ::_exit(126);
      ::execve(argv[0], argv.data(), envp);
      ::_exit(127);
    });
  }
  const int saved = errno;
  ::close(out[1]);
  ::close(err[1]);
  if (devnull >= 0) ::close(devnull);
  if (pid_ < 0) {
    error = std::string("egress proxy: cannot start ") + squid + ": " + std::strerror(saved);
    return false;
  }
  return true;
}

void RunningProxy::read_logs(std::function<void(const docker_common::EgressLogRecord&)> on_record) {
  struct Done {
    RunningProxy& self;
    ~Done() {
      {
        std::lock_guard lock(self.mutex_);
        self.reading_ = false;
      }
      self.activity_.notify_all();
    }
  } done{*this};
  std::string lines[2];
  bool open[2] = {true, true};
  const int fds[2] = {out_fd_, err_fd_};
  while (open[0] || open[1]) {
    pollfd p[2] = {{open[0] ? fds[0] : -1, POLLIN, 0}, {open[1] ? fds[1] : -1, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < 2; ++i) {
      if (p[i].revents == 0) continue;
      char buf[4096];
      const ssize_t n = ::read(fds[i], buf, sizeof buf);
      if (n <= 0) {
        open[i] = false;
        continue;
      }
      if (i == 1) {
        std::lock_guard lock(mutex_);
        err_text_.append(buf, static_cast<std::size_t>(n));
        if (err_text_.size() > kKeptDiagnostics)
          err_text_.erase(0, err_text_.size() - kKeptDiagnostics);
        continue;
      }
      lines[0].append(buf, static_cast<std::size_t>(n));
      for (auto nl = lines[0].find('\n'); nl != std::string::npos; nl = lines[0].find('\n')) {
        const auto record = docker_common::parse_egress_log_line(lines[0].substr(0, nl));
        lines[0].erase(0, nl + 1);
        if (record && on_record) on_record(*record);
      }
      {
        std::lock_guard lock(mutex_);  // after on_record: what settle() waits for is delivered
        last_line_ = std::chrono::steady_clock::now();
      }
      activity_.notify_all();
    }
  }
}

void RunningProxy::settle(std::chrono::milliseconds quiet) {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(mutex_);
  const auto called = Clock::now();
  const auto give_up = called + 8 * quiet;
  while (reading_) {
    const auto settled = std::max(called, last_line_) + quiet;
    const auto now = Clock::now();
    if (now >= settled || now >= give_up) break;
    activity_.wait_until(lock, std::min(settled, give_up));
  }
}

bool RunningProxy::wait_ready(std::string& error) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    const int fd = sv::connect_tcp_loopback(port_);
    if (fd >= 0) {
      ::close(fd);
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (pid_ > 0) ::kill(pid_, SIGKILL);
  if (reader_.joinable() && pid_ > 0) {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  if (reader_.joinable()) reader_.join();
  std::string said = diagnostics();
  const auto fatal = said.find("FATAL");
  if (fatal != std::string::npos) said = said.substr(fatal);
  error = "egress proxy: Squid did not start listening on 127.0.0.1:" + std::to_string(port_) +
          (said.empty() ? std::string() : ": " + said.substr(0, 500));
  return false;
}

bool RunningProxy::setup(const EgressProxySpec& spec, std::string& error) {
  if (spec.uid == 0) return (error = "egress proxy: refusing to run Squid as root", false);
  const std::string squid = spec.squid.empty() ? find_squid() : spec.squid;
  if (squid.empty())
    return (error =
                "egress proxy: squid not found (/usr/sbin/squid); install it: "
                "scripts/install-deps.sh (apt-get install squid, its service kept off)",
            false);
  if (!make_dir(spec, error) || !spawn(spec, squid, error)) return false;
  reading_ = true;  // before the thread, which clears it at its end
  reader_ = std::thread([this, on_record = spec.on_record] { read_logs(on_record); });
  if (!wait_ready(error)) return false;
  socket_ = dir_ + "/egress.sock";
  const int listener = sv::listen_unix(socket_);
  if (listener < 0 || ::chown(socket_.c_str(), spec.uid, spec.gid) != 0 ||
      ::chmod(socket_.c_str(), 0600) != 0) {
    error = "egress proxy: cannot listen on " + socket_ + ": " + std::strerror(errno);
    if (listener >= 0) ::close(listener);
    return false;
  }
  const std::uint16_t port = port_;
  relay_ = std::make_unique<sv::StreamRelay>(
      listener,
      [this, port] {
        connections_.fetch_add(1);  // stop() ends the relay before this object goes
        return sv::connect_tcp_loopback(port);
      },
      sv::kEgressRelayConnections);
  return true;
}

}  // namespace

std::unique_ptr<EgressProxy> EgressProxy::start(const EgressProxySpec& spec, std::string& error) {
  auto proxy = std::make_unique<RunningProxy>();
  if (!proxy->setup(spec, error)) {
    proxy->stop();
    return nullptr;
  }
  return proxy;
}

std::vector<std::string> egress_client_env() {
  const std::string url = "http://127.0.0.1:" + std::to_string(sv::kEgressRelayPort);
  const std::string local = "localhost,127.0.0.1,::1";
  return {"HTTP_PROXY=" + url,  "HTTPS_PROXY=" + url, "http_proxy=" + url,
          "https_proxy=" + url, "NO_PROXY=" + local,  "no_proxy=" + local};
}

std::string find_squid() {
  const char* env = std::getenv("EXECMCP_SQUID");
  const std::string path = env != nullptr && *env != '\0' ? env : "/usr/sbin/squid";
  return ::access(path.c_str(), X_OK) == 0 ? path : std::string();
}

}  // namespace execmcp::plugins::local::sandbox
