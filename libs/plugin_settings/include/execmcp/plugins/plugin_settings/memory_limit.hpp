// Parses Docker-style memory sizes ("2g", "512m", "1024k", "1073741824") into bytes: the Docker
// backends' `memory` and the local sandbox's `sandbox.memory`.
#pragma once

#include <cstdint>
#include <string_view>

namespace execmcp::plugins::plugin_settings {

inline constexpr const char* kMemoryLimitForms =
    "a byte count or a number with a suffix b, k, m or g (e.g. \"2g\", \"512m\", \"1024k\", "
    "\"1073741824\")";

// Returns the size in bytes. Throws std::invalid_argument (naming the accepted forms) for an empty,
// negative, fractional-without-suffix, unknown-suffix or overflowing value.
std::int64_t parse_memory_limit(std::string_view text);

}  // namespace execmcp::plugins::plugin_settings
