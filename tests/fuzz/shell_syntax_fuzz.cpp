// libFuzzer target: the shell splitter the filters judge commands with, on any bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "execmcp/plugins/shell_syntax/simple_commands.hpp"

namespace shell = execmcp::plugins::shell_syntax;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const shell::ParsedLine parsed = shell::parse_line(line);
  for (const auto& command : parsed.commands) {
    if (command.depth < 0) std::abort();
    (void)command.name();
    for (const auto& redirection : command.redirections) (void)redirection.writes();
  }
  const auto normal = shell::normalize_path(line);
  // Normalising is idempotent.
  if (shell::normalize_path(normal) != normal) std::abort();
  return 0;
}
