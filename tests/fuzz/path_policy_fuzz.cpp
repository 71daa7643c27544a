// libFuzzer target: resolving an agent's requested path against its grants, in a small real tree
// with hostile symlinks (out of the workspace, into a read-only grant, loops, absolute). Whatever
// the request, an accepted path must lie inside a grant that allows the access, with no symlink
// left on its way that leads elsewhere.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <stdlib.h>
#include <unistd.h>

#include "execmcp/sdk/path_policy.hpp"

namespace fs = std::filesystem;
using execmcp::sdk::Access;
using execmcp::sdk::PathGrant;
using execmcp::sdk::PathPolicy;

namespace {

struct Tree {
  fs::path root, workspace, context, outside;
  PathPolicy* policy = nullptr;
};

Tree make_tree() {
  char pattern[] = "/tmp/execmcp-fuzz-paths-XXXXXX";
  Tree t;
  t.root = fs::path(::mkdtemp(pattern));
  t.workspace = t.root / "ws";
  t.context = t.root / "ctx";
  t.outside = t.root / "outside";
  for (const auto& dir : {t.workspace / "sub" / "deep", t.context / "docs", t.outside})
    fs::create_directories(dir);
  std::error_code ec;
  fs::create_directory_symlink("../outside", t.workspace / "out", ec);
  fs::create_directory_symlink("sub", t.workspace / "in", ec);
  fs::create_directory_symlink("../ctx", t.workspace / "ctxlink", ec);
  fs::create_symlink("loop", t.workspace / "loop", ec);
  fs::create_directory_symlink("/", t.workspace / "root", ec);
  fs::create_symlink(t.outside / "secret", t.workspace / "sub" / "secretlink", ec);
  std::vector<PathGrant> grants;
  PathGrant ws;
  ws.path = t.workspace.string();
  ws.writable = true;
  PathGrant ctx;
  ctx.path = t.context.string();
  ctx.writable = false;
  grants = {ws, ctx};
  t.policy = new PathPolicy(t.workspace.string(), grants);
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Tree tree = make_tree();
  if (size < 1) return 0;
  const Access access = (data[0] & 1) ? Access::Write : Access::Read;
  const std::string_view requested(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto result = tree.policy->resolve(requested, access);
  if (result.path.empty() == result.error.empty()) std::abort();  // exactly one of the two
  if (result.path.empty()) return 0;
  const fs::path accepted(result.path);
  const bool in_workspace = execmcp::sdk::detail::is_within(accepted, tree.workspace);
  const bool in_context = execmcp::sdk::detail::is_within(accepted, tree.context);
  if (!in_workspace && !in_context) std::abort();
  if (access == Access::Write && !in_workspace) std::abort();
  if (!fully_resolved(accepted)) std::abort();
  // A NUL byte cut the request short: the path used would not be the path asked for.
  if (requested.find('\0') != std::string_view::npos) std::abort();
  return 0;
}
