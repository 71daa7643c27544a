// See tar_archive.hpp. Layout per POSIX.1-1988 ustar: a 512-byte header, the data padded to 512
// bytes, and two zero blocks at the end.
#include "docker_common/engine/tar_archive.hpp"

#include <cstdio>
#include <cstring>
#include <optional>
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

// A NUL-terminated (or full-width) text field.
std::string_view text_field(std::string_view header, std::size_t at, std::size_t width) {
  const auto field = header.substr(at, width);
  return field.substr(0, field.find('\0'));
}

// An octal number field (spaces and NULs around it allowed); nullopt when it is not one (the
// base-256 form of sizes past 8 GiB included: no member here is that large).
std::optional<unsigned long long> octal_field(std::string_view header, std::size_t at,
                                              std::size_t width) {
  auto field = header.substr(at, width);
  while (!field.empty() && (field.front() == ' ' || field.front() == '\0')) field.remove_prefix(1);
  while (!field.empty() && (field.back() == ' ' || field.back() == '\0')) field.remove_suffix(1);
  if (field.empty() || field.size() > 21) return std::nullopt;
  unsigned long long value = 0;
  for (char c : field) {
    if (c < '0' || c > '7') return std::nullopt;
    value = value * 8 + static_cast<unsigned>(c - '0');
  }
  return value;
}

bool checksum_matches(std::string_view header) {
  const auto stored = octal_field(header, 148, 8);
  if (!stored) return false;
  unsigned long long sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i)
    sum += (i >= 148 && i < 156) ? static_cast<unsigned char>(' ')
                                 : static_cast<unsigned char>(header[i]);
  return sum == *stored;
}

// The records of a PAX extended header ("<len> <key>=<value>\n" each) that matter here.
struct PaxRecords {
  std::optional<std::string> path, linkpath;
  std::optional<unsigned long long> size;
};

std::string parse_pax(std::string_view data, PaxRecords& out) {
  while (!data.empty()) {
    const auto space = data.find(' ');
    if (space == std::string_view::npos || space == 0 || space > 20)
      return "a PAX record without its length";
    std::size_t length = 0;
    for (char c : data.substr(0, space)) {
      if (c < '0' || c > '9') return "a PAX record with a bad length";
      length = length * 10 + static_cast<std::size_t>(c - '0');
    }
    if (length <= space + 1 || length > data.size() || data[length - 1] != '\n')
      return "a PAX record cut short";
    const auto record = data.substr(space + 1, length - space - 2);
    data.remove_prefix(length);
    const auto eq = record.find('=');
    if (eq == std::string_view::npos) return "a PAX record without '='";
    const auto key = record.substr(0, eq);
    const auto value = record.substr(eq + 1);
    if (key == "path") out.path = std::string(value);
    if (key == "linkpath") out.linkpath = std::string(value);
    if (key == "size") {
      unsigned long long size = 0;
      if (value.empty() || value.size() > 19) return "a PAX size that is not a number";
      for (char c : value) {
        if (c < '0' || c > '9') return "a PAX size that is not a number";
        size = size * 10 + static_cast<unsigned>(c - '0');
      }
      out.size = size;
    }
  }
  return {};
}

}  // namespace

std::string read_tar_entry(std::string_view tar, TarEntry& out) {
  out = TarEntry{};
  PaxRecords pax;
  std::optional<std::string> long_name, long_link;
  std::size_t at = 0;
  while (at + kBlock <= tar.size()) {
    const auto header = tar.substr(at, kBlock);
    if (header.find_first_not_of('\0') == std::string_view::npos) break;  // the end blocks
    if (!checksum_matches(header))
      return "not a tar archive (a header's checksum does not add up at byte " +
             std::to_string(at) + ")";
    auto size = octal_field(header, 124, 12);
    if (!size) return "a tar header with a bad size at byte " + std::to_string(at);
    const char type = header[156];
    if (pax.size && type != 'x' && type != 'g') size = pax.size;
    const std::size_t data_at = at + kBlock;
    if (*size > tar.size() - data_at) return "the tar archive is cut short";
    const auto data = tar.substr(data_at, *size);
    at = data_at + (*size + kBlock - 1) / kBlock * kBlock;
    if (type == 'x') {
      if (auto err = parse_pax(data, pax); !err.empty()) return "a bad tar archive: " + err;
      continue;
    }
    if (type == 'g') continue;         // global PAX records: nothing here needs them
    if (type == 'L' || type == 'K') {  // GNU long name or link name, NUL-terminated
      auto& field = type == 'L' ? long_name : long_link;
      field = std::string(data.substr(0, data.find('\0')));
      continue;
    }
    std::string name;
    if (pax.path) {
      name = *pax.path;
    } else if (long_name) {
      name = *long_name;
    } else {
      const auto prefix = text_field(header, 345, 155);
      name = std::string(prefix.empty() ? "" : std::string(prefix) + "/") +
             std::string(text_field(header, 0, 100));
    }
    std::string link = pax.linkpath ? *pax.linkpath
                       : long_link  ? *long_link
                                    : std::string(text_field(header, 157, 100));
    pax = PaxRecords{};
    long_name.reset();
    long_link.reset();
    if (type == '5') continue;  // a directory
    if (type == '0' || type == '\0' || type == '7') {
      out.type = TarEntry::Type::kFile;
      out.name = std::move(name);
      out.data = std::string(data);
      return {};
    }
    if (type == '2') {
      out.type = TarEntry::Type::kSymlink;
      out.name = std::move(name);
      out.link_target = std::move(link);
      return {};
    }
    return "the tar archive holds '" + name + "' as neither a regular file nor a symlink (type '" +
           std::string(1, type) + "')";
  }
  return "the tar archive holds no file";
}

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
