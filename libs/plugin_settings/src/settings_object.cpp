// Turns the settings text a plugin receives into a JSON object, with one wording for every plugin.
#include "execmcp/plugins/plugin_settings/settings_object.hpp"

#include <stdexcept>
#include <string>

namespace execmcp::plugins::plugin_settings {

std::optional<nlohmann::json> parse_settings_object(std::string_view text,
                                                    std::string_view plugin) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return std::nullopt;
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string(plugin) + " settings are not valid JSON: " + e.what());
  }
  if (json.is_null()) return std::nullopt;
  if (!json.is_object())
    throw std::invalid_argument(std::string(plugin) +
                                " settings must be a mapping (a JSON object), got " +
                                json.type_name());
  return json;
}

}  // namespace execmcp::plugins::plugin_settings
