// Reads KEY=VALUE env files (the `credentials.env_file` setting): the values are secrets, so no
// error ever quotes one.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace execmcp::plugins::docker_common {

struct EnvFile {
  std::map<std::string, std::string> vars;  // the last of duplicate names wins
  std::string error;  // "" or "<source>:<line>: why" (names a key at most, never a value)
};

// The rules, line by line: trim; skip empty lines and lines starting with '#'; drop an optional
// "export " prefix; split at the first '='; the trimmed name must match [A-Za-z_][A-Za-z0-9_]*;
// the trimmed value loses one pair of matching surrounding quotes (" or '). Nothing is expanded
// or unescaped, a '#' inside a value is kept, CRLF line ends and a UTF-8 BOM are accepted.
// `source` names the file in errors. On an error `vars` is empty.
EnvFile parse_env_file(std::string_view text, const std::string& source);

// parse_env_file() of the regular file at `path`; one that cannot be read is an error naming it.
EnvFile read_env_file(const std::string& path);

// True for [A-Za-z_][A-Za-z0-9_]*.
bool is_env_name(std::string_view name);

}  // namespace execmcp::plugins::docker_common
