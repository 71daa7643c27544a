// The docker-swarm tests' and bench's cluster (swarm_cluster.hpp).
#include "swarm_cluster.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

extern char** environ;

namespace execmcp::tests::swarm {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr const char* kClusterLabel = "org.execmcp.swarm-cluster";
constexpr const char* kOwnerLabel = "execmcp.owner.host";
constexpr const char* kDefaultImage = "execmcp/swarm-runner-test:latest";

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!trim(line).empty()) out.push_back(trim(line));
  return out;
}

// The script's "swarm-cluster: skip: <why>" line (exit 77), or its stderr's last line.
std::string skip_line(const std::string& err) {
  const std::string mark = "skip: ";
  const auto at = err.rfind(mark);
  if (at != std::string::npos) return trim(err.substr(at + mark.size()));
  const auto all = lines(err);
  return all.empty() ? std::string("no reason given") : all.back();
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

int thread_count() {
  std::error_code ec;
  int n = 0;
  for (auto it = fs::directory_iterator("/proc/self/task", ec); !ec && it != fs::end(it);
       it.increment(ec))
    ++n;
  return n;
}

}  // namespace

std::string CommandResult::describe() const {
  auto tail = trim(err);
  if (tail.size() > 600) tail = "..." + tail.substr(tail.size() - 600);
  return "exit " + std::to_string(status) + ": " + (tail.empty() ? trim(out) : tail);
}

CommandResult run_command(const std::vector<std::string>& argv, const std::string& input,
                          std::chrono::seconds limit, const std::vector<std::string>& env) {
  CommandResult result;
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return result;
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    result.err = std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) envs.emplace_back(*e);
  envs.insert(envs.end(), env.begin(), env.end());
  std::vector<char*> cenv;
  for (auto& e : envs) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (spawned != 0) {
    ::close(in[1]);
    ::close(out[0]);
    ::close(err[0]);
    result.err = "cannot run " + argv[0] + ": " + std::strerror(spawned);
    return result;
  }
  set_nonblocking(in[1]);
  std::size_t written = 0;
  int to_child = in[1];
  if (input.empty()) {
    ::close(to_child);
    to_child = -1;
  }
  int fds[2] = {out[0], err[0]};
  std::string* sinks[2] = {&result.out, &result.err};
  const auto deadline = Clock::now() + limit;
  bool timed_out = false;
  while (fds[0] >= 0 || fds[1] >= 0 || to_child >= 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p[3];
    int n = 0;
    for (int fd : fds)
      if (fd >= 0) p[n++] = {fd, POLLIN, 0};
    if (to_child >= 0) p[n++] = {to_child, POLLOUT, 0};
    if (::poll(p, static_cast<nfds_t>(n), static_cast<int>(left)) < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (p[i].revents == 0) continue;
      if (p[i].fd == to_child) {
        const ssize_t w = ::write(to_child, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<std::size_t>(w);
        if (w < 0 && errno != EAGAIN) written = input.size();
        if (written >= input.size()) {
          ::close(to_child);
          to_child = -1;
        }
        continue;
      }
      for (int k = 0; k < 2; ++k) {
        if (p[i].fd != fds[k]) continue;
        char buf[8192];
        const ssize_t r = ::read(fds[k], buf, sizeof buf);
        if (r > 0) {
          sinks[k]->append(buf, static_cast<std::size_t>(r));
        } else if (r == 0 || errno != EINTR) {
          ::close(fds[k]);
          fds[k] = -1;
        }
      }
    }
  }
  if (to_child >= 0) ::close(to_child);
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    result.err += "\n(killed: no end within " + std::to_string(limit.count()) + " s)";
    return result;
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::vector<SwarmNode> SwarmCluster::workers() const {
  return {nodes_.begin() + (nodes_.empty() ? 0 : 1), nodes_.end()};
}

CommandResult SwarmCluster::script(const std::vector<std::string>& args,
                                   const std::string& input) const {
  std::vector<std::string> argv{std::string(EXECMCP_SOURCE_DIR) + "/scripts/swarm-cluster.sh"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, input, std::chrono::seconds(240), {"EXECMCP_SWARM_PREFIX=" + prefix_});
}

CommandResult SwarmCluster::docker(int node, const std::vector<std::string>& args,
                                   const std::string& input) const {
  std::vector<std::string> argv{"docker", "exec"};
  if (!input.empty()) argv.emplace_back("-i");
  argv.push_back(prefix_ + "-node" + std::to_string(node));
  argv.emplace_back("docker");
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, input);
}

std::string SwarmCluster::netns_path(int node, const std::string& container,
                                     std::string& error) const {
  const auto r = docker(node, {"inspect", "-f", "{{.NetworkSettings.SandboxKey}}", container});
  const std::string key = trim(r.out);
  if (!r.ok() || key.empty()) {
    error = "no network namespace for " + container + " on node " + std::to_string(node) + ": " +
            r.describe();
    return {};
  }
  // The key is /var/run/docker/netns/<id> in the node, and /var/run is an absolute link to /run
  // there, which would resolve in the host's root under /proc/<pid>/root (design §11.10).
  const auto slash = key.rfind('/');
  return "/proc/" + std::to_string(this->node(node).pid) + "/root/run/docker/netns/" +
         key.substr(slash + 1);
}

