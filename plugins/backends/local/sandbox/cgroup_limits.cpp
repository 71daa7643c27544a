// See cgroup_limits.hpp. Where each controller lives comes from /proc/self/mountinfo (the cgroup
// and cgroup2 mounts) and /proc/self/cgroup (the server's path in each hierarchy); nothing outside
// the directories made here is written but, on cgroup v2, the server's own cgroup's
// cgroup.subtree_control and the move of the server into its leaf.
#include "cgroup_limits.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

namespace execmcp::plugins::local::sandbox {

using cgroup_detail::CgroupMount;
using cgroup_detail::CgroupPlace;
using cgroup_detail::ProcCgroup;

namespace {

constexpr std::int64_t kCpuPeriodUs = 100000;
constexpr const char* kServerLeafPrefix = "execmcp-server-";

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// 0 or the errno of writing `text` to the cgroup file `path` (one write, as the kernel wants).
int write_text(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = n == static_cast<ssize_t>(text.size()) ? 0 : (n < 0 ? errno : EIO);
  ::close(fd);
  return err;
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find(sep, pos), text.size());
    out.emplace_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

bool has_token(std::string_view text, const std::string& token) {
  std::istringstream in{std::string(text)};
  for (std::string word; in >> word;)
    if (word == token) return true;
  return false;
}

// mountinfo escapes a space, tab, newline and backslash as \ooo.
std::string unescape(const std::string& field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const std::string digits = field.substr(i + 1, 3);
      if (digits.size() == 3 &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out += static_cast<char>(std::stoi(digits, nullptr, 8));
        i += 3;
        continue;
      }
    }
    out += field[i];
  }
  return out;
}

std::string parent_of(const std::string& dir) {
  const auto slash = dir.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
}

std::string base_name(const std::string& dir) {
  const auto slash = dir.rfind('/');
  return slash == std::string::npos ? dir : dir.substr(slash + 1);
}

pid_t parent_pid(pid_t pid) {
  const auto stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return -1;
  const auto close = stat->rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream in(stat->substr(close + 1));
  std::string state;
  long ppid = -1;
  in >> state >> ppid;
  return static_cast<pid_t>(ppid);
}

// The server itself or one of its descendants.
bool ours(pid_t pid) {
  const pid_t self = ::getpid();
  for (int depth = 0; depth < 64 && pid > 1; ++depth) {
    if (pid == self) return true;
    pid = parent_pid(pid);
  }
  return false;
}

std::vector<pid_t> procs_of(const std::string& dir) {
  std::vector<pid_t> pids;
  if (const auto text = read_text(dir + "/cgroup.procs"))
    for (const auto& line : split(*text, '\n'))
      if (!line.empty()) pids.push_back(static_cast<pid_t>(std::atol(line.c_str())));
  return pids;
}

// The server's directory in a v2 tree: its cgroup, or that cgroup's parent once the server moved
// into its own leaf (execmcp-server-<pid>).
std::string v2_server_dir(const CgroupPlace& place) {
  if (base_name(place.dir) == kServerLeafPrefix + std::to_string(::getpid()))
    return parent_of(place.dir);
  return place.dir;
}

struct Layout {
  std::map<CgroupController, CgroupPlace> places;
  std::map<CgroupController, std::string> problems;
};

const CgroupController kAll[] = {CgroupController::kMemory, CgroupController::kPids,
                                 CgroupController::kCpu};

