// The bubblewrap command line of a local sandbox (see bwrap_args.hpp).
#include "bwrap_args.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>

#include "supervision/stream_relay.hpp"

namespace execmcp::plugins::local::sandbox {
namespace {

bool is_clean_absolute(const std::string& path) {
  if (path.empty() || path.front() != '/') return false;
  if (path.size() > 1 && path.back() == '/') return false;
  return path.find("//") == std::string::npos && path.find("/./") == std::string::npos &&
         path.find("/../") == std::string::npos && !path.ends_with("/..") && !path.ends_with("/.");
}

// `path` is `base` or below it.
bool within(const std::string& path, const std::string& base) {
  if (base == "/") return true;
  return path == base || (path.starts_with(base) && path[base.size()] == '/');
}

std::size_t depth(const std::string& path) {
  return path == "/" ? 0 : static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

// The mount whose source holds `path` most closely, or null.
const SandboxMount* holder(const SandboxSpec& spec, const std::string& path) {
  const SandboxMount* best = nullptr;
  for (const auto& m : spec.mounts) {
    if (within(path, m.source) && (best == nullptr || m.source.size() > best->source.size()))
      best = &m;
  }
  return best;
}

std::string inside(const SandboxMount& m, const std::string& host_path) {
  const std::string rest = host_path.substr(m.source == "/" ? 0 : m.source.size());
  if (rest.empty()) return m.target;
  return m.target == "/" ? rest : m.target + rest;
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

void add(std::vector<std::string>& argv, std::initializer_list<std::string> items) {
  argv.insert(argv.end(), items);
}

}  // namespace

std::vector<PlannedMount> plan_grant_mounts(const SandboxSpec& spec, std::string& error) {
  std::vector<PlannedMount> plan;
  for (const auto& m : spec.mounts) {
    if (!is_clean_absolute(m.source) || !is_clean_absolute(m.target)) {
      error = "mount '" + m.source + "' -> '" + m.target + "': paths must be absolute and clean";
      return {};
    }
    for (const auto& p : spec.private_paths) {
      if (within(m.source, p)) {
        error = "'" + m.source + "' lies inside '" + p + "', which the server keeps private";
        return {};
      }
    }
    plan.push_back({PlannedMount::Kind::kBind, m.source, m.target, m.writable});
  }
  std::vector<PlannedMount> parents, guarded, hidden;
  for (const auto& p : spec.protected_paths) {
    const SandboxMount* m = is_clean_absolute(p) ? holder(spec, p) : nullptr;
    if (m == nullptr) {
      error = "protected path '" + p + "' is inside no mount of the sandbox";
      return {};
    }
    // Nothing to protect when it does not exist (and a mount would create it on the host).
    if (struct stat st{}; ::lstat(p.c_str(), &st) != 0) continue;
    for (std::string dir = parent_of(p); within(dir, m->source) && dir != m->source;
         dir = parent_of(dir)) {
      parents.push_back({PlannedMount::Kind::kBind, dir, inside(*m, dir), m->writable});
    }
    guarded.push_back({PlannedMount::Kind::kBind, p, inside(*m, p), false});
  }
  for (const auto& p : spec.private_paths) {
    const SandboxMount* m = is_clean_absolute(p) ? holder(spec, p) : nullptr;
    if (m == nullptr) continue;  // not shown anyway
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) continue;  // nothing to hide
    const bool is_dir = S_ISDIR(st.st_mode);
    hidden.push_back({is_dir ? PlannedMount::Kind::kHideDir : PlannedMount::Kind::kHideFile, "",
                      inside(*m, p), false});
  }
  // A parent shared by two protected paths is bound once.
  std::sort(parents.begin(), parents.end(),
            [](const auto& a, const auto& b) { return a.target < b.target; });
  parents.erase(std::unique(parents.begin(), parents.end(),
                            [](const auto& a, const auto& b) { return a.target == b.target; }),
                parents.end());
  for (auto* group : {&parents, &guarded, &hidden})
    plan.insert(plan.end(), group->begin(), group->end());
  std::stable_sort(plan.begin(), plan.end(),
                   [](const auto& a, const auto& b) { return depth(a.target) < depth(b.target); });
  return plan;
}

HostLayout probe_host_layout() {
  HostLayout layout;
  for (const char* dir : {"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"}) {
    struct stat st {};
    if (::lstat(dir, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[4096];
      const ssize_t n = ::readlink(dir, target, sizeof target - 1);
      if (n > 0) layout.root_links.emplace_back(dir, std::string(target, static_cast<size_t>(n)));
    } else if (S_ISDIR(st.st_mode)) {
      layout.root_dirs.emplace_back(dir);
    }
  }
  struct stat st {};
  layout.has_opt = ::stat("/opt", &st) == 0 && S_ISDIR(st.st_mode);
  return layout;
}

std::string program_target(const SandboxSpec& spec) {
  const auto slash = spec.program.rfind('/');
  return "/.execmcp/" +
         (slash == std::string::npos ? spec.program : spec.program.substr(slash + 1));
}

std::vector<std::string> bwrap_args(const SandboxSpec& spec, const BwrapInputs& in) {
  std::vector<std::string> argv{in.bwrap};
  // Namespaces and process attributes.
  argv.emplace_back("--unshare-all");
  if (spec.network == SandboxNetwork::kHost) argv.emplace_back("--share-net");
  add(argv, {"--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"});
  add(argv, {"--hostname", "sandbox"});
  if (in.status_fd >= 0) add(argv, {"--json-status-fd", std::to_string(in.status_fd)});
  argv.emplace_back("--clearenv");
  for (const auto& [name, value] : spec.env) add(argv, {"--setenv", name, value});

  // The system, read-only, on bubblewrap's tmpfs root.
  add(argv, {"--ro-bind", "/usr", "/usr"});
  for (const auto& [link, target] : in.host.root_links) add(argv, {"--symlink", target, link});
  for (const auto& dir : in.host.root_dirs) add(argv, {"--ro-bind", dir, dir});
  add(argv, {"--ro-bind", "/etc", "/etc"});
  for (const auto& e : in.etc_hidden) {
    if (e.is_dir)
      add(argv, {"--tmpfs", e.path, "--remount-ro", e.path});
    else
      add(argv, {"--ro-bind", "/dev/null", e.path});
  }
  if (in.passwd_fd >= 0) add(argv, {"--ro-bind-data", std::to_string(in.passwd_fd), "/etc/passwd"});
  if (in.group_fd >= 0) add(argv, {"--ro-bind-data", std::to_string(in.group_fd), "/etc/group"});
  if (in.host.has_opt) add(argv, {"--ro-bind", "/opt", "/opt"});
  add(argv, {"--proc", "/proc", "--dev", "/dev"});
  const std::string size = std::to_string(spec.tmp_bytes);
  add(argv, {"--size", size, "--perms", "1777", "--tmpfs", "/tmp"});
  add(argv, {"--size", size, "--perms", "0700", "--tmpfs", spec.home});
  add(argv, {"--symlink", "../tmp", "/var/tmp"});

  // The agent's grants, protected and private paths, by depth.
  for (std::size_t i = 0; i < in.mounts.size(); ++i) {
    const auto& m = in.mounts[i];
    const int fd = i < in.mount_fds.size() ? in.mount_fds[i] : -1;
    switch (m.kind) {
      case PlannedMount::Kind::kBind:
        if (fd >= 0)
          add(argv, {m.writable ? "--bind-fd" : "--ro-bind-fd", std::to_string(fd), m.target});
        else
          add(argv, {m.writable ? "--bind" : "--ro-bind", m.source, m.target});
        break;
      case PlannedMount::Kind::kHideDir:
        add(argv, {"--tmpfs", m.target, "--remount-ro", m.target});
        break;
      case PlannedMount::Kind::kHideFile:
        add(argv, {"--ro-bind", "/dev/null", m.target});
        break;
    }
  }
  // The proxy's socket (a socket in a read-only mount still connects; it cannot be replaced).
  if (spec.network == SandboxNetwork::kEgress)
    add(argv, {"--ro-bind", spec.egress_socket, supervision::kEgressSocketInside});
  const std::string program = program_target(spec);
  if (in.program_fd >= 0)
    add(argv, {"--ro-bind-fd", std::to_string(in.program_fd), program});
  else
    add(argv, {"--ro-bind", spec.program, program});
  // Nothing else in the root is writable: only the mounts above that say so, /tmp and HOME.
  add(argv, {"--remount-ro", "/"});
  if (in.seccomp_fd >= 0) add(argv, {"--add-seccomp-fd", std::to_string(in.seccomp_fd)});
  add(argv, {"--chdir", spec.work_dir.empty() ? "/" : spec.work_dir});
  argv.emplace_back("--");
  argv.push_back(program);
  argv.insert(argv.end(), spec.args.begin(), spec.args.end());
  argv.insert(argv.end(), in.program_extra_args.begin(), in.program_extra_args.end());
  return argv;
}

supervision::landlock::Rules landlock_rules_for(const SandboxSpec& spec, const HostLayout& host) {
  supervision::landlock::Rules rules;
  rules.max_abi = spec.landlock_max_abi;
  rules.list.emplace_back("/");
  rules.ro = {"/usr", "/etc"};
  for (const auto& dir : host.root_dirs) rules.ro.push_back(dir);
  if (host.has_opt) rules.ro.emplace_back("/opt");
  rules.rw = {"/tmp", spec.home, "/dev", "/proc"};
  for (const auto& m : spec.mounts) (m.writable ? rules.rw : rules.ro).push_back(m.target);
  rules.ro.push_back(program_target(spec));
  return rules;
}

}  // namespace execmcp::plugins::local::sandbox
