// Building and parsing the sandboxed Python command behind read_docstring (exposed for tests).
#pragma once

#include <string>
#include <string_view>

#include "execmcp/sdk/types.hpp"

#include "execmcp/common/shell_quote.hpp"

namespace execmcp::host::tools {

// Quotes one word for POSIX sh, so it reaches the program as exactly one argv entry.
using common::shell_quote;

// `python -I -c SCRIPT tools_dir module function`, every part quoted.
[[nodiscard]] std::string build_read_docstring_command(std::string_view python,
                                                       std::string_view tools_dir,
                                                       std::string_view module,
                                                       std::string_view function);

struct DocstringLookup {
  std::string docstring;  // empty when the function has none
  std::string error;      // non-empty when the module or function was not found
};

[[nodiscard]] DocstringLookup parse_read_docstring_output(const sdk::ExecResult& result);

}  // namespace execmcp::host::tools