// "" or why this server cannot make a cgroup with `c` at `place`, and how to get it.
std::string check_place(CgroupController c, const CgroupPlace& place) {
  const std::string name = controller_name(c);
  if (place.read_only)
    return place.mount_point +
           " is mounted read-only (a container without a cgroup of its own?): "
           "give the server a writable cgroup mount";
  const std::string dir = place.v2 ? v2_server_dir(place) : place.dir;
  const std::string uid = std::to_string(::geteuid());
  if (::access(dir.c_str(), W_OK) != 0)
    return "the server (uid " + uid + ") may not make cgroups in " + dir +
           ": run it as root, or give it a cgroup of its own to manage (systemd: Delegate=yes)";
  if (!place.v2) return {};
  if (!has_token(read_text(dir + "/cgroup.controllers").value_or(""), name))
    return "the server's cgroup " + dir + " was not given the " + name +
           " controller (cgroup v2: its parent does not delegate it; systemd: Delegate=yes on the "
           "server's service)";
  if (dir == place.mount_point ||
      has_token(read_text(dir + "/cgroup.subtree_control").value_or(""), name))
    return {};
  for (pid_t pid : procs_of(dir))
    if (!ours(pid))
      return "the server's cgroup " + dir + " holds other processes (pid " + std::to_string(pid) +
             "), so it cannot hand controllers to its children (cgroup v2's no-internal-process "
             "rule): run the server in a cgroup of its own (systemd: a service with Delegate=yes)";
  return {};
}

Layout discover() {
  Layout layout;
  // EXECMCP_CGROUP_MOUNTINFO (tests only, as EXECMCP_BWRAP): another mountinfo, e.g. one
  // without cgroups, to see what a machine without them gets.
  const char* mountinfo = std::getenv("EXECMCP_CGROUP_MOUNTINFO");
  const auto mounts = cgroup_detail::parse_cgroup_mounts(
      read_text(mountinfo != nullptr ? mountinfo : "/proc/self/mountinfo").value_or(""));
  const auto self = cgroup_detail::parse_proc_cgroup(read_text("/proc/self/cgroup").value_or(""));
  std::string v2_controllers;
  for (const auto& m : mounts)
    if (m.v2) {
      v2_controllers = read_text(m.mount_point + "/cgroup.controllers").value_or("");
      break;
    }
  for (CgroupController c : kAll) {
    const std::string name = controller_name(c);
    const auto place = cgroup_detail::place_of(name, mounts, self, v2_controllers);
    if (!place) {
      layout.problems[c] = "this kernel offers no " + name +
                           " cgroup controller to the server (no cgroup v1 hierarchy has it, and "
                           "cgroup v2 does not list it for the server's cgroup)";
      continue;
    }
    if (auto why = check_place(c, *place); !why.empty()) {
      layout.problems[c] = why;
      continue;
    }
    layout.places[c] = *place;
  }
  return layout;
}

// cgroup v2: makes `controllers` available to the children of the server's cgroup `dir`, moving
// the server (and its descendants) into a leaf of their own when the cgroup holds them.
std::string enable_v2_controllers(const std::string& dir,
                                  const std::vector<CgroupController>& controllers) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  const std::string subtree = dir + "/cgroup.subtree_control";
  std::string plus;
  for (CgroupController c : controllers)
    if (!has_token(read_text(subtree).value_or(""), controller_name(c)))
      plus += (plus.empty() ? "+" : " +") + std::string(controller_name(c));
  if (plus.empty()) return {};
  int err = write_text(subtree, plus);
  if (err == 0) return {};
  if (err != EBUSY) return "cannot enable " + plus + " in " + subtree + ": " + std::strerror(err);
  const std::string leaf = dir + "/" + kServerLeafPrefix + std::to_string(::getpid());
  if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST)
    return "cannot make the server's own leaf " + leaf + ": " + std::strerror(errno);
  for (int attempt = 0; attempt < 3; ++attempt) {
    for (pid_t pid : procs_of(dir)) {
      if (!ours(pid))
        return dir + " holds a process that is not the server's (pid " + std::to_string(pid) +
               "): cgroup v2 gives no controllers to the children of a cgroup with processes; "
               "run the server in a cgroup of its own (systemd: Delegate=yes)";
      if (int e = write_text(leaf + "/cgroup.procs", std::to_string(pid)); e != 0 && e != ESRCH)
        return "cannot move pid " + std::to_string(pid) + " into " + leaf + ": " + std::strerror(e);
    }
    err = write_text(subtree, plus);
    if (err == 0) return {};
  }
  return "cannot enable " + plus + " in " + subtree + ": " + std::strerror(err);
}

std::string format_cpu_quota(double cpus) {
  const auto quota = std::max<std::int64_t>(
      1000, static_cast<std::int64_t>(std::llround(cpus * static_cast<double>(kCpuPeriodUs))));
  return std::to_string(quota);
}

