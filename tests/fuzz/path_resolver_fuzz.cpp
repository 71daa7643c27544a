// libFuzzer target: the path resolvers an agent's requested path goes through, in a small real
// tree with hostile symlinks (out of the workspace, into a read-only grant, loops, absolute, a
// FIFO). Whatever the request: the SDK's PathPolicy accepts only a fully resolved path inside a
// grant that allows the access, and the local file tools' locate() + open_beneath() open nothing
// whose real path lies outside the grant they were resolved beneath.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "execmcp/sdk/path_policy.hpp"
#include "path_beneath.hpp"

namespace fs = std::filesystem;
namespace local = execmcp::plugins::local;
using execmcp::sdk::Access;
using execmcp::sdk::PathGrant;
using execmcp::sdk::PathPolicy;

namespace {

struct Tree {
  fs::path workspace, context;
  const PathPolicy* policy = nullptr;
  std::vector<local::GrantRoot> roots;
  std::vector<int> root_fds;
};

Tree make_tree() {
  char pattern[] = "/tmp/execmcp-fuzz-paths-XXXXXX";
  const fs::path root = fs::path(::mkdtemp(pattern));
  Tree t;
  t.workspace = root / "ws";
  t.context = root / "ctx";
  const fs::path outside = root / "outside";
  for (const auto& dir : {t.workspace / "sub" / "deep", t.context / "docs", outside})
    fs::create_directories(dir);
  std::error_code ec;
  fs::create_directory_symlink("../outside", t.workspace / "out", ec);
  fs::create_directory_symlink("sub", t.workspace / "in", ec);
  fs::create_directory_symlink("../ctx", t.workspace / "ctxlink", ec);
  fs::create_symlink("loop", t.workspace / "loop", ec);
  fs::create_directory_symlink("/", t.workspace / "root", ec);
  fs::create_symlink(outside / "secret", t.workspace / "sub" / "secretlink", ec);
  fs::create_symlink(t.workspace / "sub", t.workspace / "abs_inside", ec);
  ::mkfifo((t.workspace / "fifo").c_str(), 0600);
  for (const auto& file :
       {t.workspace / "sub" / "a.txt", t.context / "docs" / "b.txt", outside / "secret"})
    ::close(::open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));

  const std::vector<PathGrant> grants = {{t.workspace.string(), true}, {t.context.string(), false}};
  t.policy = new PathPolicy(t.workspace.string(), grants);
  for (const auto& grant : grants) {
    t.roots.push_back({grant.path, grant.path, grant.writable, {}});
    t.root_fds.push_back(local::open_grant_root(grant.path));
    if (t.root_fds.back() < 0) std::abort();
  }
  return t;
}

// True when no component of `p` is a symlink (the accepted path must be fully resolved).
bool fully_resolved(const fs::path& p) {
  fs::path walked;
  for (const auto& part : p) {
    walked /= part;
    if (part == "." || part == "..") return false;
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(walked, ec))) return false;
  }
  return true;
}

void check_sdk_policy(const Tree& tree, std::string_view requested, Access access) {
  const auto result = tree.policy->resolve(requested, access);
  if (result.path.empty() == result.error.empty()) std::abort();  // exactly one of the two
  if (result.path.empty()) return;
  if (requested.find('\0') != std::string_view::npos) std::abort();  // a NUL cut the path short
  const fs::path accepted(result.path);
  const bool in_workspace = execmcp::sdk::detail::is_within(accepted, tree.workspace);
  const bool in_context = execmcp::sdk::detail::is_within(accepted, tree.context);
  if (!in_workspace && !in_context) std::abort();
  if (access == Access::Write && !in_workspace) std::abort();
  if (!fully_resolved(accepted)) std::abort();
}

void check_local_resolver(const Tree& tree, std::string_view requested, Access access,
                          local::Resolver resolver) {
  const auto where = local::locate(requested, tree.workspace.string(), tree.roots, access);
  if (!where.error.empty()) return;
  if (where.grant >= tree.roots.size()) std::abort();
  if (access == Access::Write && !tree.roots[where.grant].writable) std::abort();
  const auto& root = tree.roots[where.grant];
  const int fd = local::open_beneath(tree.root_fds[where.grant], root.canonical, where.relative,
                                     O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, resolver);
  if (fd < 0) return;
  char buf[4096];
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(proc.c_str(), buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) std::abort();
  const fs::path opened(std::string(buf, static_cast<std::size_t>(n)));
  if (!execmcp::sdk::detail::is_within(opened, root.canonical)) std::abort();  // escaped
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Tree tree = make_tree();
  if (size < 1) return 0;
  const Access access = (data[0] & 1) ? Access::Write : Access::Read;
  const auto resolver = (data[0] & 2) ? local::Resolver::kWalk : local::Resolver::kKernel;
  const std::string_view requested(reinterpret_cast<const char*>(data) + 1, size - 1);
  check_sdk_policy(tree, requested, access);
  check_local_resolver(tree, requested, access, resolver);
  return 0;
}
