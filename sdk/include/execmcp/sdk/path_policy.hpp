// Resolving a requested path against an agent's cwd and path grants, symlinks included.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
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

// Resolves `requested` (absolute, or relative to `cwd`) with every symlink followed, and checks
// that the result lies inside a grant that permits `access`. The target itself need not exist.
inline ResolvedPath resolve_inside(std::string_view requested, const std::string& cwd,
                                   const std::vector<PathGrant>& grants, Access access) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = requested.empty() ? fs::path(cwd) : fs::path(std::string(requested));
  if (p.is_relative()) p = fs::path(cwd) / p;
  fs::path resolved = fs::weakly_canonical(p, ec);
  if (ec) return {{}, "cannot resolve path '" + p.string() + "': " + ec.message()};
  bool inside_any = false;
  for (const auto& grant : grants) {
    fs::path root = fs::weakly_canonical(grant.path, ec);
    if (ec) continue;
    if (!detail::is_within(resolved, root)) continue;
    inside_any = true;
    if (access == Access::Read || grant.writable) return {resolved.string(), {}};
  }
  if (inside_any)
    return {{},
            "path '" + std::string(requested) + "' resolves to '" + resolved.string() +
                "', which is read-only for this agent"};
  std::string allowed;
  for (const auto& grant : grants) allowed += (allowed.empty() ? "" : ", ") + grant.path;
  return {{},
          "path '" + std::string(requested) + "' resolves to '" + resolved.string() +
              "', outside this agent's allowed paths (" + allowed + ")"};
}

}  // namespace execmcp::sdk