// Writes the limits of `c` into the new cgroup `dir`. "" or why not.
std::string write_limit(const std::string& dir, bool v2, CgroupController c,
                        const CgroupLimits& limits) {
  auto must = [&](const std::string& file, const std::string& value) -> std::string {
    if (const int err = write_text(dir + "/" + file, value); err != 0)
      return "cannot write " + value + " to " + dir + "/" + file + ": " + std::strerror(err);
    return {};
  };
  switch (c) {
    case CgroupController::kMemory: {
      if (!limits.memory_bytes) return {};
      const std::string bytes = std::to_string(*limits.memory_bytes);
      if (auto why = must(v2 ? "memory.max" : "memory.limit_in_bytes", bytes); !why.empty())
        return why;
      // No swap past the limit, where the kernel accounts swap (a hog would swap, not stop).
      write_text(dir + (v2 ? "/memory.swap.max" : "/memory.memsw.limit_in_bytes"),
                 v2 ? "0" : bytes);
      return {};
    }
    case CgroupController::kPids:
      return limits.pids ? must("pids.max", std::to_string(*limits.pids)) : std::string();
    case CgroupController::kCpu:
      if (!limits.cpus) return {};
      if (v2)
        return must("cpu.max", format_cpu_quota(*limits.cpus) + " " + std::to_string(kCpuPeriodUs));
      if (auto why = must("cpu.cfs_period_us", std::to_string(kCpuPeriodUs)); !why.empty())
        return why;
      return must("cpu.cfs_quota_us", format_cpu_quota(*limits.cpus));
  }
  return {};
}

}  // namespace

const char* controller_name(CgroupController controller) {
  switch (controller) {
    case CgroupController::kMemory:
      return "memory";
    case CgroupController::kPids:
      return "pids";
    case CgroupController::kCpu:
      return "cpu";
  }
  return "?";
}

std::vector<CgroupController> CgroupLimits::controllers() const {
  std::vector<CgroupController> out;
  if (memory_bytes) out.push_back(CgroupController::kMemory);
  if (pids) out.push_back(CgroupController::kPids);
  if (cpus || cpu_share) out.push_back(CgroupController::kCpu);
  return out;
}

std::string CgroupAvailability::problem(CgroupController controller) const {
  const auto it = problems.find(controller);
  return it == problems.end() ? std::string() : it->second;
}

CgroupAvailability probe_cgroups() {
  const Layout layout = discover();
  CgroupAvailability out;
  out.problems = layout.problems;
  bool v1 = false, v2 = false;
  for (const auto& [c, place] : layout.places) (place.v2 ? v2 : v1) = true;
  out.version = v1 && v2 ? "v1+v2" : v1 ? "v1" : v2 ? "v2" : "";
  return out;
}

