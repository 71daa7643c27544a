// read_tar_entry() (engine/tar_archive.hpp): the member an archive of one path holds, as the
// engines' copy_from() gives it, read from untrusted bytes.
#include "docker_common/engine/tar_archive.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>

namespace execmcp::plugins::docker_common {
namespace {

// Sets the header at `at` to a symlink to `target` (type '2', linkname) and fixes its checksum.
void make_symlink(std::string& tar, std::size_t at, const std::string& target) {
  tar[at + 156] = '2';
  std::memset(&tar[at + 124], 0, 12);
  std::snprintf(&tar[at + 124], 12, "%011o", 0u);
  std::memcpy(&tar[at + 157], target.data(), target.size());
  std::memset(&tar[at + 148], ' ', 8);
  unsigned long sum = 0;
  for (std::size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(tar[at + i]);
  char field[8] = {};
  std::snprintf(field, sizeof field, "%06lo", sum);
  std::memcpy(&tar[at + 148], field, 7);
}

// "<len> key=value\n" with the length counting itself.
std::string pax_record(const std::string& key, const std::string& value) {
  const std::string body = " " + key + "=" + value + "\n";
  std::size_t length = body.size() + 1;
  while (std::to_string(length).size() + body.size() != length) ++length;
  return std::to_string(length) + body;
}

TEST(ReadTarEntry, ReadsTheFileAfterItsDirectory) {
  const std::string data(3000, 'x');
  const std::string tar = single_file_tar("ca-certificates.crt", data, 0644);
  TarEntry entry;
  ASSERT_EQ(read_tar_entry(tar, entry), "");
  EXPECT_EQ(entry.type, TarEntry::Type::kFile);
  EXPECT_EQ(entry.name, "ca-certificates.crt");
  EXPECT_EQ(entry.data, data);
}

TEST(ReadTarEntry, AnEmptyFileAndALongPathSplitIntoPrefixAndName) {
  const std::string path = std::string(120, 'd') + "/bundle.pem";
  const std::string tar = tar_archive({{path, "", 0644}});
  TarEntry entry;
  ASSERT_EQ(read_tar_entry(tar, entry), "");
  EXPECT_EQ(entry.name, path);
  EXPECT_EQ(entry.data, "");
}

TEST(ReadTarEntry, ASymlinkIsGivenAsItsTarget) {
  std::string tar = tar_archive({{"ca-certificates.crt", "", 0777}});
  make_symlink(tar, 0, "../../pki/tls/certs/ca-bundle.crt");
  TarEntry entry;
  ASSERT_EQ(read_tar_entry(tar, entry), "");
  EXPECT_EQ(entry.type, TarEntry::Type::kSymlink);
  EXPECT_EQ(entry.link_target, "../../pki/tls/certs/ca-bundle.crt");
}

TEST(ReadTarEntry, PaxRecordsNameTheNextMember) {
  const std::string long_name = std::string(150, 'n') + ".crt";
  const std::string records = pax_record("path", long_name) + pax_record("mtime", "1.5");
  std::string tar = tar_archive({{"PaxHeaders/x", records, 0644}, {"short", "abc", 0644}});
  // The first member becomes the extended header of the second.
  tar[156] = 'x';
  std::memset(&tar[148], ' ', 8);
  unsigned long sum = 0;
  for (std::size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(tar[i]);
  char field[8] = {};
  std::snprintf(field, sizeof field, "%06lo", sum);
  std::memcpy(&tar[148], field, 7);
  TarEntry entry;
  ASSERT_EQ(read_tar_entry(tar, entry), "");
  EXPECT_EQ(entry.name, long_name);
  EXPECT_EQ(entry.data, "abc");
}

TEST(ReadTarEntry, RefusesWhatIsNotOneFile) {
  TarEntry entry;
  EXPECT_EQ(read_tar_entry("", entry), "the tar archive holds no file");
  EXPECT_EQ(read_tar_entry(tar_archive({{"dir/", {}, 0755}}), entry),
            "the tar archive holds no file");
  std::string tar = single_file_tar("f", "abc", 0644);
  tar[512 + 10] = 'Z';  // in the file's name: the checksum no longer adds up
  EXPECT_NE(read_tar_entry(tar, entry).find("checksum"), std::string::npos);
  const std::string garbage(2048, 'g');
  EXPECT_NE(read_tar_entry(garbage, entry).find("not a tar archive"), std::string::npos);
}

// Every prefix of an archive is either read whole or refused, never read past its end.
TEST(ReadTarEntry, EveryCutOfAnArchiveIsSafe) {
  const std::string data(700, 'y');
  const std::string tar = single_file_tar("bundle", data, 0644);
  for (std::size_t cut = 0; cut <= tar.size(); ++cut) {
    TarEntry entry;
    const auto err = read_tar_entry(std::string_view(tar).substr(0, cut), entry);
    if (err.empty()) {
      EXPECT_EQ(entry.data, data) << cut;
      EXPECT_GE(cut, 512u + 512u + 700u) << cut;
    }
  }
}

// Damaged archives (bytes changed, headers' checksums fixed so the damage reaches the fields) are
// read or refused, never read past their end (ASan watches).
TEST(ReadTarEntry, DamagedArchivesAreReadOrRefused) {
  const std::string records = pax_record("path", "p") + pax_record("size", "3");
  const std::string base = tar_archive(
      {{"d/", {}, 0755}, {"PaxHeaders/x", records, 0644}, {"d/file", std::string(900, 'z'), 0644}});
  std::mt19937 random(30);
  for (int round = 0; round < 5000; ++round) {
    std::string tar = base;
    for (int n = 1 + static_cast<int>(random() % 4); n > 0; --n) {
      const std::size_t at = random() % tar.size();
      tar[at] = static_cast<char>(random() % 4 == 0 ? "0257xgLK "[random() % 9] : random());
    }
    for (std::size_t header = 0; header + 512 <= tar.size(); header += 512) {
      if (random() % 2 == 0) continue;
      std::memset(&tar[header + 148], ' ', 8);
      unsigned long sum = 0;
      for (std::size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(tar[header + i]);
      char field[8] = {};
      std::snprintf(field, sizeof field, "%06lo", sum & 0777777);
      std::memcpy(&tar[header + 148], field, 7);
    }
    TarEntry entry;
    const auto err = read_tar_entry(tar.substr(0, random() % (tar.size() + 1)), entry);
    if (err.empty()) {
      EXPECT_LE(entry.data.size(), tar.size());
    }
  }
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
