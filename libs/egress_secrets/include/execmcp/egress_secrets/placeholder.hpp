// The placeholder a sandbox holds instead of a secret's value.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace execmcp::egress_secrets {

// Fills a buffer with unpredictable bytes (the server passes OpenSSL's RAND_bytes; tests a seed).
using RandomBytes = std::function<void(unsigned char* out, std::size_t size)>;

// Why `value` cannot be held by the proxy, or nullopt when it can: empty, longer than 8 KiB, a
// CR, LF or NUL byte, or fewer than 16 ASCII letters and digits outside a known public prefix.
// The sentence never quotes the value.
[[nodiscard]] std::optional<std::string> placeholder_problem(std::string_view value);

// A placeholder for `value`: the same length; every ASCII letter or digit replaced by a random
// letter or digit (uniform, rejection sampled), every other byte kept, and a known public token
// prefix kept (ghp_, gho_, ghs_, ghu_, github_pat_, glpat-, xoxb-, xoxp-, sk-, npm_, pypi-, hf_).
// So every encoding the scrubber knows has equal length for value and placeholder. Never equal to
// the value. Precondition: !placeholder_problem(value).
[[nodiscard]] std::string make_placeholder(std::string_view value, const RandomBytes& random);

}  // namespace execmcp::egress_secrets
