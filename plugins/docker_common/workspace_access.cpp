// POSIX ACLs written directly through the system.posix_acl_* xattrs (no libacl needed), and the
// container-user policy.
#include "docker_common/workspace_access.hpp"

#include <sys/stat.h>
#include <sys/xattr.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace execmcp::plugins::docker_common {
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

// Reads an ACL xattr; empty when the file has none (then the mode is the ACL).
std::vector<AclEntry> read_acl(const std::string& path, const char* name, int& error) {
  error = 0;
  std::vector<AclEntry> entries;
  char buf[4096];
  const ssize_t n = lgetxattr(path.c_str(), name, buf, sizeof buf);
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

int write_acl(const std::string& path, const char* name, std::vector<AclEntry> entries) {
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
  return lsetxattr(path.c_str(), name, buf.data(), buf.size(), 0) == 0 ? 0 : errno;
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

std::string grant_one(const std::string& path, uid_t uid, bool writable) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return "cannot stat '" + path + "': " + std::strerror(errno);
  if (S_ISLNK(st.st_mode)) return {};
  const bool dir = S_ISDIR(st.st_mode);
  const bool exec = dir || (st.st_mode & 0111) != 0;
  const std::uint16_t perm = static_cast<std::uint16_t>(4 | (writable ? 2 : 0) | (exec ? 1 : 0));
  int err = 0;
  auto access = read_acl(path, kAccessXattr, err);
  if (err != 0 && err != ENOTSUP) return "cannot read ACL of '" + path + "': " + std::strerror(err);
  if (access.empty()) access = from_mode(st.st_mode);
  if ((err = write_acl(path, kAccessXattr, with_user(access, uid, perm))) != 0)
    return "cannot set ACL on '" + path + "': " + std::strerror(err) +
           (err == ENOTSUP ? " (the filesystem has no ACL support)" : "");
  if (dir) {
    auto def = read_acl(path, kDefaultXattr, err);
    if (def.empty()) def = from_mode(st.st_mode);
    if ((err = write_acl(path, kDefaultXattr, with_user(def, uid, perm))) != 0)
      return "cannot set default ACL on '" + path + "': " + std::strerror(err);
  }
  return {};
}

}  // namespace

UserChoice choose_container_user(const std::string& configured_user, const std::string& workspace) {
  if (!configured_user.empty()) return {configured_user, false, "configured user"};
  struct stat st {};
  if (stat(workspace.c_str(), &st) != 0)
    throw std::runtime_error("cannot stat workspace '" + workspace + "': " + std::strerror(errno));
  if (st.st_uid != 0)
    return {std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid), false,
            "the workspace owner (files the agent writes stay the user's)"};
  return {std::to_string(kImageUid) + ":" + std::to_string(kImageGid), true,
          "the image user 1000 (the workspace belongs to root, which the container never is)"};
}

std::string grant_acl_recursive(const std::string& path, uid_t uid, bool writable) {
  if (auto err = grant_one(path, uid, writable); !err.empty()) return err;
  std::error_code ec;
  namespace fs = std::filesystem;
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return {};
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (auto err = grant_one(it->path().string(), uid, writable); !err.empty()) return err;
  }
  if (ec) return "cannot walk '" + path + "': " + ec.message();
  return {};
}

}  // namespace execmcp::plugins::docker_common
