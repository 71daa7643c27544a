// libFuzzer target: the env-file parser of the Docker credentials. Whatever the bytes, a result is
// either variables with valid names and carriable values, or an error naming the file and a line
// and never a value; and what it returns reads back the same when written out again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "docker_common/settings/env_file.hpp"

namespace dc = execmcp::plugins::docker_common;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto parsed = dc::parse_env_file(text, "f.env");
  if (!parsed.error.empty()) {
    if (!parsed.vars.empty() || !parsed.error.starts_with("f.env:")) std::abort();
    // Bounded whatever the line: at most a cut name is quoted.
    if (parsed.error.size() > 200) std::abort();
    return 0;
  }
  std::string again;
  for (const auto& [name, value] : parsed.vars) {
    if (!dc::is_env_name(name)) std::abort();
    if (value.find('\0') != std::string::npos || value.find('\n') != std::string::npos)
      std::abort();
    // Quoted, so surrounding spaces and quotes of the value survive: one pair comes off again.
    again += "export " + name + "=\"" + value + "\"\n";
  }
  const auto reread = dc::parse_env_file(again, "f.env");
  if (!reread.error.empty() || reread.vars != parsed.vars) std::abort();
  return 0;
}