void SwarmCluster::start() {
  prefix_ = "execmcp-swarm-" + std::to_string(::getpid());
  const auto t0 = Clock::now();
  ready_ = set_up();
  if (ready_) {
    std::printf("[swarm] cluster %s ready in %.1f s (start %.1f s, load %s %.1f s)\n",
                prefix_.c_str(), seconds_since(t0), start_seconds, image_.c_str(), load_seconds);
  } else {
    std::printf("[swarm] no cluster: %s\n", reason_.c_str());
  }
  std::fflush(stdout);
}

bool SwarmCluster::set_up() {
  if (env_or("EXECMCP_SWARM_TESTS", "1") == "0" || env_or("EXECMCP_DOCKER_TESTS", "1") == "0") {
    skip("EXECMCP_SWARM_TESTS=0 or EXECMCP_DOCKER_TESTS=0");
    return false;
  }
  if (::geteuid() != 0) {
    skip(
        "needs root: the test joins a node container's network namespace (setns) and reaches "
        "node 1's engine through /proc/<pid>/root");
    return false;
  }
  if (!run_command({"docker", "version"}, {}, std::chrono::seconds(30)).ok()) {
    skip("no Docker engine answers (scripts/docker-engine.sh start)");
    return false;
  }
  if (!build_image()) return false;
  start_watchdog();
  if (!start_cluster()) return false;
  if (!find_nodes()) return false;
  if (!start_shim()) return false;
  return join_shim_netns();
}

bool SwarmCluster::build_image() {
  image_ = env_or("EXECMCP_SWARM_TEST_IMAGE", kDefaultImage);
  if (image_ != kDefaultImage) return true;
  // Up to date in a fraction of a second; rebuilt (a few seconds) when the runner changed.
  const auto r = run_command({std::string(EXECMCP_SOURCE_DIR) + "/docker/build.sh", "--swarm-test",
                              "--runner", EXECMCP_RUNNER_PATH},
                             {}, std::chrono::seconds(300));
  if (!r.ok()) fail("docker/build.sh --swarm-test failed: " + r.describe());
  return r.ok();
}

// A process of its own session that stops the cluster when this one ends without saying "done"
// (a crash, an abort, a timeout's kill): the read end of a pipe only this process writes.
void SwarmCluster::start_watchdog() {
  int p[2];
  if (::pipe(p) != 0) return;
  ::fcntl(p[1], F_SETFD, FD_CLOEXEC);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, p[0], 0);
  posix_spawn_file_actions_addclose(&actions, p[0]);
  // Not the test's stdout: ctest would wait for the watchdog to close it.
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  const std::string script = std::string(EXECMCP_SOURCE_DIR) + "/scripts/swarm-cluster.sh";
  std::string body = "read -r said; [ \"$said\" = done ] || EXECMCP_SWARM_PREFIX='" + prefix_ +
                     "' '" + script + "' stop >/dev/null 2>&1";
  std::vector<std::string> args{"/bin/sh", "-c", body};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawn(&pid, "/bin/sh", &actions, &attr, argv.data(), environ) == 0) {
    watchdog_fd_ = p[1];
  } else {
    ::close(p[1]);
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(p[0]);
}

bool SwarmCluster::start_cluster() {
  auto t0 = Clock::now();
  started_ = true;
  auto r = script({"start", "--nodes", "3"});
  start_seconds = seconds_since(t0);
  if (r.status == 77) {
    skip(skip_line(r.err));
    return false;
  }
  if (!r.ok()) {
    fail("swarm-cluster.sh start: " + r.describe());
    return false;
  }
  t0 = Clock::now();
  r = script({"load", image_});
  load_seconds = seconds_since(t0);
  if (!r.ok()) fail("swarm-cluster.sh load " + image_ + ": " + r.describe());
  return r.ok();
}

bool SwarmCluster::find_nodes() {
  for (int n = 1; n <= 3; ++n) {
    SwarmNode node;
    node.number = n;
    node.name = prefix_ + "-node" + std::to_string(n);
    const auto r = run_command({"docker", "inspect", "-f", "{{.State.Pid}}", node.name});
    node.pid = r.ok() ? std::atoi(r.out.c_str()) : 0;
    if (node.pid <= 0) {
      fail("no pid for " + node.name + ": " + r.describe());
      return false;
    }
    nodes_.push_back(node);
  }
  docker_host_ = "unix:///proc/" + std::to_string(nodes_[0].pid) + "/root/run/docker.sock";
  const auto r = docker(1, {"node", "ls", "--format", "{{.ID}} {{.Hostname}}"});
  if (!r.ok()) {
    fail("docker node ls: " + r.describe());
    return false;
  }
  for (const auto& line : lines(r.out)) {
    const auto space = line.find(' ');
    for (auto& node : nodes_)
      if (line.substr(space + 1) == node.name) node.id = line.substr(0, space);
  }
  for (const auto& node : nodes_) {
    if (node.id.empty()) {
      fail("the manager does not list " + node.name + ": " + r.out);
      return false;
    }
  }
  return true;
}

