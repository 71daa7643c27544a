// Expansion of ${VAR}, ${VAR:-default} and a leading ~ in config paths, and resolving them.
#pragma once

#include <string>
#include <string_view>

namespace execmcp::host {

// Replaces ${VAR} and ${VAR:-default}; throws std::invalid_argument for an unset variable without
// a default, or an unterminated ${.
std::string expand_variables(std::string_view text);

// expand_variables, then a leading "~" or "~/" becomes $HOME, then a relative result is taken
// relative to `base_dir`; the result is absolute and lexically normal. Throws
// std::invalid_argument.
std::string expand_path(std::string_view text, const std::string& base_dir);

}  // namespace execmcp::host
