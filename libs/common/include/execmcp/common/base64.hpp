// Base64 (RFC 4648), the one codec of execmcp: the standard alphabet and the URL-safe one.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace execmcp::common {

enum class Base64Alphabet { Standard, Url };  // "+/" or "-_" as the last two digits

// `bytes` in base64 with '=' padding (Standard) or without (Url, as JWTs write it).
[[nodiscard]] std::string base64_encode(std::string_view bytes,
                                        Base64Alphabet alphabet = Base64Alphabet::Standard);

// The bytes of `text`; nullopt on a character outside the alphabet or a length no encoding has.
// Trailing '=' padding is optional; a '=' anywhere else is an error.
[[nodiscard]] std::optional<std::string> base64_decode(
    std::string_view text, Base64Alphabet alphabet = Base64Alphabet::Standard);

}  // namespace execmcp::common
