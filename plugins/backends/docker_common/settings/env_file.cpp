// Parses env files line by line; errors name the file, the line and at most the key.
#include "docker_common/settings/env_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace execmcp::plugins::docker_common {
namespace {

constexpr std::string_view kSpace = " \t\r\n\v\f";
// A bad name is quoted in the error, cut to this many bytes.
constexpr std::size_t kMaxQuotedName = 64;

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

}  // namespace

bool is_env_name(std::string_view name) {
  if (name.empty() || (name.front() >= '0' && name.front() <= '9')) return false;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

EnvFile parse_env_file(std::string_view text, const std::string& source) {
  EnvFile out;
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::size_t line_no = 0;
  auto fail = [&](const std::string& why) {
    out.vars.clear();
    out.error = source + ":" + std::to_string(line_no) + ": " + why;
    return out;
  };
  while (!text.empty()) {
    ++line_no;
    const auto end = text.find('\n');
    std::string_view line = trim(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (line.empty() || line.front() == '#') continue;
    if (line.starts_with("export") && line.size() > 6 && (line[6] == ' ' || line[6] == '\t'))
      line = trim(line.substr(7));
    const auto eq = line.find('=');
    // The line may be a value alone (a pasted token): never quote it.
    if (eq == std::string_view::npos) return fail("expected NAME=value (a line without '=')");
    const std::string_view name = trim(line.substr(0, eq));
    if (name.empty()) return fail("expected NAME=value (the name is empty)");
    std::string shown(name.substr(0, kMaxQuotedName));  // what an error may quote of the name
    if (name.size() > kMaxQuotedName) shown += "...";
    if (!is_env_name(name)) {
      return fail("'" + shown +
                  "' is not a variable name (letters, digits and '_', not starting with a digit)");
    }
    std::string_view value = trim(line.substr(eq + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    if (value.find('\0') != std::string_view::npos)
      return fail("the value of " + shown + " holds a NUL byte, which no environment can carry");
    out.vars[std::string(name)] = std::string(value);
  }
  return out;
}

EnvFile read_env_file(const std::string& path) {
  EnvFile out;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    out.error = "env_file '" + path + "' cannot be read: " + std::strerror(errno);
    return out;
  }
  if (!S_ISREG(st.st_mode)) {
    out.error = "env_file '" + path + "' is not a regular file";
    return out;
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    out.error = "env_file '" + path + "' cannot be read: " + std::strerror(errno);
    return out;
  }
  return parse_env_file(text.str(), path);
}

}  // namespace execmcp::plugins::docker_common
