// Tar archives (POSIX ustar): what the Engine's archive endpoint takes to put files into a
// container (PUT /containers/{id}/archive), and reading the one file it gives for a path (GET).
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

// The member an archive of one path holds (Engine::copy_from()): a regular file or a symlink.
struct TarEntry {
  enum class Type { kFile, kSymlink };
  Type type = Type::kFile;
  std::string name;         // as the archive names it (PAX and GNU long names applied)
  std::string data;         // a file's bytes
  std::string link_target;  // a symlink's target, as written in the link
};

// Reads the first regular file or symlink of `tar` (directories before it are skipped; PAX
// `path`/`linkpath`/`size` records and GNU long names apply to the member after them) into
// `out`: "" or why not (a header whose checksum does not add up, a member cut short, no such
// member, a hard link or device instead). The archive is untrusted bytes: every field is bounded
// by the archive's own size.
std::string read_tar_entry(std::string_view tar, TarEntry& out);

}  // namespace execmcp::plugins::docker_common
