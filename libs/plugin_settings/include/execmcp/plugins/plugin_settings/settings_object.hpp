// Turns the settings text a plugin receives (BackendInit/FilterInit::settings_json) into an object.
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace execmcp::plugins::plugin_settings {

// Empty or blank text and `null` mean "no settings" (nullopt: every default applies). Anything
// that is not a JSON object throws std::invalid_argument naming the plugin, e.g.
// "local settings must be a mapping (a JSON object), got array".
std::optional<nlohmann::json> parse_settings_object(std::string_view text, std::string_view plugin);

}  // namespace execmcp::plugins::plugin_settings
