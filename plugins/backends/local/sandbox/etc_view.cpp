// The /etc view's deny list and synthesized account files (see etc_view.hpp).
#include "etc_view.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <mutex>

namespace execmcp::plugins::local::sandbox {
namespace {

// Secrets by name: hidden even when their mode would let "other" read them (a host that got the
// mode wrong, or a non-root server whose uid owns them).
constexpr const char* kFixedSecrets[] = {
    "shadow",
    "gshadow",
    "shadow-",
    "gshadow-",
    "sudoers",
    "sudoers.d",
    "ssl/private",
    "security/opasswd",
    "krb5.keytab",
    "execmcp",
    "docker",
    "containers",
    "wireguard",
    "NetworkManager/system-connections",
    "libvirt",
    "credstore",
    "credstore.encrypted",
};

bool is_ssh_host_key(const std::string& name) {
  return name.starts_with("ssh_host_") && name.ends_with("_key");
}

void scan(const std::string& dir, int depth, std::vector<HiddenEntry>& out) {
  if (depth > 12) return;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) continue;
    const bool is_dir = S_ISDIR(st.st_mode);
    const bool readable = (st.st_mode & S_IROTH) != 0 && (!is_dir || (st.st_mode & S_IXOTH) != 0);
    if (!readable) {
      out.push_back({path, is_dir});
    } else if (is_dir) {
      scan(path, depth + 1, out);
    }
  }
  ::closedir(d);
}

}  // namespace

std::vector<HiddenEntry> etc_hidden_entries(const std::string& etc) {
  std::vector<HiddenEntry> out;
  for (const char* name : kFixedSecrets) {
    const std::string path = etc + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && !S_ISLNK(st.st_mode))
      out.push_back({path, S_ISDIR(st.st_mode)});
  }
  if (DIR* d = ::opendir((etc + "/ssh").c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (is_ssh_host_key(e->d_name)) out.push_back({etc + "/ssh/" + e->d_name, false});
    }
    ::closedir(d);
  }
  scan(etc, 0, out);
  std::sort(out.begin(), out.end(),
            [](const HiddenEntry& a, const HiddenEntry& b) { return a.path < b.path; });
  out.erase(
      std::unique(out.begin(), out.end(),
                  [](const HiddenEntry& a, const HiddenEntry& b) { return a.path == b.path; }),
      out.end());
  // Outermost only: an entry inside a hidden directory needs no mount of its own.
  std::vector<HiddenEntry> outer;
  for (auto& e : out) {
    if (!outer.empty() && outer.back().is_dir && e.path.starts_with(outer.back().path + "/"))
      continue;
    outer.push_back(std::move(e));
  }
  return outer;
}

const std::vector<HiddenEntry>& host_etc_hidden_entries() {
  static std::once_flag once;
  static std::vector<HiddenEntry> entries;
  std::call_once(once, [] { entries = etc_hidden_entries("/etc"); });
  return entries;
}

std::string synthesized_passwd(uid_t uid, gid_t gid, const std::string& home) {
  // The agent's line comes first: getpwuid() then names it even when its uid is nobody's.
  return "agent:x:" + std::to_string(uid) + ":" + std::to_string(gid) + ":agent:" + home +
         ":/bin/sh\n"
         "root:x:0:0:root:/root:/usr/sbin/nologin\n"
         "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
}

std::string synthesized_group(gid_t gid) {
  return "agent:x:" + std::to_string(gid) +
         ":\n"
         "root:x:0:\n"
         "nogroup:x:65534:\n";
}

}  // namespace execmcp::plugins::local::sandbox
