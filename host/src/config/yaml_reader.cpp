// Typed, error-collecting access to a yaml-cpp tree: every problem names the key path and the line.
#include "config/yaml_reader.hpp"

#include <algorithm>
#include <cmath>

#include "execmcp/sdk/settings_check.hpp"

namespace execmcp::host::config_detail {

std::string join_key(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return std::string(path) + "." + std::string(key);
}

std::string index_key(std::string_view path, std::size_t index) {
  return std::string(path) + "[" + std::to_string(index) + "]";
}

SourceLocation YamlReader::location(const YAML::Node& node) const {
  int line = 0;
  if (node.IsDefined()) {
    const auto mark = node.Mark();
    if (mark.line >= 0) line = mark.line + 1;
  }
  return {file_, line};
}

void YamlReader::error(const YAML::Node& node, std::string_view path, std::string_view message) {
  int line = location(node).line;
  if (line == 0) line = last_line_;
  error_at(line, path, message);
}

void YamlReader::error_at(int line, std::string_view path, std::string_view message) {
  if (line > 0) last_line_ = line;
  std::string text = file_;
  if (line > 0) text += ":" + std::to_string(line);
  text += ": ";
  if (!path.empty()) text += std::string(path) + ": ";
  text += message;
  errors_.emplace_back(line, std::move(text));
}

std::vector<std::string> YamlReader::errors() const {
  auto sorted = errors_;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> texts;
  for (auto& [line, text] : sorted) texts.push_back(std::move(text));
  return texts;
}

std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  return "'" + node.Scalar() + "'";
}

bool YamlReader::expect_map(const YAML::Node& node, std::string_view path) {
  if (node.IsDefined() && node.IsMap()) return true;
  error(node, path, "expected a map, found " + describe(node));
  return false;
}

bool YamlReader::expect_list(const YAML::Node& node, std::string_view path) {
  if (node.IsDefined() && node.IsSequence()) return true;
  error(node, path, "expected a list, found " + describe(node));
  return false;
}

std::optional<std::string> YamlReader::get_string(const YAML::Node& node, std::string_view path) {
  if (node.IsDefined() && node.IsScalar()) return node.Scalar();
  error(node, path, "expected a string, found " + describe(node));
  return std::nullopt;
}

std::optional<double> YamlReader::get_number(const YAML::Node& node, std::string_view path) {
  if (node.IsDefined() && node.IsScalar() && node.Tag() != "!") {
    const std::string& text = node.Scalar();
    try {
      std::size_t used = 0;
      const double value = std::stod(text, &used);
      if (used == text.size() && std::isfinite(value)) return value;
    } catch (const std::exception&) {
    }
  }
  error(node, path, "expected a number, found " + describe(node));
  return std::nullopt;
}

std::optional<long long> YamlReader::get_integer(const YAML::Node& node, std::string_view path) {
  if (node.IsDefined() && node.IsScalar() && node.Tag() != "!") {
    const std::string& text = node.Scalar();
    try {
      std::size_t used = 0;
      const long long value = std::stoll(text, &used, 10);
      if (used == text.size()) return value;
    } catch (const std::exception&) {
    }
  }
  error(node, path, "expected an integer, found " + describe(node));
  return std::nullopt;
}

std::optional<bool> YamlReader::get_bool(const YAML::Node& node, std::string_view path) {
  if (node.IsDefined() && node.IsScalar() && node.Tag() != "!") {
    const std::string& text = node.Scalar();
    if (text == "true" || text == "True" || text == "TRUE") return true;
    if (text == "false" || text == "False" || text == "FALSE") return false;
  }
  error(node, path, "expected true or false, found " + describe(node));
  return std::nullopt;
}

std::optional<std::vector<std::string>> YamlReader::get_string_list(const YAML::Node& node,
                                                                    std::string_view path) {
  if (!expect_list(node, path)) return std::nullopt;
  std::vector<std::string> values;
  bool ok = true;
  for (std::size_t i = 0; i < node.size(); ++i) {
    auto value = get_string(node[i], index_key(path, i));
    if (value) {
      values.push_back(*value);
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return values;
}

void YamlReader::reject_unknown_keys(const YAML::Node& map, std::string_view path,
                                     std::initializer_list<std::string_view> known) {
  for (const auto& entry : map) {
    const std::string key = entry.first.Scalar();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    error(entry.first, join_key(path, key), "unknown key '" + key + "' (known: " + list + ")");
  }
}

void YamlReader::record_sources(const YAML::Node& node, const std::string& pointer,
                                const std::string& key_path,
                                std::map<std::string, SettingSource>& sources) const {
  if (!node.IsDefined()) return;
  sources[pointer] = {location(node), key_path};
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      record_sources(node[i], pointer + "/" + std::to_string(i), index_key(key_path, i), sources);
  } else if (node.IsMap()) {
    for (const auto& entry : node) {
      const std::string key = entry.first.Scalar();
      record_sources(entry.second, pointer + "/" + sdk::pointer_token(key), join_key(key_path, key),
                     sources);
    }
  }
}

nlohmann::json to_json(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return nullptr;
  if (node.IsSequence()) {
    auto array = nlohmann::json::array();
    for (const auto& item : node) array.push_back(to_json(item));
    return array;
  }
  if (node.IsMap()) {
    auto object = nlohmann::json::object();
    for (const auto& entry : node) object[entry.first.Scalar()] = to_json(entry.second);
    return object;
  }
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted: always a string
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (text == "~" || text == "null" || text == "Null" || text == "NULL") return nullptr;
  try {
    std::size_t used = 0;
    const long long integer = std::stoll(text, &used, 10);
    if (used == text.size()) return integer;
  } catch (const std::exception&) {
  }
  try {
    std::size_t used = 0;
    const double number = std::stod(text, &used);
    if (used == text.size() && std::isfinite(number)) return number;
  } catch (const std::exception&) {
  }
  return text;
}

}  // namespace execmcp::host::config_detail
