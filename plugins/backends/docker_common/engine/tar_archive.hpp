// A tar archive (POSIX ustar) holding one regular file: what the Engine's archive endpoint takes to
// put a file into a container (PUT /containers/{id}/archive).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace execmcp::plugins::docker_common {

// The archive of one file named `name` (a plain name of at most 100 bytes, no '/'), owned by
// root, with permission bits `mode`, after an entry for the directory it is unpacked into (`./`,
// root's, 0755): unpacked as root, neither can be changed by the container's user. Throws
// std::invalid_argument on a bad name.
std::string single_file_tar(std::string_view name, std::string_view data, unsigned mode);

// One member of tar_archive(): a directory (path ending in '/') or a regular file, root's.
struct TarMember {
  std::string path;  // relative, e.g. ".execmcp-preinstall/0/x.whl" or ".execmcp-preinstall/"
  std::string_view data;
  unsigned mode = 0644;
};

// The archive of `members` in order; a path longer than 100 bytes is split into ustar's prefix
// (up to 155 bytes, at a '/') and name. Throws std::invalid_argument on a path that does not fit.
std::string tar_archive(const std::vector<TarMember>& members);

}  // namespace execmcp::plugins::docker_common
