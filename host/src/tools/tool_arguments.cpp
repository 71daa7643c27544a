// Reading tools/call arguments (see tool_arguments.hpp).
#include "tools/tool_arguments.hpp"

#include <cmath>
#include <limits>

#include "common/utf8.hpp"

namespace execmcp::host::tools {

namespace {

constexpr std::size_t kNamesShown = 8;
constexpr std::size_t kNameBytesShown = 64;

std::string shown_name(const std::string& name) {
  return sanitize_utf8(name.size() > kNameBytesShown ? name.substr(0, kNameBytesShown) + "..."
                                                     : name);
}

}  // namespace

UndeclaredArguments set_aside_undeclared(const nlohmann::json& input_schema,
                                         const nlohmann::json& arguments) {
  UndeclaredArguments out;
  const auto properties = input_schema.find("properties");
  const auto additional = input_schema.find("additionalProperties");
  // Only a schema that lists its arguments and admits no others says what is undeclared.
  const bool closed = properties != input_schema.end() && properties->is_object() &&
                      additional != input_schema.end() && *additional == false;
  if (!arguments.is_object() || !closed) {
    out.kept = arguments;  // the tool reads it all (and says what is wrong with it)
    return out;
  }
  for (const auto& [key, value] : arguments.items()) {
    if (properties->contains(key)) {
      out.kept[key] = value;
    } else {
      out.ignored.push_back(key);
    }
  }
  return out;
}

std::string ignored_arguments_notice(const std::string& tool, const nlohmann::json& input_schema,
                                     const std::vector<std::string>& ignored) {
  std::string names;
  for (std::size_t i = 0; i < ignored.size() && i < kNamesShown; ++i) {
    names += (i == 0 ? "'" : ", '") + shown_name(ignored[i]) + "'";
  }
  if (ignored.size() > kNamesShown)
    names += " and " + std::to_string(ignored.size() - kNamesShown) + " more";
  std::string takes;
  if (const auto properties = input_schema.find("properties");
      properties != input_schema.end() && properties->is_object()) {
    for (const auto& [key, value] : properties->items()) takes += (takes.empty() ? "" : ", ") + key;
  }
  return "Notice: ignored the argument" + std::string(ignored.size() == 1 ? " " : "s ") + names +
         ", which " + tool + " does not take (it takes: " + (takes.empty() ? "none" : takes) + ").";
}

ToolArguments::ToolArguments(const nlohmann::json& arguments,
                             std::initializer_list<std::string_view> known)
    : arguments_(arguments) {
  if (!arguments_.is_object()) {
    fail("'arguments' must be an object");
    return;
  }
  for (const auto& [key, value] : arguments_.items()) {
    bool found = false;
    std::string list;
    for (std::string_view name : known) {
      found = found || key == name;
      if (!list.empty()) list += ", ";
      list += name;
    }
    if (!found) {
      fail("unknown argument '" + key + "' (known: " + list + ")");
      return;
    }
  }
}

void ToolArguments::fail(std::string message) {
  if (!error_) error_ = std::move(message);
}

const nlohmann::json* ToolArguments::find(std::string_view name) {
  if (error_ || !arguments_.is_object()) return nullptr;
  const auto it = arguments_.find(std::string(name));
  if (it == arguments_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string ToolArguments::required_string(std::string_view name) {
  const nlohmann::json* value = find(name);
  if (value == nullptr) {
    fail("missing required argument '" + std::string(name) + "' (a string)");
    return {};
  }
  if (!value->is_string()) {
    fail("argument '" + std::string(name) + "' must be a string, got " + value->type_name());
    return {};
  }
  return value->get<std::string>();
}

std::optional<std::string> ToolArguments::optional_string(std::string_view name) {
  const nlohmann::json* value = find(name);
  if (value == nullptr) return std::nullopt;
  if (!value->is_string()) {
    fail("argument '" + std::string(name) + "' must be a string, got " + value->type_name());
    return std::nullopt;
  }
  return value->get<std::string>();
}

std::string ToolArguments::required_path(std::string_view name) {
  std::string value = required_string(name);
  if (value.find('\0') != std::string::npos) {
    fail("argument '" + std::string(name) +
         "' contains a NUL byte (\\u0000); a path cannot contain one");
    return {};
  }
  return value;
}

std::optional<std::string> ToolArguments::optional_path(std::string_view name) {
  auto value = optional_string(name);
  if (value && value->find('\0') != std::string::npos) {
    fail("argument '" + std::string(name) +
         "' contains a NUL byte (\\u0000); a path cannot contain one");
    return std::nullopt;
  }
  return value;
}

std::optional<double> ToolArguments::optional_number(std::string_view name) {
  const nlohmann::json* value = find(name);
  if (value == nullptr) return std::nullopt;
  if (!value->is_number()) {
    fail("argument '" + std::string(name) + "' must be a number, got " + value->type_name());
    return std::nullopt;
  }
  return value->get<double>();
}

std::optional<std::int64_t> ToolArguments::optional_integer(std::string_view name) {
  const nlohmann::json* value = find(name);
  if (value == nullptr) return std::nullopt;
  if (value->is_number_integer()) {
    if (value->is_number_unsigned() &&
        value->get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail("argument '" + std::string(name) + "' is too large");
      return std::nullopt;
    }
    return value->get<std::int64_t>();
  }
  // Some clients send every number as a float; accept 10.0 but not 10.5.
  if (value->is_number_float()) {
    const double d = value->get<double>();
    if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9.0e15) {
      return static_cast<std::int64_t>(d);
    }
  }
  fail("argument '" + std::string(name) + "' must be an integer, got " +
       (value->is_number() ? std::string("a fractional number") : value->type_name()));
  return std::nullopt;
}

}  // namespace execmcp::host::tools