std::unique_ptr<SandboxCgroup> SandboxCgroup::create(const std::string& name,
                                                     const CgroupLimits& limits,
                                                     std::string& error) {
  if (!cgroup_detail::valid_cgroup_name(name)) {
    error = "'" + name + "' is not a cgroup name of ours ([A-Za-z0-9_.-], at most 240)";
    return nullptr;
  }
  const auto controllers = limits.controllers();
  if (controllers.empty()) {
    error = "no limit to apply";
    return nullptr;
  }
  const Layout layout = discover();
  // One directory per hierarchy, each with the controllers it holds.
  std::vector<std::pair<CgroupPlace, std::vector<CgroupController>>> groups;
  for (CgroupController c : controllers) {
    const auto it = layout.places.find(c);
    if (it == layout.places.end()) {
      error = std::string("cgroup ") + controller_name(c) + ": " + layout.problems.at(c);
      return nullptr;
    }
    CgroupPlace place = it->second;
    if (place.v2) place.dir = v2_server_dir(place);
    auto same = std::find_if(groups.begin(), groups.end(),
                             [&](const auto& g) { return g.first.dir == place.dir; });
    if (same == groups.end()) {
      groups.push_back({place, {c}});
    } else {
      same->second.push_back(c);
    }
  }
  std::unique_ptr<SandboxCgroup> cgroup(new SandboxCgroup);
  auto fail = [&](const std::string& why) -> std::unique_ptr<SandboxCgroup> {
    error = why;
    cgroup->remove(std::chrono::milliseconds(0));
    return nullptr;
  };
  for (const auto& [place, held] : groups) {
    if (place.v2)
      if (auto why = enable_v2_controllers(place.dir, held); !why.empty())
        return fail("cgroup v2: " + why);
    const std::string dir = place.dir + "/" + name;
    if (::mkdir(dir.c_str(), 0755) != 0) {
      // An empty leftover of the same name goes (rmdir refuses a cgroup with processes).
      int err = errno;
      if (err == EEXIST) err = ::rmdir(dir.c_str()) == 0 ? 0 : errno;
      if (err == 0) err = ::mkdir(dir.c_str(), 0755) == 0 ? 0 : errno;
      if (err != 0)
        return fail("cannot make the cgroup " + dir + ": " +
                    (err == EBUSY ? std::string("one of that name holds processes")
                                  : std::string(std::strerror(err))));
    }
    cgroup->dirs_.push_back(dir);
    for (CgroupController c : held)
      if (auto why = write_limit(dir, place.v2, c, limits); !why.empty()) return fail(why);
    const int procs = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (procs < 0) return fail("cannot open " + dir + "/cgroup.procs: " + std::strerror(errno));
    cgroup->procs_.push_back(procs);
    if (std::find(held.begin(), held.end(), CgroupController::kMemory) != held.end()) {
      const std::string events = dir + (place.v2 ? "/memory.events" : "/memory.oom_control");
      const bool has_count =
          cgroup_detail::parse_oom_kill(read_text(events).value_or("")).has_value();
      cgroup->events_failcnt_ = !has_count;
      cgroup->events_fd_ =
          ::open((has_count ? events : dir + "/memory.failcnt").c_str(), O_RDONLY | O_CLOEXEC);
    }
  }
  return cgroup;
}

SandboxCgroup::~SandboxCgroup() {
  remove();
  if (events_fd_ >= 0) ::close(events_fd_);
}

std::optional<long> SandboxCgroup::oom_kills() const {
  if (events_fd_ < 0) return std::nullopt;
  char buf[1024];
  const ssize_t n = ::pread(events_fd_, buf, sizeof buf - 1, 0);
  if (n <= 0) return std::nullopt;
  const std::string_view text(buf, static_cast<std::size_t>(n));
  if (!events_failcnt_) return cgroup_detail::parse_oom_kill(text);
  return std::atol(std::string(text).c_str());
}

