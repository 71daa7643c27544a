// Reading a tools/call `arguments` object: arguments the tool's schema does not declare are set
// aside with a notice (once, for every tool); the tool then reads the rest strictly.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace execmcp::host::tools {

// Clients add arguments of their own (Gemini CLI sends wait_for_previous with every call): an
// argument the tool's input schema does not declare (a schema with "properties" and
// "additionalProperties": false, as every built-in tool's) is dropped and named in a notice, not
// refused.
// A declared argument of the wrong type stays an error (ToolArguments).
struct UndeclaredArguments {
  nlohmann::json kept = nlohmann::json::object();  // the declared ones, for the tool
  std::vector<std::string> ignored;                // the names dropped, in order
};
[[nodiscard]] UndeclaredArguments set_aside_undeclared(const nlohmann::json& input_schema,
                                                       const nlohmann::json& arguments);
// "Notice: ignored the argument 'x', which <tool> does not take (it takes: a, b)." Bounded:
// names are cut and at most a few are listed.
[[nodiscard]] std::string ignored_arguments_notice(const std::string& tool,
                                                   const nlohmann::json& input_schema,
                                                   const std::vector<std::string>& ignored);

// Strict reading of the declared arguments: types checked, and (for a caller that did not set
// the undeclared ones aside) unknown names refused. Collects the first problem instead of
// throwing; callers check error() once at the end.
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
