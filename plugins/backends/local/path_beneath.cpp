// Race-free opening of agent paths beneath their grant's directory (see path_beneath.hpp).
#include "path_beneath.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <limits.h>
#include <algorithm>
#include <cerrno>
#include <deque>
#include <filesystem>

namespace execmcp::plugins::local {

namespace {

// The kernel's own limit on symlinks followed in one lookup.
constexpr int kMaxSymlinks = 40;

std::vector<std::string_view> split(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    std::size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(pos, slash - pos);
    if (!part.empty() && part != ".") parts.push_back(part);
    pos = slash + 1;
  }
  return parts;
}

// Lexically normal components of an absolute path: ".." drops the previous one (not past "/").
std::vector<std::string_view> normal_components(std::string_view absolute) {
  std::vector<std::string_view> out;
  for (auto part : split(absolute)) {
    if (part == "..") {
      if (!out.empty()) out.pop_back();
    } else {
      out.push_back(part);
    }
  }
  return out;
}

std::string join(const std::vector<std::string_view>& parts, std::size_t from, bool absolute) {
  std::string out;
  for (std::size_t i = from; i < parts.size(); ++i) {
    if (absolute || i > from) out += '/';
    out.append(parts[i]);
  }
  if (absolute && out.empty()) out = "/";
  return out;
}

// How many components `path` shares with `root` as a prefix, or -1 when root is not a prefix.
long prefix_length(const std::vector<std::string_view>& path,
                   const std::vector<std::string_view>& root) {
  if (root.size() > path.size()) return -1;
  for (std::size_t i = 0; i < root.size(); ++i) {
    if (path[i] != root[i]) return -1;
  }
  return static_cast<long>(root.size());
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// The directories walked so far, the root first (borrowed, never closed); ".." pops.
class DirStack {
 public:
  explicit DirStack(int root) : root_(root) {}
  DirStack(const DirStack&) = delete;
  DirStack& operator=(const DirStack&) = delete;
  ~DirStack() { to_root(); }
  [[nodiscard]] int top() const { return owned_.empty() ? root_ : owned_.back(); }
  void push(int fd) { owned_.push_back(fd); }
  bool pop() {
    if (owned_.empty()) return false;
    ::close(owned_.back());
    owned_.pop_back();
    return true;
  }
  void to_root() {
    while (pop()) {
    }
  }

 private:
  int root_;
  std::vector<int> owned_;
};

// Reads the symlink `fd` refers to (an O_PATH|O_NOFOLLOW descriptor of the link itself, so what
// is read is the link that was looked at, not whatever has that name now).
int read_link(int fd, std::string& target) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlinkat(fd, "", buf, sizeof(buf));
  if (n < 0) return -errno;
  if (static_cast<std::size_t>(n) >= sizeof(buf)) return -ENAMETOOLONG;
  target.assign(buf, static_cast<std::size_t>(n));
  return 0;
}

// The walk: one component at a time from the root, each opened with O_NOFOLLOW relative to the
// directory descriptor before it; a symlink is read and its target spliced into the remaining
// components (an absolute one only when it points beneath `root_path`, restarting from the root).
// With `leaf_out` set it stops before the last component (after following it if it is a symlink)
// and returns the directory that holds it.
int walk(int root_fd, std::string_view root_path, std::string_view relative, int flags, mode_t mode,
         bool create_dirs, std::string* leaf_out) {
  std::deque<std::string> parts;
  for (auto part : split(relative)) parts.emplace_back(part);
  DirStack dirs(root_fd);
  const auto root_parts = normal_components(root_path);
  int links = 0;
  auto splice = [&](int link_fd) -> int {
    if (++links > kMaxSymlinks) return -ELOOP;
    std::string target;
    if (const int rc = read_link(link_fd, target); rc != 0) return rc;
    if (target.empty()) return -ENOENT;
    std::vector<std::string_view> target_parts;
    if (target.front() == '/') {
      const auto absolute = normal_components(target);
      if (prefix_length(absolute, root_parts) < 0) return -EXDEV;
      dirs.to_root();
      target_parts.assign(absolute.begin() + static_cast<long>(root_parts.size()), absolute.end());
    } else {
      target_parts = split(target);
    }
    for (auto it = target_parts.rbegin(); it != target_parts.rend(); ++it) parts.emplace_front(*it);
    return 0;
  };

  while (!parts.empty()) {
    const std::string name = std::move(parts.front());
    parts.pop_front();
    const bool last = parts.empty();
    if (name == "..") {
      if (!dirs.pop()) return -EXDEV;  // above the root
      continue;
    }
    Fd entry(::openat(dirs.top(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (entry.get() < 0 && errno == ENOENT && last && leaf_out != nullptr) {
      *leaf_out = name;
      return ::openat(dirs.top(), ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    if (entry.get() < 0 && errno == ENOENT && !last && create_dirs) {
      if (::mkdirat(dirs.top(), name.c_str(), 0755) != 0 && errno != EEXIST) return -errno;
      entry.reset(::openat(dirs.top(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    }
    if (entry.get() < 0) return -errno;
    struct stat st {};
    if (::fstat(entry.get(), &st) != 0) return -errno;
    if (S_ISLNK(st.st_mode)) {
      if (const int rc = splice(entry.get()); rc != 0) return rc;
      continue;
    }
    if (last && leaf_out != nullptr) {
      *leaf_out = name;
      return ::openat(dirs.top(), ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    if (last) {
      // O_NOFOLLOW: should the name have become a symlink since the look above, refuse it
      // (ELOOP; or, with O_PATH, the link itself, which no caller accepts) instead of following.
      const int fd = ::openat(dirs.top(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
      return fd >= 0 ? fd : -errno;
    }
    if (!S_ISDIR(st.st_mode)) return -ENOTDIR;
    dirs.push(entry.release());
  }
  // The path names the directory on top (the root, or after a trailing "..").
  if (leaf_out != nullptr) return -EISDIR;
  const int fd = ::openat(dirs.top(), ".", flags | O_CLOEXEC, mode);
  return fd >= 0 ? fd : -errno;
}

long openat2_beneath(int dir_fd, const char* path, int flags, mode_t mode) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0;; ++attempt) {
    const long fd = ::syscall(SYS_openat2, dir_fd, path, &how, sizeof(how));
    // EAGAIN: a rename elsewhere raced the lookup; the kernel asks us to try again.
    if (fd >= 0 || errno != EAGAIN || attempt == 3) return fd >= 0 ? fd : -errno;
  }
}

// Errors after which the walk may still succeed (or gives the definitive answer): no openat2,
// an absolute symlink (RESOLVE_BENEATH refuses all of them, even those pointing inside), races.
bool walk_may_help(long error) {
  return error == -ENOSYS || error == -EXDEV || error == -EAGAIN || error == -ELOOP;
}

}  // namespace

const std::string* protected_by(std::string_view path, const std::vector<GrantRoot>& roots) {
  const auto components = normal_components(path);
  for (const auto& root : roots) {
    for (const auto& protected_path : root.protected_paths) {
      if (prefix_length(components, normal_components(protected_path)) >= 0) return &protected_path;
    }
  }
  return nullptr;
}

Location locate(std::string_view requested, std::string_view cwd,
                const std::vector<GrantRoot>& roots, sdk::Access access) {
  Location location;
  const std::string shown(requested);
  if (requested.find('\0') != std::string_view::npos) {
    location.error = "the path contains a NUL byte";
    return location;
  }
  std::string absolute;
  if (!requested.empty() && requested.front() == '/') {
    absolute = requested;
  } else {
    absolute.append(cwd).append("/").append(requested);
  }
  const auto path = normal_components(absolute);
  if (access == sdk::Access::Write) {
    if (const std::string* hit = protected_by(join(path, 0, true), roots); hit != nullptr) {
      location.error = "path '" + shown + "' (" + join(path, 0, true) + ") is protected (" + *hit +
                       "): read-only for this agent";
      return location;
    }
  }
  long best = -1;
  bool inside_any = false;
  for (std::size_t i = 0; i < roots.size(); ++i) {
    for (const std::string* form : {&roots[i].configured, &roots[i].canonical}) {
      const long length = prefix_length(path, normal_components(*form));
      if (length < 0) continue;
      inside_any = true;
      if (access == sdk::Access::Write && !roots[i].writable) continue;
      if (length > best) {
        best = length;
        location.grant = i;
        location.relative = join(path, static_cast<std::size_t>(length), false);
      }
    }
  }
  if (best >= 0) return location;
  const std::string resolved = join(path, 0, true);
  if (inside_any) {
    location.error = "path '" + shown + "' (" + resolved + ") is in a read-only path of this agent";
    return location;
  }
  std::string allowed;
  for (const auto& root : roots) allowed += (allowed.empty() ? "" : ", ") + root.configured;
  location.error = "path '" + shown + "' (" + resolved +
                   ") is outside this agent's allowed paths (" + allowed + ")";
  return location;
}

int open_grant_root(const std::string& canonical) {
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS;
  const long fd = ::syscall(SYS_openat2, AT_FDCWD, canonical.c_str(), &how, sizeof(how));
  if (fd >= 0) return static_cast<int>(fd);
  if (errno != ENOSYS) return -errno;
  // Without openat2 only the last component can be held to "no symlink".
  const int plain = ::open(canonical.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return plain >= 0 ? plain : -errno;
}

int open_beneath(int root_fd, std::string_view root_path, std::string_view relative, int flags,
                 mode_t mode, Resolver resolver) {
  if (relative.find('\0') != std::string_view::npos) return -EINVAL;
  if (resolver == Resolver::kKernel) {
    const std::string path = relative.empty() ? std::string(".") : std::string(relative);
    const long fd = openat2_beneath(root_fd, path.c_str(), flags, mode);
    if (fd >= 0) return static_cast<int>(fd);
    if (!walk_may_help(fd)) return static_cast<int>(fd);
  }
  return walk(root_fd, root_path, relative, flags, mode, false, nullptr);
}

ParentBeneath open_parent_beneath(int root_fd, std::string_view root_path,
                                  std::string_view relative, bool create_dirs, Resolver resolver) {
  ParentBeneath result;
  if (relative.find('\0') != std::string_view::npos) {
    result.error = EINVAL;
    return result;
  }
  if (resolver == Resolver::kKernel) {
    // The usual case in two calls: the directory by openat2, then a look at the last component.
    const auto parts = split(relative);
    if (!parts.empty() && parts.back() != "..") {
      std::string dir = parts.size() == 1 ? "." : join(parts, 0, false);
      if (parts.size() > 1) dir.resize(dir.size() - parts.back().size() - 1);
      const long fd = openat2_beneath(root_fd, dir.c_str(), O_PATH | O_DIRECTORY, 0);
      if (fd >= 0) {
        Fd parent(static_cast<int>(fd));
        const std::string leaf(parts.back());
        struct stat st {};
        const bool is_link = ::fstatat(parent.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                             S_ISLNK(st.st_mode);
        if (!is_link) {
          result.fd = parent.release();
          result.leaf = leaf;
          return result;
        }
        // A symlink at the end: the walk follows it (beneath the root) to the real name.
      } else if (!walk_may_help(fd) && !(fd == -ENOENT && create_dirs)) {
        result.error = static_cast<int>(-fd);
        return result;
      }
    }
  }
  const int fd = walk(root_fd, root_path, relative, 0, 0, create_dirs, &result.leaf);
  if (fd < 0) {
    result.error = -fd;
    result.leaf.clear();
  } else {
    result.fd = fd;
  }
  return result;
}

// The grants as the file tools use them. Identities of protected paths are those recorded before
// (`previous`, from an earlier start) plus those of the protected paths that exist now: a restart
// after a command moved a protected file forgets neither where it was nor what it is.
std::shared_ptr<const std::vector<GrantRoot>> grant_roots(const std::vector<sdk::PathGrant>& grants,
                                                          const std::vector<GrantRoot>* previous) {
  auto roots = std::make_shared<std::vector<GrantRoot>>();
  for (const auto& grant : grants) {
    std::error_code ec;
    std::filesystem::path canonical = std::filesystem::weakly_canonical(grant.path, ec);
    if (ec) continue;  // unresolvable now: grants nothing
    GrantRoot root{std::filesystem::path(grant.path).lexically_normal().string(),
                   canonical.lexically_normal().string(),
                   grant.writable,
                   {}};
    for (const auto& protected_path : grant.protected_paths) {
      // Both forms: the one written (which the agent may use) and the real one (which a symlink
      // reaches); unresolvable now, it still protects as written (fails closed).
      const std::filesystem::path written =
          std::filesystem::path(protected_path).lexically_normal();
      root.protected_paths.push_back(written.string());
      const std::filesystem::path real = std::filesystem::weakly_canonical(written, ec);
      if (!ec && real.lexically_normal() != written)
        root.protected_paths.push_back(real.lexically_normal().string());
      struct stat st {};
      if (::stat(written.c_str(), &st) == 0)
        root.protected_identities.push_back({st.st_dev, st.st_ino, written.string()});
    }
    if (previous != nullptr) {
      for (const auto& before : *previous) {
        if (before.configured != root.configured) continue;
        for (const auto& identity : before.protected_identities) {
          const bool known = std::any_of(
              root.protected_identities.begin(), root.protected_identities.end(),
              [&](const auto& i) { return i.dev == identity.dev && i.ino == identity.ino; });
          if (!known) root.protected_identities.push_back(identity);
        }
      }
    }
    roots->push_back(std::move(root));
  }
  return roots;
}

}  // namespace execmcp::plugins::local
