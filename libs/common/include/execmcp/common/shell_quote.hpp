// Quoting a word for a POSIX shell, the one way every part of execmcp does it.
#pragma once

#include <string>
#include <string_view>

namespace execmcp::common {

// `word` in single quotes (each ' written as '\''), so a POSIX shell reads it back as exactly one
// word with the same bytes, whatever it holds.
[[nodiscard]] std::string shell_quote(std::string_view word);

}  // namespace execmcp::common
