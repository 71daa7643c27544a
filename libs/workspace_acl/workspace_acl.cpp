// See workspace_acl.hpp.
#include "workspace_acl/workspace_acl.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

namespace execmcp::plugins::workspace_acl {
namespace {

// Linux's on-disk xattr ACL format: a version header, then {tag, perm, id} entries sorted by tag
// then id.
constexpr std::uint32_t kAclVersion = 2;
constexpr std::uint16_t kUserObj = 0x01, kUser = 0x02, kGroupObj = 0x04, kGroup = 0x08,
                        kMask = 0x10, kOther = 0x20;
constexpr std::uint32_t kUndefinedId = 0xFFFFFFFFu;
constexpr const char* kAccessXattr = "system.posix_acl_access";
constexpr const char* kDefaultXattr = "system.posix_acl_default";

struct AclEntry {
  std::uint16_t tag;
  std::uint16_t perm;
  std::uint32_t id;
};

std::vector<AclEntry> from_mode(mode_t mode) {
  return {{kUserObj, static_cast<std::uint16_t>((mode >> 6) & 7), kUndefinedId},
          {kGroupObj, static_cast<std::uint16_t>((mode >> 3) & 7), kUndefinedId},
          {kOther, static_cast<std::uint16_t>(mode & 7), kUndefinedId}};
}

// "/proc/self/fd/N": the xattr calls reach exactly the inode the O_PATH descriptor holds,
// whatever has been renamed or replaced since it was opened.
std::string fd_path(int fd) {
  return "/proc/self/fd/" + std::to_string(fd);
}

// Reads an ACL xattr of the file open as `fd`; empty when it has none (the mode is the ACL).
std::vector<AclEntry> read_acl(int fd, const char* name, int& error) {
  error = 0;
  std::vector<AclEntry> entries;
  char buf[4096];
  const ssize_t n = getxattr(fd_path(fd).c_str(), name, buf, sizeof buf);
  if (n < 0) {
    if (errno != ENODATA) error = errno;
    return entries;
  }
  if (n < 4) return entries;
  for (ssize_t off = 4; off + 8 <= n; off += 8) {
    AclEntry e{};
    std::memcpy(&e.tag, buf + off, 2);
    std::memcpy(&e.perm, buf + off + 2, 2);
    std::memcpy(&e.id, buf + off + 4, 4);
    entries.push_back(e);
  }
  return entries;
}

int write_acl(int fd, const char* name, std::vector<AclEntry> entries) {
  std::sort(entries.begin(), entries.end(), [](const AclEntry& a, const AclEntry& b) {
    return a.tag != b.tag ? a.tag < b.tag : a.id < b.id;
  });
  std::vector<char> buf(4 + entries.size() * 8);
  std::memcpy(buf.data(), &kAclVersion, 4);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    std::memcpy(buf.data() + 4 + i * 8, &entries[i].tag, 2);
    std::memcpy(buf.data() + 4 + i * 8 + 2, &entries[i].perm, 2);
    std::memcpy(buf.data() + 4 + i * 8 + 4, &entries[i].id, 4);
  }
  return setxattr(fd_path(fd).c_str(), name, buf.data(), buf.size(), 0) == 0 ? 0 : errno;
}

// Adds or replaces the entry for `uid` and recomputes the mask as the union of the group class.
std::vector<AclEntry> with_user(std::vector<AclEntry> entries, uid_t uid, std::uint16_t perm) {
  std::erase_if(entries, [&](const AclEntry& e) {
    return (e.tag == kUser && e.id == uid) || e.tag == kMask;
  });
  entries.push_back({kUser, perm, static_cast<std::uint32_t>(uid)});
  std::uint16_t mask = 0;
  for (const auto& e : entries)
    if (e.tag == kUser || e.tag == kGroupObj || e.tag == kGroup) mask |= e.perm;
  entries.push_back({kMask, mask, kUndefinedId});
  return entries;
}

// Grants on the file open (O_PATH | O_NOFOLLOW) as `fd`, whose stat is `st`; `path` is for
// messages only. A symlink is left alone.
std::string grant_one(int fd, const struct stat& st, const std::string& path, uid_t uid,
                      bool writable) {
  if (S_ISLNK(st.st_mode)) return {};
  const bool dir = S_ISDIR(st.st_mode);
  const bool exec = dir || (st.st_mode & 0111) != 0;
  const std::uint16_t perm = static_cast<std::uint16_t>(4 | (writable ? 2 : 0) | (exec ? 1 : 0));
  int err = 0;
  auto access = read_acl(fd, kAccessXattr, err);
  if (err != 0 && err != ENOTSUP) return "cannot read ACL of '" + path + "': " + std::strerror(err);
  if (access.empty()) access = from_mode(st.st_mode);
  if ((err = write_acl(fd, kAccessXattr, with_user(access, uid, perm))) != 0)
    return "cannot set ACL on '" + path + "': " + std::strerror(err) +
           (err == ENOTSUP ? " (the filesystem has no ACL support)" : "");
  if (dir) {
    auto def = read_acl(fd, kDefaultXattr, err);
    if (def.empty()) def = from_mode(st.st_mode);
    if ((err = write_acl(fd, kDefaultXattr, with_user(def, uid, perm))) != 0)
      return "cannot set default ACL on '" + path + "': " + std::strerror(err);
  }
  return {};
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

constexpr int kMaxDepth = 256;

// Grants on every entry of the directory open as `dir`, descending by descriptor: each name is
// opened relative to its parent's descriptor without following symlinks, so a directory an agent
// swaps for a symlink mid-walk leads nowhere (the walk keeps the inode it opened, or skips the
// name). Entries that vanish or change type under us are the agent's own business: skipped.
std::string grant_below(int dir, const std::string& path, uid_t uid, bool writable, int depth) {
  if (depth > kMaxDepth)
    return "cannot walk '" + path + "': more than " + std::to_string(kMaxDepth) + " levels deep";
  const int list_fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (list_fd < 0) return "cannot read '" + path + "': " + std::strerror(errno);
  DIR* d = ::fdopendir(list_fd);
  if (d == nullptr) {
    ::close(list_fd);
    return "cannot read '" + path + "': " + std::strerror(errno);
  }
  std::string error;
  while (error.empty()) {
    errno = 0;
    const dirent* e = ::readdir(d);
    if (e == nullptr) break;
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string child = path + "/" + name;
    Fd fd(::openat(dir, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) continue;
    error = grant_one(fd.get(), st, child, uid, writable);
    if (!error.empty() || !S_ISDIR(st.st_mode)) continue;
    Fd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat again {};
    // The name may have been swapped since: descend only into the directory we granted.
    if (sub.get() < 0 || ::fstat(sub.get(), &again) != 0 || again.st_dev != st.st_dev ||
        again.st_ino != st.st_ino)
      continue;
    error = grant_below(sub.get(), child, uid, writable, depth + 1);
  }
  ::closedir(d);
  return error;
}

}  // namespace

std::string grant_acl_recursive(const std::string& path, uid_t uid, bool writable) {
  // The path itself is a grant the mount check has vetted (no symlinked component); its last
  // component is still not followed.
  Fd fd(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0)
    return "cannot stat '" + path + "': " + std::strerror(errno);
  if (auto err = grant_one(fd.get(), st, path, uid, writable); !err.empty()) return err;
  if (!S_ISDIR(st.st_mode)) return {};
  Fd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat again {};
  if (dir.get() < 0 || ::fstat(dir.get(), &again) != 0 || again.st_ino != st.st_ino ||
      again.st_dev != st.st_dev)
    return "cannot walk '" + path + "': it changed while being granted";
  return grant_below(dir.get(), path, uid, writable, 0);
}

}  // namespace execmcp::plugins::workspace_acl
