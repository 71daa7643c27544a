// Typed, error-collecting access to a yaml-cpp tree: every problem names the key path and the line.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "config/config.hpp"

namespace execmcp::host::config_detail {

std::string join_key(std::string_view path, std::string_view key);
std::string index_key(std::string_view path, std::size_t index);

class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}

  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] SourceLocation location(const YAML::Node& node) const;
  // Records "file:line: path: message"; a node without a position uses the last known line.
  void error(const YAML::Node& node, std::string_view path, std::string_view message);
  void error_at(int line, std::string_view path, std::string_view message);
  // Every problem so far, ordered by line (the order a person fixes them in).
  [[nodiscard]] std::vector<std::string> errors() const;

  // Each returns nullopt (and records an error) when the node has the wrong type.
  bool expect_map(const YAML::Node& node, std::string_view path);
  bool expect_list(const YAML::Node& node, std::string_view path);
  std::optional<std::string> get_string(const YAML::Node& node, std::string_view path);
  std::optional<double> get_number(const YAML::Node& node, std::string_view path);
  std::optional<long long> get_integer(const YAML::Node& node, std::string_view path);
  std::optional<bool> get_bool(const YAML::Node& node, std::string_view path);
  std::optional<std::vector<std::string>> get_string_list(const YAML::Node& node,
                                                          std::string_view path);
  // Records an error for every key of `map` that is not in `known`.
  void reject_unknown_keys(const YAML::Node& map, std::string_view path,
                           std::initializer_list<std::string_view> known);
  // Checks that each entry is a valid ECMAScript regex, as the patterns plugin will compile it.
  // Records where `node` and every value inside it were written: `pointer` (RFC 6901, into the
  // plugin settings it becomes) -> its line and `key_path`.
  void record_sources(const YAML::Node& node, const std::string& pointer,
                      const std::string& key_path,
                      std::map<std::string, SettingSource>& sources) const;

 private:
  std::string file_;
  int last_line_ = 0;
  std::vector<std::pair<int, std::string>> errors_;  // line, text
};

// How a node looks to a person: 'abc', a list, a map, nothing.
std::string describe(const YAML::Node& node);
// Plugin settings cross to plugins as JSON; unquoted scalars become bool/int/float/null when they
// read as such, like a YAML 1.2 core-schema parser would.
nlohmann::json to_json(const YAML::Node& node);

}  // namespace execmcp::host::config_detail
