// Expansion of ${VAR}, ${VAR:-default} and a leading ~ in config paths, and resolving them.
#include "config/path_expansion.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace execmcp::host {

std::string expand_variables(std::string_view text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '$' || i + 1 >= text.size() || text[i + 1] != '{') {
      out += text[i++];
      continue;
    }
    const std::size_t close = text.find('}', i + 2);
    if (close == std::string_view::npos)
      throw std::invalid_argument("unterminated '${' in '" + std::string(text) + "'");
    const std::string_view inner = text.substr(i + 2, close - i - 2);
    const std::size_t dflt = inner.find(":-");
    const std::string name(inner.substr(0, dflt));
    if (name.empty())
      throw std::invalid_argument("empty variable name in '" + std::string(text) + "'");
    const char* value = std::getenv(name.c_str());
    if (value != nullptr && *value != '\0') {
      out += value;
    } else if (dflt != std::string_view::npos) {
      out += inner.substr(dflt + 2);
    } else {
      throw std::invalid_argument("environment variable '" + name + "' is not set (write ${" +
                                  name + ":-default} to give a default)");
    }
    i = close + 1;
  }
  return out;
}

std::string expand_path(std::string_view text, const std::string& base_dir) {
  namespace fs = std::filesystem;
  std::string expanded = expand_variables(text);
  if (expanded.empty()) throw std::invalid_argument("empty path");
  if (expanded == "~" || expanded.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    if (home == nullptr || *home == '\0')
      throw std::invalid_argument("cannot expand '~': HOME is not set");
    expanded = std::string(home) + expanded.substr(1);
  }
  fs::path path(expanded);
  if (path.is_relative()) path = fs::path(base_dir) / path;
  path = path.lexically_normal();
  std::string result = path.string();
  if (result.size() > 1 && result.back() == '/') result.pop_back();
  return result;
}

}  // namespace execmcp::host
