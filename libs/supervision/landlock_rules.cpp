// Landlock rules for the runner (see landlock_rules.hpp). Constants and structs are declared here
// rather than taken from <linux/landlock.h>, whose age follows the build machine's headers.
#include "landlock_rules.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace execmcp::plugins::supervision::landlock {
namespace {

constexpr std::uint64_t kExecute = 1ULL << 0;
constexpr std::uint64_t kWriteFile = 1ULL << 1;
constexpr std::uint64_t kReadFile = 1ULL << 2;
constexpr std::uint64_t kReadDir = 1ULL << 3;
constexpr std::uint64_t kAbi1All = (1ULL << 13) - 1;  // EXECUTE .. MAKE_SYM
constexpr std::uint64_t kRefer = 1ULL << 13;          // ABI 2
constexpr std::uint64_t kTruncate = 1ULL << 14;       // ABI 3
constexpr std::uint64_t kIoctlDev = 1ULL << 15;       // ABI 5
constexpr std::uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;

constexpr unsigned kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1;

struct RulesetAttr {
  std::uint64_t handled_access_fs;
};

struct __attribute__((packed)) PathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

bool add_rules(int ruleset, const std::vector<std::string>& paths, std::uint64_t access,
               std::uint64_t handled, std::string& error) {
  for (const auto& path : paths) {
    const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
      error = "Landlock: cannot open " + path + ": " + std::strerror(errno);
      return false;
    }
    struct stat st {};
    PathBeneathAttr attr{access & handled, fd};
    if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) attr.allowed_access &= kFileRights;
    const long rc = ::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &attr, 0);
    const int saved = errno;
    ::close(fd);
    if (rc != 0) {
      error = "Landlock: rule for " + path + ": " + std::strerror(saved);
      return false;
    }
  }
  return true;
}

}  // namespace

bool parse_arg(std::string_view arg, Rules& rules) {
  auto path_of = [&](std::string_view prefix, std::vector<std::string>& into) {
    if (!arg.starts_with(prefix)) return false;
    const auto path = arg.substr(prefix.size());
    if (path.empty() || path.front() != '/') return false;
    into.emplace_back(path);
    return true;
  };
  if (arg.starts_with(kRwArg)) return path_of(kRwArg, rules.rw);
  if (arg.starts_with(kRoArg)) return path_of(kRoArg, rules.ro);
  if (arg.starts_with(kListArg)) return path_of(kListArg, rules.list);
  if (arg.starts_with(kMaxAbiArg)) {
    const auto text = arg.substr(kMaxAbiArg.size());
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < 0) return false;
    rules.max_abi = value;
    return true;
  }
  return false;
}

std::vector<std::string> to_args(const Rules& rules) {
  std::vector<std::string> args;
  for (const auto& p : rules.rw) args.push_back(std::string(kRwArg) + p);
  for (const auto& p : rules.ro) args.push_back(std::string(kRoArg) + p);
  for (const auto& p : rules.list) args.push_back(std::string(kListArg) + p);
  if (rules.max_abi > 0) args.push_back(std::string(kMaxAbiArg) + std::to_string(rules.max_abi));
  return args;
}

int kernel_abi() {
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

std::uint64_t handled_access(int abi) {
  if (abi < 1) return 0;
  std::uint64_t access = kAbi1All;
  if (abi >= 2) access |= kRefer;
  if (abi >= 3) access |= kTruncate;
  if (abi >= 5) access |= kIoctlDev;
  return access;
}

std::uint64_t rw_access(int abi) {
  return handled_access(abi);
}
std::uint64_t ro_access(int abi) {
  return (kExecute | kReadFile | kReadDir) & handled_access(abi);
}
std::uint64_t list_access(int abi) {
  return kReadDir & handled_access(abi);
}

int apply(const Rules& rules, std::string& error) {
  int abi = kernel_abi();
  if (abi == 0) {
    error = "Landlock is not available in this kernel (" + std::string(std::strerror(errno)) + ")";
    return 0;
  }
  if (rules.max_abi > 0 && abi > rules.max_abi) abi = rules.max_abi;
  if (abi < 2) {
    error = "Landlock ABI " + std::to_string(abi) + " lacks REFER (ABI 2, Linux 5.19): not applied";
    return 0;
  }
  const std::uint64_t handled = handled_access(abi);
  RulesetAttr attr{handled};
  const long ruleset = ::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (ruleset < 0) {
    error = std::string("Landlock: create_ruleset: ") + std::strerror(errno);
    return 0;
  }
  const int fd = static_cast<int>(ruleset);
  bool ok = add_rules(fd, rules.rw, rw_access(abi), handled, error) &&
            add_rules(fd, rules.ro, ro_access(abi), handled, error) &&
            add_rules(fd, rules.list, list_access(abi), handled, error);
  if (ok && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    error = std::string("Landlock: no_new_privs: ") + std::strerror(errno);
    ok = false;
  }
  if (ok && ::syscall(SYS_landlock_restrict_self, fd, 0) != 0) {
    error = std::string("Landlock: restrict_self: ") + std::strerror(errno);
    ok = false;
  }
  ::close(fd);
  return ok ? abi : 0;
}

}  // namespace execmcp::plugins::supervision::landlock
