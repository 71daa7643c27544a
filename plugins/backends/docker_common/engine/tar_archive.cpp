// See tar_archive.hpp. Layout per POSIX.1-1988 ustar: a 512-byte header, the data padded to 512
// bytes, and two zero blocks at the end.
#include "docker_common/engine/tar_archive.hpp"

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace execmcp::plugins::docker_common {

namespace {

constexpr std::size_t kBlock = 512;

// Writes `value` as zero-padded octal into a field of `width` bytes (the last one NUL).
void put_octal(char* field, std::size_t width, unsigned long long value) {
  std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1), value);
}

// One header block: a member owned by root (uid and gid 0).
std::string header_block(std::string_view name, std::size_t size, unsigned mode, char type,
                         std::string_view prefix = {}) {
  char header[kBlock] = {};
  // An empty view may have a null data(), which memcpy must never get, even for 0 bytes.
  if (!name.empty()) std::memcpy(header, name.data(), name.size());              // name[100]
  if (!prefix.empty()) std::memcpy(header + 345, prefix.data(), prefix.size());  // prefix[155]
  put_octal(header + 100, 8, mode & 07777);                                      // mode
  put_octal(header + 108, 8, 0);                                                 // uid
  put_octal(header + 116, 8, 0);                                                 // gid
  put_octal(header + 124, 12, size);                                             // size
  put_octal(header + 136, 12, 0);                                                // mtime
  header[156] = type;                                                            // typeflag
  std::memcpy(header + 257, "ustar", 6);                                         // magic "ustar\0"
  std::memcpy(header + 263, "00", 2);                                            // version
  std::memcpy(header + 265, "root", 4);                                          // uname
  std::memcpy(header + 297, "root", 4);                                          // gname
  // The checksum is computed with its own field as eight spaces.
  std::memset(header + 148, ' ', 8);
  unsigned long sum = 0;
  for (unsigned char c : header) sum += c;
  std::snprintf(header + 148, 8, "%06lo", sum);
  header[155] = ' ';
  return std::string(header, kBlock);
}

}  // namespace

std::string single_file_tar(std::string_view name, std::string_view data, unsigned mode) {
  if (name.empty() || name.size() > 100 || name.find('/') != std::string_view::npos ||
      name == "." || name == "..")
    throw std::invalid_argument("a tar member needs a plain name of at most 100 bytes");
  std::string out = header_block("./", 0, 0755, '5');  // the directory it is unpacked into
  out += header_block(name, data.size(), mode, '0');
  out.append(data);
  out.append((kBlock - data.size() % kBlock) % kBlock, '\0');
  out.append(2 * kBlock, '\0');
  return out;
}

std::string tar_archive(const std::vector<TarMember>& members) {
  std::string out;
  for (const auto& m : members) {
    const bool directory = !m.path.empty() && m.path.back() == '/';
    std::string_view name = m.path, prefix;
    if (name.size() > 100) {
      // Split at a '/' so that the name part fits: prefix "/" name.
      const auto cut = name.find('/', name.size() - 101);
      if (cut == std::string_view::npos || cut > 155 || cut + 1 >= name.size())
        throw std::invalid_argument("the path '" + m.path + "' does not fit in a tar header");
      prefix = name.substr(0, cut);
      name = name.substr(cut + 1);
    }
    const std::string wrapped = "/" + m.path + "/";
    if (m.path.empty() || m.path.front() == '/' || wrapped.find("/../") != std::string::npos)
      throw std::invalid_argument("a tar member needs a relative path without '..'");
    out += header_block(name, directory ? 0 : m.data.size(), m.mode, directory ? '5' : '0', prefix);
    if (directory) continue;
    out.append(m.data);
    out.append((kBlock - m.data.size() % kBlock) % kBlock, '\0');
  }
  out.append(2 * kBlock, '\0');
  return out;
}

}  // namespace execmcp::plugins::docker_common
