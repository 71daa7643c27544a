// libFuzzer target: the tar reader the Docker backends read an engine's archive answer with
// (Engine::copy_from, the trust files). Whatever the bytes, it reads an entry or says why not,
// never past the archive's end (ASan), and an entry it reads holds no more bytes than the archive;
// and what single_file_tar() writes reads back as it was written.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "docker_common/engine/tar_archive.hpp"

namespace dc = execmcp::plugins::docker_common;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  dc::TarEntry entry;
  const auto why = dc::read_tar_entry(bytes, entry);
  if (why.empty()) {
    if (entry.data.size() > bytes.size() || entry.link_target.size() > bytes.size()) std::abort();
  } else if (why.size() > 512) {
    std::abort();  // a sentence, not the archive
  }
  // The writer's archives read back whole.
  const std::string name = "f" + std::to_string(size % 97);
  const auto tar = dc::single_file_tar(name, bytes, 0444);
  dc::TarEntry back;
  if (!dc::read_tar_entry(tar, back).empty() || back.type != dc::TarEntry::Type::kFile ||
      back.data != bytes || back.name.find(name) == std::string::npos)
    std::abort();
  return 0;
}
