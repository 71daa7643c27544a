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
// The target itself need not exist. A write at or under a grant's protected path is refused, by
// whichever grant contains it (protection wins over another writable grant). Thread safe. A string,
// not a descriptor: a backend that opens the result on the host races a concurrent rename (the
// local backend opens beneath the grant's directory instead; see
// plugins/backends/local/path_beneath.hpp).
class PathPolicy {
 public:
  PathPolicy(std::string cwd, const std::vector<PathGrant>& grants) : cwd_(std::move(cwd)) {
    std::error_code ec;
    for (const auto& grant : grants) {
      std::filesystem::path root = std::filesystem::weakly_canonical(grant.path, ec);
      if (ec) continue;  // unresolvable now: grants nothing
      Root entry{root, grant, {}};
      for (const auto& protected_path : grant.protected_paths) {
        std::error_code protected_ec;
        std::filesystem::path real =
            std::filesystem::weakly_canonical(protected_path, protected_ec);
        // Unresolvable: keep it as written, so it still protects (fails closed).
        entry.protected_paths.push_back(
            protected_ec ? std::filesystem::path(protected_path).lexically_normal() : real);
      }
      roots_.push_back(std::move(entry));
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
    if (access == Access::Write) {
      for (std::size_t i = 0; i < roots_.size(); ++i) {
        if (!detail::is_within(resolved, roots_[i].canonical)) continue;
        for (const auto& protected_path : roots_[i].protected_paths) {
          if (!detail::is_within(resolved, protected_path)) continue;
          // The host grants the workspace first, then context_paths in config order.
          const std::string where =
              i == 0 ? std::string("the workspace's protected_paths")
                     : "context_paths[" + std::to_string(i - 1) + "].protected_paths";
          return {{},
                  "path '" + std::string(requested) + "' resolves to '" + resolved.string() +
                      "', which is protected (" + where + "): read-only for this agent"};
        }
      }
    }
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
    std::vector<std::filesystem::path> protected_paths;  // resolved once, like the grant
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
