// Strict reading of a tools/call `arguments` object: types checked, unknown names refused.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace execmcp::host::tools {

// Collects the first problem instead of throwing; callers check error() once at the end.
class ToolArguments {
 public:
  // `known` lists every argument the tool accepts; any other name is an error.
  ToolArguments(const nlohmann::json& arguments, std::initializer_list<std::string_view> known);

  std::string required_string(std::string_view name);
  std::optional<std::string> optional_string(std::string_view name);
  // Strings that name a file or directory: a NUL byte (which the C library would silently cut the
  // path at) is refused.
  std::string required_path(std::string_view name);
  std::optional<std::string> optional_path(std::string_view name);
  std::optional<double> optional_number(std::string_view name);
  std::optional<std::int64_t> optional_integer(std::string_view name);

  // Records a problem found by the tool itself (e.g. a value out of range).
  void fail(std::string message);
  [[nodiscard]] const std::optional<std::string>& error() const { return error_; }

 private:
  const nlohmann::json* find(std::string_view name);

  const nlohmann::json& arguments_;
  std::optional<std::string> error_;
};

}  // namespace execmcp::host::tools