std::string SandboxCgroup::remove(std::chrono::milliseconds wait) noexcept {
  std::lock_guard lock(mutex_);
  for (int fd : procs_) ::close(fd);
  procs_.clear();
  if (dirs_.empty()) return {};
  for (const auto& dir : dirs_) write_text(dir + "/cgroup.kill", "1");  // v2 (5.14+) only
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::vector<std::string> left = dirs_;
  std::string why;
  for (;;) {
    std::erase_if(left, [&](const std::string& dir) {
      if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return true;
      if (errno == EBUSY) return false;
      why = "cannot remove the cgroup " + dir + ": " + std::strerror(errno);
      return true;
    });
    if (left.empty() || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (const auto& dir : left)
    why = "the cgroup " + dir + " still holds processes after " + std::to_string(wait.count()) +
          " ms; it stays (removed when empty, at this agent's next start after the server ends)";
  dirs_.clear();
  return why;
}

int remove_leftover_cgroups(const std::string& prefix, std::chrono::seconds min_age) {
  const Layout layout = discover();
  std::set<std::string> dirs;
  for (const auto& [c, place] : layout.places)
    dirs.insert(place.v2 ? v2_server_dir(place) : place.dir);
  int removed = 0;
  auto dead = [](const std::string& digits) {
    if (digits.empty() || digits.size() > 9 ||
        !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      return false;
    const auto pid = static_cast<pid_t>(std::atol(digits.c_str()));
    return pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
  };
  for (const auto& dir : dirs) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) continue;
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
    ::closedir(d);
    for (const auto& name : names) {
      std::string digits;
      if (name.rfind(prefix, 0) == 0 && !prefix.empty()) {
        const std::string rest = name.substr(prefix.size());
        digits = rest.substr(0, rest.find('-'));
        if (rest.find('-') == std::string::npos) digits.clear();
      } else if (name.rfind(kServerLeafPrefix, 0) == 0) {
        digits = name.substr(std::strlen(kServerLeafPrefix));
      }
      // Made a while ago: a cgroup is empty only for the moment between its making and its first
      // process, or once it is a leftover.
      struct stat st {};
      const std::string path = dir + "/" + name;
      if (dead(digits) && ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
          ::time(nullptr) - st.st_ctime >= min_age.count() && ::rmdir(path.c_str()) == 0)
        ++removed;
    }
  }
  return removed;
}

namespace cgroup_detail {

std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo) {
  std::vector<CgroupMount> out;
  for (const auto& line : split(mountinfo, '\n')) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream left(line.substr(0, dash)), right(line.substr(dash + 3));
    std::string id, parent, dev, root, mount_point, options, fstype, source, super;
    if (!(left >> id >> parent >> dev >> root >> mount_point >> options)) continue;
    if (!(right >> fstype >> source >> super)) continue;
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    CgroupMount m;
    m.mount_point = unescape(mount_point);
    m.root = unescape(root);
    m.v2 = fstype == "cgroup2";
    const auto mount_options = split(options, ',');
    m.read_only = !mount_options.empty() && mount_options.front() == "ro";
    for (const auto& o : split(super, ','))
      if (o != "rw" && o != "ro" && !o.empty()) m.options.push_back(o);
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<ProcCgroup> parse_proc_cgroup(std::string_view text) {
  std::vector<ProcCgroup> out;
  for (const auto& line : split(text, '\n')) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    ProcCgroup p;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    p.path = line.substr(second + 1);
    p.v2 = line.substr(0, first) == "0" && controllers.empty();
    if (!controllers.empty()) p.controllers = split(controllers, ',');
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<CgroupPlace> place_of(const std::string& controller,
                                    const std::vector<CgroupMount>& mounts,
                                    const std::vector<ProcCgroup>& self,
                                    const std::string& v2_controllers) {
  auto in = [](const std::vector<std::string>& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
  };
  // The process's path as a directory under the mount (none when the path lies outside the
  // mount's root, as in another cgroup namespace's view).
  auto place = [](const CgroupMount& m, const std::string& path) -> std::optional<CgroupPlace> {
    std::string rel;
    if (m.root == "/") {
      rel = path == "/" ? "" : path;
    } else if (path == m.root || path.rfind(m.root + "/", 0) == 0) {
      rel = path.substr(m.root.size());
    } else {
      return std::nullopt;
    }
    if (rel.find("/../") != std::string::npos || rel.ends_with("/..")) return std::nullopt;
    return CgroupPlace{m.v2, m.mount_point, m.mount_point + rel, m.read_only};
  };
  for (const auto& p : self) {
    if (p.v2 || !in(p.controllers, controller)) continue;
    for (const auto& m : mounts)
      if (!m.v2 && in(m.options, controller)) return place(m, p.path);
  }
  if (!has_token(v2_controllers, controller)) return std::nullopt;
  for (const auto& p : self) {
    if (!p.v2) continue;
    for (const auto& m : mounts)
      if (m.v2) return place(m, p.path);
  }
  return std::nullopt;
}

std::optional<long> parse_oom_kill(std::string_view text) {
  for (const auto& line : split(text, '\n')) {
    if (line.rfind("oom_kill ", 0) != 0) continue;
    const std::string number = line.substr(9);
    if (number.empty() ||
        !std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    return std::atol(number.c_str());
  }
  return std::nullopt;
}

bool valid_cgroup_name(std::string_view name) {
  if (name.empty() || name.size() > 240 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
  });
}

}  // namespace cgroup_detail

}  // namespace execmcp::plugins::local::sandbox