// The shim sits on node 1's default bridge, a real network: a container on `none` cannot be
// connected to an overlay, and on 20.10 that refused connect leaks an attachment (design §11.8).
bool SwarmCluster::start_shim() {
  shim_name_ = prefix_ + "-shim";
  const auto r = docker(
      1, {"run", "-d", "--name", shim_name_, "--label", std::string(kClusterLabel) + "=" + prefix_,
          "--network", "bridge", image_, "sleep", "86400"});
  shim_id_ = trim(r.out);
  if (!r.ok() || shim_id_.empty()) {
    fail("the shim container on node 1 did not start: " + r.describe());
    return false;
  }
  return true;
}

// setns(CLONE_NEWNET) moves the calling thread only; threads made after it inherit it. It is done
// here, in start() on the main thread before any test runs; a thread that exists already (none is
// expected: gtest starts none) would keep the host's namespace, so it is refused as a failure.
bool SwarmCluster::join_shim_netns() {
  std::string error;
  const std::string path = netns_path(1, shim_id_, error);
  if (path.empty()) {
    fail(error);
    return false;
  }
  if (const int threads = thread_count(); threads != 1) {
    fail("this process has " + std::to_string(threads) +
         " threads before joining the shim's network namespace; only the calling one would move");
    return false;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fail("cannot open " + path + ": " + std::strerror(errno));
    return false;
  }
  host_netns_fd_ = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  const int rc = ::setns(fd, CLONE_NEWNET);
  const int saved = errno;
  ::close(fd);
  if (rc != 0) {
    skip("cannot join the shim's network namespace " + path + ": " + std::strerror(saved));
    return false;
  }
  return true;
}

void SwarmCluster::stop() {
  if (!started_) return;
  if (env_or("EXECMCP_SWARM_KEEP", "0") == "1") {
    std::printf("[swarm] EXECMCP_SWARM_KEEP=1: cluster %s left running\n", prefix_.c_str());
  } else {
    const auto t0 = Clock::now();
    const auto r = script({"stop"});
    std::printf("[swarm] cluster %s stopped in %.1f s%s\n", prefix_.c_str(), seconds_since(t0),
                r.ok() ? "" : (": " + r.describe()).c_str());
  }
  std::fflush(stdout);
  if (watchdog_fd_ >= 0) {
    const char done[] = "done\n";
    [[maybe_unused]] const auto w = ::write(watchdog_fd_, done, sizeof done - 1);
    ::close(watchdog_fd_);
    watchdog_fd_ = -1;
  }
  started_ = false;
}

std::string SwarmCluster::leftovers(const std::string& owner) const {
  const std::string filter = std::string(kOwnerLabel) + "=" + owner;
  std::string out;
  auto list = [&](int node, const std::vector<std::string>& args, const char* what) {
    std::vector<std::string> all = args;
    all.insert(all.end(), {"--filter", "label=" + filter});
    const auto r = docker(node, all);
    const std::string found = r.ok() ? trim(r.out) : "(" + r.describe() + ")";
    if (!found.empty()) {
      std::string one_line = found;
      for (auto& c : one_line)
        if (c == '\n') c = ' ';
      out += "node " + std::to_string(node) + " " + what + ": " + one_line + "\n";
    }
  };
  list(1, {"service", "ls", "-q"}, "services");
  list(1, {"secret", "ls", "-q"}, "secrets");
  for (const auto& node : nodes_) {
    list(node.number, {"network", "ls", "-q"}, "networks");
    list(node.number, {"ps", "-aq"}, "containers");
  }
  return out;
}

std::string SwarmCluster::wait_nothing_left(const std::string& owner,
                                            std::chrono::seconds limit) const {
  const auto end = Clock::now() + limit;
  for (;;) {
    std::string left = leftovers(owner);
    if (left.empty() || Clock::now() >= end) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

std::string SwarmCluster::remove_volumes(const std::string& owner) const {
  std::string failed;
  for (const auto& node : nodes_) {
    const auto r = docker(node.number, {"volume", "ls", "-q", "--filter",
                                        "label=" + std::string(kOwnerLabel) + "=" + owner});
    for (const auto& volume : lines(r.out)) {
      const auto rm = docker(node.number, {"volume", "rm", volume});
      if (!rm.ok()) failed += node.name + ": " + volume + ": " + rm.describe() + "\n";
    }
  }
  return failed;
}

}  // namespace execmcp::tests::swarm
