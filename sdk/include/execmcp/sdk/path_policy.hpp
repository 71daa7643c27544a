// Resolving a requested path against an agent's cwd and path grants, symlinks included.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "execmcp/sdk/types.hpp"

namespace execmcp::sdk {

enum class Access { Read, Write };

struct ResolvedPath {
  std::string path;   // absolute, symlinks resolved; empty on error
  std::string error;  // non-empty when refused
};

namespace detail {
inline bool is_within(const std::filesystem::path& child, const std::filesystem::path& parent) {
  auto c = child.begin();
  for (auto p = parent.begin(); p != parent.end(); ++p, ++c) {
    if (p->empty()) continue;  // trailing separator
    if (c == child.end() || *c != *p) return false;
  }
  return true;
}
}  // namespace detail

// Resolves requested paths (absolute, or relative to `cwd`; ".." removes the component written
// before it) with every symlink followed, and checks that the result lies inside a grant that
// permits the access. The grants' own symlinks are resolved once, here: a grant that later
// becomes a symlink elsewhere refuses what it points to (fails closed) instead of following it.
// The target itself need not exist. Thread safe. A string, not a descriptor: a backend that opens
// the result on the host races a concurrent rename (the local backend opens beneath the grant's
// directory instead; see plugins/local/path_beneath.hpp).
class PathPolicy {
 public:
  PathPolicy(std::string cwd, const std::vector<PathGrant>& grants) : cwd_(std::move(cwd)) {
    std::error_code ec;
    for (const auto& grant : grants) {
      std::filesystem::path root = std::filesystem::weakly_canonical(grant.path, ec);
      if (ec) continue;  // unresolvable now: grants nothing
      roots_.push_back({root, grant});
    }
  }

  [[nodiscard]] ResolvedPath resolve(std::string_view requested, Access access) const {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (requested.find('\0') != std::string_view::npos)
      return {{}, "path contains a NUL byte, which no file name can hold"};
    fs::path p = requested.empty() ? fs::path(cwd_) : fs::path(std::string(requested));
    if (p.is_relative()) p = fs::path(cwd_) / p;
    // ".." is taken as written first (like `cd -L`): weakly_canonical resolves only the existing
    // prefix and normalises the rest by text, so "missing/../link" would keep `link` unresolved.
    fs::path resolved = fs::weakly_canonical(p.lexically_normal(), ec);
    if (ec) return {{}, "cannot resolve path '" + p.string() + "': " + ec.message()};
    bool inside_any = false;
    for (const auto& root : roots_) {
      if (!detail::is_within(resolved, root.canonical)) continue;
      inside_any = true;
      if (access == Access::Read || root.grant.writable) return {resolved.string(), {}};
    }
    if (inside_any)
      return {{},
              "path '" + std::string(requested) + "' resolves to '" + resolved.string() +
                  "', which is read-only for this agent"};
    std::string allowed;
    for (const auto& root : roots_) allowed += (allowed.empty() ? "" : ", ") + root.grant.path;
    return {{},
            "path '" + std::string(requested) + "' resolves to '" + resolved.string() +
                "', outside this agent's allowed paths (" + allowed + ")"};
  }

  [[nodiscard]] const std::string& cwd() const { return cwd_; }

 private:
  struct Root {
    std::filesystem::path canonical;
    PathGrant grant;
  };
  std::string cwd_;
  std::vector<Root> roots_;
};

// One-off form of PathPolicy::resolve (resolves the grants on every call).
inline ResolvedPath resolve_inside(std::string_view requested, const std::string& cwd,
                                   const std::vector<PathGrant>& grants, Access access) {
  return PathPolicy(cwd, grants).resolve(requested, access);
}

}  // namespace execmcp::sdk
